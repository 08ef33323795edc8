"""Memory that changes over time (issue 28): the words of supersession, conflicts and knock-on checks.

A later note that states a newer value of something an earlier note of the same scope states (the
same person's home, job, manager, instrument, diet, vehicle, flatmate...) **supersedes** it:
``(:Note)-[:SUPERSEDES {at, reason}]->(:Note)`` and the earlier note's ``valid_to``; nothing is
deleted and no note's content, context, tags or keywords change. Two such notes with no order in
time **conflict** (``CONFLICTS_WITH``). Neither relationship is an A-MEM link (``LinkType``): they
are the service's findings, kept apart from the links the LLM proposes.

A leaf module (pydantic only): ``models`` re-exports nothing from here; ``AddResult`` and
``SearchHit`` carry these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

SUPERSEDES = "SUPERSEDES"
CONFLICTS_WITH = "CONFLICTS_WITH"
DERIVED_FROM = "DERIVED_FROM"
TimeRelationType = Literal["SUPERSEDES", "CONFLICTS_WITH", "DERIVED_FROM"]


def as_utc(value: datetime) -> datetime:
    """A comparable instant: naive datetimes are taken as UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class TimeRelation(BaseModel):
    """One supersession, conflict or derivation between two notes of a scope, as export writes it
    (under the note it starts from) and import writes it back."""

    type: TimeRelationType
    target_id: str
    at: datetime | None = None
    reason: str | None = None
    p_yes: float | None = None
    created_at: datetime | None = None
    caused_by: str | None = None


class Supersession(BaseModel):
    """``newer_id`` supersedes ``older_id`` from ``at`` (the newer note's time: event time, else creation)."""

    newer_id: str
    older_id: str
    at: datetime
    reason: str = ""
    p_yes: float | None = Field(None, description="the model's P(yes) that the newer note replaces the older")


class Conflict(BaseModel):
    """Two notes that state clashing values with no order in time (the same time)."""

    note_id: str
    other_id: str
    at: datetime
    reason: str = ""
    p_yes: float | None = None


class KnockOn(BaseModel):
    """A note linked to a superseded note, re-checked against the superseding note (never changed)."""

    note_id: str  # the linked note that was re-checked
    superseded_id: str  # the note it is linked to, now superseded
    newer_id: str  # the note that superseded it
    p_yes: float  # P(yes) that the newer note makes this note outdated too
    outdated: bool  # p_yes at or above the threshold: reported as possibly outdated


class TimelineEntry(BaseModel):
    """A note in another note's history or conflicts, as a dated line needs it."""

    note_id: str
    content: str
    since: datetime | None = None  # its time (event time, else creation)
    since_text: str | None = None  # the caller's wording of its event time, if any
    until: datetime | None = None  # its valid_to (when it was superseded), if it was


class NoteTimeline(BaseModel):
    """Where a note stands in time: current or superseded, what it superseded, what it clashes with."""

    status: Literal["current", "superseded", "future"] = "current"
    valid_to: datetime | None = None
    superseded_by: list[str] = Field(default_factory=list, description="the notes that superseded it")
    history: list[TimelineEntry] = Field(default_factory=list, description="what it superseded, newest first")
    conflicts: list[TimelineEntry] = Field(default_factory=list)
    replaces_hit: str | None = Field(None, description="the superseded hit this current note stands in for")


class Synthesis(BaseModel):
    """A note consolidation proposes (or wrote): the dated history of one supersession chain, in the
    sources' own words, derived from every note of the chain (``DERIVED_FROM``)."""

    note_id: str
    content: str
    sources: list[str]  # the chain, newest first
    since: datetime  # the current note's time (the synthesis's event time)
    status: Literal["proposed", "written", "exists"] = "proposed"
    replaces: str | None = Field(None, description="an earlier synthesis of a shorter chain it supersedes")


class ConsolidationResult(BaseModel):
    """What ``consolidate`` proposed, and in a run that is not a dry run, wrote. Sources never change."""

    dry_run: bool
    syntheses: list[Synthesis] = Field(default_factory=list)


@dataclass
class TimelineRow:
    """What the store reads of one note's place in time (``NoteStore.timeline``)."""

    note_id: str
    since: datetime  # its event time, else its creation
    valid_to: datetime | None = None
    superseded_by: list[str] = field(default_factory=list)  # directly
    newer: list[TimelineEntry] = field(default_factory=list)  # every note along SUPERSEDES chains after it
    older: list[TimelineEntry] = field(default_factory=list)  # every note it superseded, directly or not
    conflicts: list[TimelineEntry] = field(default_factory=list)
