"""The link and evolution decision's prompts, beside the output schemas they ask for.

The joint path (A-MEM's own, hosted models) asks one structured question, ``EvolutionDecision``:
typed links and neighbour updates for a new note and its nearest neighbours. The pairwise path
(small local models) asks one yes/no question per candidate (``related_messages``, read as a
probability), a short reason per link and one context rewrite per linked neighbour.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import Field, ValidationError, field_validator

from graphmem.llm.outputs import LLMOutput, clean_text, clean_words
from graphmem.llm.prompts import DATA_RULE
from graphmem.models import LinkType, Note

_MAX_REASON = 120  # characters, in the JSON schema of a link's reason
_MAX_CONTEXT = 300  # characters, in the JSON schema of an evolved context

EVOLVE_SYSTEM = (
    "You maintain a Zettelkasten memory. A NEW note comes with its nearest NEIGHBOUR notes.\n"
    "links: neighbours the new note relates to (only shown ids; none is fine). type: "
    + "; ".join(f"{t.value} ({t.meaning})" for t in LinkType)
    + f"; {LinkType.RELATED_TO.value} if unsure. reason: a few words of your own naming what both notes "
    "are about (e.g. 'Anika's market stall').\n"
    "neighbour_updates: neighbours the new note tells something new about: a new context sentence, and "
    "tags or keywords to add (null: unchanged). None is fine.\n" + DATA_RULE
)

# The pairwise link decision (small local models): one yes/no question per candidate, answered in one
# token whose probability the service reads. The system text is the same for every call, so a server
# with prompt caching evaluates only the two notes. Said in 74 tokens (110 before, 6 December 2026): on
# the gold conversations the shorter text gave the same precision/recall curve over P(yes) thresholds
# (docs/evaluation.md), and the demo's cost fell from 911 to 821 tokens per note.
RELATED_SYSTEM = (
    "Two notes from a conversation are shown. Answer yes if both are about the same specific thing: the same "
    "event, plan, object, pet, job, project, place or activity. Answer no if they only share a broad theme "
    "or the speaker. " + DATA_RULE + " Answer yes or no."
)

LINK_REASON_SYSTEM = (
    "Two linked notes from a conversation are shown. Say in 3 to 8 words what links them: the specific thing "
    "both are about (for example: Lena's tomato seedlings; Omar's new job at Lumio). Use words from the notes. "
    + DATA_RULE
    + " Reply with the phrase only."
)

EVOLVE_ONE_SYSTEM = (
    "You keep the context line of a memory note up to date. An EARLIER note, its current context and a "
    "LATER note about the same thing are shown. Write the earlier note's new context: one sentence about the "
    "earlier note that may add what the later note tells about it. Stay about the earlier note; do not "
    "describe the later note on its own. " + DATA_RULE + " Reply with the sentence only."
)


def _decision_note(note: Note, *, neighbour: bool) -> str:
    """A note as the link/evolution decision needs it: its text and context, and (for a neighbour,
    whose lists an update extends) its keywords and tags; no time."""
    head = f"id: {note.id}\n" if neighbour else ""
    text = f"{head}<note>{note.content}</note>\ncontext: {note.context or '-'}"
    if neighbour:
        text += f"\nkeywords: {', '.join(note.keywords) or '-'}\ntags: {', '.join(note.tags) or '-'}"
    return text


def evolve_messages(note: Note, neighbours: Sequence[Note]) -> list[BaseMessage]:
    shown = "\n\n".join(_decision_note(n, neighbour=True) for n in neighbours)
    ids = ", ".join(n.id for n in neighbours)
    return [
        SystemMessage(EVOLVE_SYSTEM),
        HumanMessage(
            f"NEW note:\n{_decision_note(note, neighbour=False)}\n\nNEIGHBOUR notes:\n{shown}\n\n"
            f"Valid neighbour ids: {ids}"
        ),
    ]


def related_messages(earlier: Note, later: Note) -> list[BaseMessage]:
    """Are two notes about the same specific thing? (yes/no, one token)"""
    return [
        SystemMessage(RELATED_SYSTEM),
        HumanMessage(
            f"Note A: <note>{earlier.content}</note>\nNote B: <note>{later.content}</note>\nSame specific thing?"
        ),
    ]


def link_reason_messages(earlier: Note, later: Note) -> list[BaseMessage]:
    return [
        SystemMessage(LINK_REASON_SYSTEM),
        HumanMessage(f"Note A: <note>{earlier.content}</note>\nNote B: <note>{later.content}</note>\nWhat links them?"),
    ]


def evolve_one_messages(earlier: Note, later: Note) -> list[BaseMessage]:
    return [
        SystemMessage(EVOLVE_ONE_SYSTEM),
        HumanMessage(
            f"EARLIER note: <note>{earlier.content}</note>\nIts context: {earlier.context or '-'}\n"
            f"LATER note: <note>{later.content}</note>\nNew context of the earlier note:"
        ),
    ]


# --- the joint decision's output schema ---


class ProposedLink(LLMOutput):
    # reason comes before type: a model filling the schema in order names the connection first, then
    # picks the type that fits it (small models otherwise pick a type, then justify it with any text)
    target_id: str = Field(description="a shown neighbour id")
    # maxLength only in the schema (grammar-constrained servers such as llama.cpp enforce it, keeping
    # a small model from copying whole notes until the output limit cuts the reply); longer text from
    # other providers is cleaned and kept, not rejected.
    reason: str = Field(
        description="what both notes are about, a few words",
        json_schema_extra={"maxLength": _MAX_REASON},
    )
    type: LinkType = Field(description="relation of the new note to the neighbour")
    strength: float = Field(0.5, ge=0.0, le=1.0, description="0..1")
    # A CONTRADICTS link must name the two statements that cannot both be true; the service checks
    # each against its note and keeps the link as RELATED_TO when they are missing or not found.
    new_statement: str | None = Field(
        None,
        description="CONTRADICTS only: the new note's conflicting statement, quoted",
        json_schema_extra={"maxLength": _MAX_REASON},
    )
    neighbour_statement: str | None = Field(
        None,
        description="CONTRADICTS only: the neighbour's conflicting statement, quoted",
        json_schema_extra={"maxLength": _MAX_REASON},
    )

    @field_validator("strength", mode="before")
    @classmethod
    def _strength(cls, v: Any) -> Any:
        # A JSON-schema grammar (llama-server) does not bound numbers, and small models answer on
        # other scales (10, 85): clamp rather than lose the link.
        return min(max(v, 0.0), 1.0) if isinstance(v, int | float) and not isinstance(v, bool) else v

    @field_validator("reason", mode="after")
    @classmethod
    def _reason(cls, v: str) -> str:
        return clean_text(v)

    @field_validator("new_statement", "neighbour_statement", mode="after")
    @classmethod
    def _statement(cls, v: str | None) -> str | None:
        return clean_text(v) or None if v is not None else None


class ProposedUpdate(LLMOutput):
    note_id: str = Field(description="a shown neighbour id")
    context: str | None = Field(
        None,
        description="its new context sentence, or null",
        json_schema_extra={"maxLength": _MAX_CONTEXT},
    )
    # Additions only (the service never removes a neighbour's tags or keywords): the model names the
    # new words, not the whole list again.
    tags: list[str] | None = Field(None, description="tags to add, or null")
    keywords: list[str] | None = Field(None, description="keywords to add, or null")

    @field_validator("tags", "keywords", mode="before")
    @classmethod
    def _words(cls, v: Any) -> list[str] | None:
        return None if v is None else clean_words(v)

    @field_validator("context", mode="after")
    @classmethod
    def _context(cls, v: str | None) -> str | None:
        return None if v is None else clean_text(v)


class EvolutionDecision(LLMOutput):
    """A-MEM link generation + memory evolution, with real ids instead of list positions."""

    links: list[ProposedLink] = Field(default_factory=list)
    neighbour_updates: list[ProposedUpdate] = Field(default_factory=list)

    @classmethod
    def lenient(cls, data: Any) -> tuple[EvolutionDecision, list[str]]:
        """Keep every valid item; return the reasons the others were rejected."""
        rejected: list[str] = []
        links: list[ProposedLink] = []
        updates: list[ProposedUpdate] = []
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        for item in data.get("links") or []:
            try:
                links.append(ProposedLink.model_validate(item))
            except ValidationError as exc:
                rejected.append(f"link {str(item)[:80]}: {exc.errors()[0]['msg']}")
        for item in data.get("neighbour_updates") or []:
            try:
                updates.append(ProposedUpdate.model_validate(item))
            except ValidationError as exc:
                rejected.append(f"update {str(item)[:80]}: {exc.errors()[0]['msg']}")
        return cls(links=links, neighbour_updates=updates), rejected
