"""What the service answers: search hits, usage accounting, the results of an add and of an ask."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from graphmem.models.notes import HitSource, Link, LinkType, Note
from graphmem.models.timeline import Conflict, KnockOn, NoteTimeline, Supersession


class LinkedVia(BaseModel):
    """How a link-expanded hit was reached."""

    from_id: str
    type: LinkType
    reason: str = ""
    strength: float = 0.5


class SearchHit(BaseModel):
    note: Note
    score: float  # cosine for vector hits; cosine + full-text boost for hybrid; parent x strength for links
    found_by: list[HitSource]
    linked_via: list[LinkedVia] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    timeline: NoteTimeline | None = None  # issue 28: current or superseded, its dated history, its clashes


class Usage(BaseModel):
    """Tokens and time spent by one operation (summed over its LLM calls)."""

    llm_calls: int = 0
    input_tokens: int = 0
    # of input_tokens, those the model server reused from its prompt cache instead of processing
    # (OpenAI's and llama-server's `prompt_tokens_details.cached_tokens`; 0 when it does not say)
    cached_input_tokens: int = 0
    output_tokens: int = 0
    repairs: int = 0  # calls whose output had to be re-asked or repaired
    llm_seconds: float = 0.0
    embed_seconds: float = 0.0
    store_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Usage) -> None:
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class NeighbourChange(BaseModel):
    note_id: str
    before: dict[str, Any]
    after: dict[str, Any]

    def summary(self) -> str:
        """What the evolution changed, for people: the context before and after, the tags and
        keywords it added (an evolution by words changes the keywords only)."""
        parts = []
        if self.after.get("context") != self.before.get("context"):
            parts.append(f"context {self.before.get('context')!r} -> {self.after.get('context')!r}")
        for key in ("tags", "keywords"):
            had = {str(w).lower() for w in self.before.get(key) or []}
            added = [str(w) for w in self.after.get(key) or [] if str(w).lower() not in had]
            if added:
                parts.append(f"{key} + {', '.join(added)}")
        return "; ".join(parts) or "no change"


class AddResult(BaseModel):
    note: Note
    created: bool  # False when an idempotent add found the note already stored
    links: list[Link] = Field(default_factory=list)
    evolved: list[NeighbourChange] = Field(default_factory=list)
    rejected: list[str] = Field(default_factory=list)  # LLM proposals refused (bad id/type), why
    candidates: list[str] = Field(default_factory=list)  # ids of the neighbours the link decision was shown
    usage: Usage = Field(default_factory=Usage)
    superseded: list[Supersession] = Field(default_factory=list)  # issue 28: earlier notes this one replaced
    conflicts: list[Conflict] = Field(default_factory=list)  # clashes with no order in time
    knock_on: list[KnockOn] = Field(default_factory=list)  # notes linked to a superseded one, re-checked


class AskResult(BaseModel):
    question: str
    answer: str
    notes: list[SearchHit]
    context_tokens: int
    usage: Usage
