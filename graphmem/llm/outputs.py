"""Pydantic schemas the LLM must fill (via with_structured_output), and their lenient readers.

Small local models sometimes return one bad item among good ones; `lenient` keeps the good items
and names the bad ones instead of failing the whole answer.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from graphmem.models import LinkType

_MAX_ITEMS = 12
_MAX_WORD = 60
_MAX_REASON = 120  # characters, in the JSON schema of a link's reason
_MAX_CONTEXT = 300  # characters, in the JSON schema of an evolved context
# Lone surrogates (a JSON "\ud800" escape decodes to one; the driver cannot encode it) and C0 controls.
_UNSAFE = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def strip_unsafe(text: str) -> str:
    """Model output made storable: no lone surrogates, no control characters except tab and newlines."""
    return _UNSAFE.sub("", text)


def clean_text(text: str) -> str:
    """Model output as one storable line."""
    return " ".join(strip_unsafe(text).split())


def _clean_words(values: Any) -> list[str]:
    if isinstance(values, str):
        values = [v for v in values.replace(";", ",").split(",")]
    if not isinstance(values, list):
        return []
    out: list[str] = []
    for v in values:
        if not isinstance(v, str):
            continue
        v = clean_text(v)[:_MAX_WORD]
        if v and v.lower() not in {o.lower() for o in out}:
            out.append(v)
    return out[:_MAX_ITEMS]


class NoteEnrichment(BaseModel):
    """A-MEM note construction: keywords, one-line context, tags."""

    keywords: list[str] = Field(
        description="3-7 key concepts of the note, most important first; no names of speakers, no dates"
    )
    context: str = Field(description="one sentence: topic, key points and purpose of the note")
    tags: list[str] = Field(description="3-6 broad categories: domain, format, type")

    @field_validator("keywords", "tags", mode="before")
    @classmethod
    def _words(cls, v: Any) -> list[str]:
        return _clean_words(v)

    @field_validator("context", mode="before")
    @classmethod
    def _context(cls, v: Any) -> str:
        if not isinstance(v, str):
            raise ValueError("context must be a string")
        return clean_text(v)[:500]

    def is_usable(self) -> bool:
        return bool(self.keywords) and bool(self.context)


class ProposedLink(BaseModel):
    # reason comes before type: a model filling the schema in order names the connection first, then
    # picks the type that fits it (small models otherwise pick a type, then justify it with any text)
    target_id: str = Field(description="id of one of the shown neighbour notes")
    # maxLength only in the schema (grammar-constrained servers such as llama.cpp enforce it, keeping
    # a small model from copying whole notes until the output limit cuts the reply); longer text from
    # other providers is cleaned and kept, not rejected.
    reason: str = Field(
        description="what connects the two notes, a short phrase in your own words",
        json_schema_extra={"maxLength": _MAX_REASON},
    )
    type: LinkType = Field(description="relation of the NEW note to the neighbour")
    strength: float = Field(0.5, ge=0.0, le=1.0, description="0..1, how strong the relation is")
    # A CONTRADICTS link must name the two statements that cannot both be true; the service checks
    # each against its note and keeps the link as RELATED_TO when they are missing or not found.
    new_statement: str | None = Field(
        None,
        description="only for CONTRADICTS: the NEW note's statement that conflicts, in its words",
        json_schema_extra={"maxLength": _MAX_REASON},
    )
    neighbour_statement: str | None = Field(
        None,
        description="only for CONTRADICTS: the neighbour's statement that conflicts, in its words",
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


class ProposedUpdate(BaseModel):
    note_id: str = Field(description="id of the neighbour note to update")
    context: str | None = Field(
        None,
        description="new one-sentence context for the neighbour, or null",
        json_schema_extra={"maxLength": _MAX_CONTEXT},
    )
    tags: list[str] | None = Field(None, description="new full tag list for the neighbour, or null")
    keywords: list[str] | None = Field(None, description="new full keyword list for the neighbour, or null")

    @field_validator("tags", "keywords", mode="before")
    @classmethod
    def _words(cls, v: Any) -> list[str] | None:
        return None if v is None else _clean_words(v)

    @field_validator("context", mode="after")
    @classmethod
    def _context(cls, v: str | None) -> str | None:
        return None if v is None else clean_text(v)


class EvolutionDecision(BaseModel):
    """A-MEM link generation + memory evolution, with real ids instead of list positions."""

    links: list[ProposedLink] = Field(default_factory=list, description="links from the new note to neighbours")
    neighbour_updates: list[ProposedUpdate] = Field(
        default_factory=list, description="neighbours whose context/tags/keywords should evolve"
    )

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


class Answer(BaseModel):
    answer: str = Field(description="the short answer")
