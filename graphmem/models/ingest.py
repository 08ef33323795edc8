"""Requests that describe notes and searches (``NoteInput``, ``SearchFilters``) and the agentic ingest's report."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphmem.models.notes import EnrichmentStatus, Link, Scope
from graphmem.models.results import NeighbourChange, Usage
from graphmem.models.timeline import Conflict, KnockOn, Supersession
from graphmem.models.validation import validate_content, validate_label

# --- search requests ------------------------------------------------------------------------------


class SearchFilters(BaseModel):
    """Optional filters of a search; None means "no filter". Validated once, here, for every interface.

    Values are user text too, so they are checked like note text; naive bounds are taken as UTC
    (event times are stored with a time zone, and a naive bound would match nothing).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tags_any: list[str] | None = Field(None, max_length=50, description="notes with any of these tags")
    category: str | None = None
    since: datetime | None = Field(None, description="event time at or after")
    until: datetime | None = Field(None, description="event time at or before")

    @field_validator("tags_any", mode="after")
    @classmethod
    def _tags(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [validate_content(t, 200, what="tag filter") for t in value]

    @field_validator("category", mode="after")
    @classmethod
    def _category(cls, value: str | None) -> str | None:
        return validate_label(value, 200, what="category filter")

    @field_validator("since", "until", mode="after")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return value if value is None or value.tzinfo is not None else value.replace(tzinfo=UTC)


class NoteInput(BaseModel):
    """One note to add in bulk (import, LoCoMo ingest, benchmarks)."""

    content: str
    note_id: str | None = None
    event_time: datetime | str | None = None
    category: str | None = None
    source_id: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    keywords: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    context: str = ""
    follows: str | None = None  # id of the previous turn (in this batch or already stored): a FOLLOWS link


class IngestStatus(StrEnum):
    """What an agentic bulk ingest did with one item."""

    ADDED = "added"  # stored now (enriched, or PENDING when the LLM failed: nothing is lost)
    EXISTING = "existing"  # its id was already stored in the scope (a resumed ingest): left as it is
    FAILED = "failed"  # refused or not written (see error); a rerun retries it
    SKIPPED = "skipped"  # not attempted: the batch stopped (store unavailable, cancelled); a rerun retries it


class IngestItem(BaseModel):
    """The outcome of one item of an agentic bulk ingest (``AsyncMemoryService.ingest``)."""

    index: int  # position in the caller's items
    scope: Scope
    note_id: str | None = None  # the note's id (given, or derived: see ``ingest``); None when invalid
    status: IngestStatus
    error: str | None = None
    enrichment: EnrichmentStatus | None = None
    links: list[Link] = Field(default_factory=list)
    evolved: list[NeighbourChange] = Field(default_factory=list)
    rejected: list[str] = Field(default_factory=list)  # LLM proposals refused, and rebase notes
    rebased: int = 0  # planned neighbour updates rebased onto an earlier note's evolution
    candidates: list[str] = Field(default_factory=list)  # ids the link/evolution step was offered
    # for audits of the order rule: how many of the batch's first items were settled (written or
    # failed) when the candidates were chosen; the later earlier ones were still in flight
    settled_before: int | None = None
    written_with: int | None = None  # notes written in the same statement and transaction as this one
    usage: Usage = Field(default_factory=Usage)
    superseded: list[Supersession] = Field(default_factory=list)  # issue 28, as in AddResult
    conflicts: list[Conflict] = Field(default_factory=list)
    knock_on: list[KnockOn] = Field(default_factory=list)


class IngestReport(BaseModel):
    """Every item's outcome, in the caller's order, and the totals."""

    items: list[IngestItem] = Field(default_factory=list)
    seconds: float = 0.0  # wall time of the whole ingest
    usage: Usage = Field(default_factory=Usage)  # summed over the items added
    warnings: list[str] = Field(default_factory=list)  # batch-level trouble a rerun repairs

    def count(self, status: IngestStatus) -> int:
        return sum(1 for x in self.items if x.status == status)

    @property
    def added(self) -> int:
        return self.count(IngestStatus.ADDED)

    @property
    def failed(self) -> list[IngestItem]:
        return [x for x in self.items if x.status in (IngestStatus.FAILED, IngestStatus.SKIPPED)]

    def summary(self) -> dict[str, Any]:
        """Counts by status, LLM-failure marks, and the rate: what the CLI and REST print."""
        added = [x for x in self.items if x.status == IngestStatus.ADDED]
        return {
            "items": len(self.items),
            **{s.value: self.count(s) for s in IngestStatus},
            "pending": sum(1 for x in added if x.enrichment == EnrichmentStatus.PENDING),
            "links": sum(len(x.links) for x in added),
            "evolved": sum(len(x.evolved) for x in added),
            "rejected": sum(len(x.rejected) for x in added),
            "rebased": sum(x.rebased for x in added),
            "seconds": round(self.seconds, 3),
            "notes_per_s": round(len(added) / self.seconds, 3) if self.seconds > 0 else None,
            "tokens": self.usage.total_tokens,
        }
