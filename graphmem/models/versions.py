"""Versions of a note: history diffs, rollback, undo of an add, and their store DTOs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

from graphmem.models.notes import MANUAL_CAUSE, Link, Note, NoteVersion, Scope

# --- versions: history diffs, rollback, undo of an add ------------------------------------------

ROLLBACK_CAUSE = "rollback:"  # + the version restored: NoteVersion.changed_by of a rollback
UNDO_CAUSE = "undo:"  # + the added note's id: NoteVersion.changed_by of an evolution undone


class ChangeKind(StrEnum):
    """What turned one version of a note into the next, read from ``NoteVersion.changed_by``.

    EVOLUTION  a later note's add evolved it (changed_by: that note's id)
    UPDATE     its content was replaced (``update``)
    REPAIR     its enrichment was re-run after an LLM failure (``repair``)
    ROLLBACK   it was rolled back to an earlier version (``rollback:<version>``)
    UNDO       the add that had evolved it was undone (``undo:<note id>``)
    UNKNOWN    no cause recorded
    """

    EVOLUTION = "evolution"
    UPDATE = "update"
    REPAIR = "repair"
    ROLLBACK = "rollback"
    UNDO = "undo"
    UNKNOWN = "unknown"

    @classmethod
    def of(cls, changed_by: str | None) -> ChangeKind:
        if not changed_by:
            return cls.UNKNOWN
        if changed_by in (cls.UPDATE.value, cls.REPAIR.value):
            return cls(changed_by)
        if changed_by.startswith(ROLLBACK_CAUSE):
            return cls.ROLLBACK
        if changed_by.startswith(UNDO_CAUSE):
            return cls.UNDO
        return cls.EVOLUTION


def is_change_label(note_id: str) -> bool:
    """Whether an id reads as a change label rather than a note (``update``, ``rollback:2``, ...):
    undo_add refuses such an id, because versions and links labelled so were not made by an add."""
    return (
        note_id in (ChangeKind.UPDATE.value, ChangeKind.REPAIR.value, MANUAL_CAUSE)
        or note_id.startswith(ROLLBACK_CAUSE)
        or note_id.startswith(UNDO_CAUSE)
    )


def describe_change(changed_by: str | None) -> str:
    """``changed_by`` in words (CLI output, undo's refusal reasons)."""
    kind = ChangeKind.of(changed_by)
    if kind == ChangeKind.EVOLUTION:
        return f"evolved by the add of note {changed_by}"
    if kind == ChangeKind.UNDO and changed_by is not None:
        return f"undo of the add of note {changed_by.removeprefix(UNDO_CAUSE)}"
    if kind == ChangeKind.ROLLBACK and changed_by is not None:
        return f"rollback to version {changed_by.removeprefix(ROLLBACK_CAUSE)}"
    return kind.value


VersionedField = Literal["content", "context", "tags", "keywords"]
VERSIONED_FIELDS: tuple[VersionedField, ...] = ("content", "context", "tags", "keywords")


class TextOp(BaseModel):
    """One run of a word diff: text kept, removed or added."""

    op: Literal["equal", "delete", "insert"]
    text: str


class FieldDiff(BaseModel):
    """How one field changed between two versions: a word diff for text, added/removed for lists."""

    field: VersionedField
    before: str | list[str]
    after: str | list[str]
    ops: list[TextOp] = Field(default_factory=list, description="content, context: word diff, before to after")
    added: list[str] = Field(default_factory=list, description="tags, keywords: items added")
    removed: list[str] = Field(default_factory=list, description="tags, keywords: items removed")


class VersionDiff(BaseModel):
    """One step of a note's history: version ``from_version`` became ``to_version``, why, and what changed."""

    from_version: int
    to_version: int
    changed_at: datetime | None = Field(None, description="when from_version was replaced")
    changed_by: str | None = None
    change: ChangeKind
    cause_note_id: str | None = Field(None, description="evolution, undo: the note whose add it was")
    restored_version: int | None = Field(None, description="rollback: the version whose values came back")
    fields: list[FieldDiff] = Field(default_factory=list, description="only the fields that changed")


class RollbackResult(BaseModel):
    note: Note  # after the rollback, at its new version
    restored_version: int  # the version whose values it has again
    diff: VersionDiff  # from the version before the rollback to the new one


UndoStatus = Literal["reverted", "refused", "already_undone"]


class NeighbourRevert(BaseModel):
    """What undo_add did (or, in a dry run, would do) with one neighbour the add had evolved."""

    note_id: str
    status: UndoStatus
    restored_version: int = Field(description="the version before the add's evolution")
    evolved_version: int = Field(description="the version the add's evolution wrote")
    current_version: int = Field(description="the neighbour's version when the undo looked")
    new_version: int | None = Field(None, description="the version the undo wrote (reverted, not in a dry run)")
    later_changes: list[str] = Field(default_factory=list, description="changed_by of each change since the add")
    reason: str = ""


class UndoResult(BaseModel):
    """What undo_add undid: the add's links, its evolutions (each reverted or refused, with why) and,
    on request, the note. In a dry run, what it would do; nothing is written."""

    note_id: str
    dry_run: bool = False
    links_removed: list[Link] = Field(default_factory=list)
    neighbours: list[NeighbourRevert] = Field(default_factory=list)
    note_deleted: bool = False
    links_removed_with_note: int = Field(0, description="links that other adds or people made to or from the note")
    updates_removed: int = Field(0, description="SUPERSEDES / CONFLICTS_WITH the add recorded (issue 28)")

    @property
    def reverted(self) -> list[NeighbourRevert]:
        return [n for n in self.neighbours if n.status == "reverted"]

    @property
    def refused(self) -> list[NeighbourRevert]:
        return [n for n in self.neighbours if n.status == "refused"]


@dataclass(frozen=True)
class NoteState:
    """A note's versioned values at one version (a stored NoteVersion, or the note as it is now)."""

    version: int
    content: str
    context: str
    tags: tuple[str, ...]
    keywords: tuple[str, ...]

    @classmethod
    def of(cls, item: Note | NoteVersion) -> NoteState:
        return cls(item.version, item.content, item.context, tuple(item.tags), tuple(item.keywords))

    def same_values(self, other: NoteState) -> bool:
        """Same content, context, tags and keywords, whatever the version numbers."""
        return (self.content, self.context, self.tags, self.keywords) == (
            other.content,
            other.context,
            other.tags,
            other.keywords,
        )


@dataclass(frozen=True)
class EvolutionTrace:
    """A note that an add evolved, as the store found it (for undo_add to decide on)."""

    note_id: str
    before: NoteVersion  # the version the add's evolution replaced
    after: NoteState  # the values the evolution wrote (version before.version + 1)
    current: NoteState  # the note now
    later: list[tuple[int, str | None]]  # every version since the evolution: (version, changed_by)


@dataclass(frozen=True)
class AddEffects:
    """What one add left in the store: the links touching its note (whoever made them) and the
    notes it evolved. ``note_exists`` is False when the note was deleted since."""

    note_exists: bool
    links: list[Link]
    evolutions: list[EvolutionTrace]


@dataclass(frozen=True)
class Restore:
    """Roll one note back to one of its versions, written only while it is still at ``expected_version``."""

    note_id: str
    version: NoteVersion
    expected_version: int
    embedding: list[float]
    changed_by: str


@dataclass
class UndoWrite:
    """Everything one undo_add writes, in one transaction."""

    note_id: str
    scope: Scope
    restores: list[Restore] = field(default_factory=list)
    keep_follows: bool = False
    delete_note: bool = False


@dataclass(frozen=True)
class UndoOutcome:
    links_removed: list[Link] = field(default_factory=list)
    restored: dict[str, int] = field(default_factory=dict)  # neighbour id -> its new version
    note_deleted: bool = False
    links_removed_with_note: int = 0
