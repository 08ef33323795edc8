"""The steps of an add and what the service hands the note store (``ports.NoteStore``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphmem.models.notes import Link, Note
from graphmem.models.results import LinkedVia, Usage

# --- the steps of an add, and what the service hands the store ------------------------------------


@dataclass
class ConstructedNote:
    """A note after A-MEM's construction step (validated, enriched or marked, embedded); not stored yet."""

    note: Note
    embedding: list[float]
    usage: Usage = field(default_factory=lambda: Usage())
    rejected: list[str] = field(default_factory=list)  # enrichment items refused (reported in AddResult)


@dataclass(frozen=True)
class NeighbourEvolution:
    """A validated proposal to evolve one shown neighbour: its values before and the new ones."""

    before: Note
    context: str
    tags: list[str]
    keywords: list[str]

    def after(self) -> dict[str, Any]:
        return {"context": self.context, "tags": self.tags, "keywords": self.keywords}


@dataclass
class EvolutionPlan:
    """What the link/evolution step decided for one new note: links to write, neighbours to evolve,
    and the proposals refused, each with its reason (the LLM proposes, the service decides)."""

    links: list[Link] = field(default_factory=list)
    updates: list[NeighbourEvolution] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)  # ids of the neighbours the decision was shown


@dataclass
class NeighbourUpdate:
    """A validated evolution of one neighbour, ready to write: its new vector, or None when it keeps its
    search vector (the default: evolution changes what a note is read as, not where search finds it)."""

    note_id: str
    context: str
    tags: list[str]
    keywords: list[str]
    embedding: list[float] | None
    expected_version: int | None = None  # the neighbour's version the update was planned on (None: unchecked)


@dataclass
class AddWrite:
    """Everything one A-MEM add writes, in one transaction."""

    note: Note
    embedding: list[float]
    links: list[Link] = field(default_factory=list)
    updates: list[NeighbourUpdate] = field(default_factory=list)
    variant: str = "full"


@dataclass(frozen=True)
class AddOutcome:
    """What the store wrote for an AddWrite: nothing when the id was already there (idempotent add)."""

    created: bool
    links: list[Link] = field(default_factory=list)
    versions: dict[str, int] = field(default_factory=dict)  # neighbour id -> its new version


@dataclass
class LinkedNote:
    """A note reached by one hop along a typed link from a search hit."""

    from_id: str
    via: LinkedVia
    note: Note


@dataclass(frozen=True)
class TextMatch:
    """A full-text hit: its BM25 score and, when the search was given the query's vector, its cosine."""

    note: Note
    score: float
    cosine: float | None = None
