"""Domain models: notes, scopes, links, search requests and hits, the DTOs the service hands the
store (``ports.NoteStore``), accounting. Each domain word is defined here once. No I/O here."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphmem.errors import InvalidInputError
from graphmem.timeline import Conflict, KnockOn, NoteTimeline, Supersession

# \Z, not $: under re.match, $ also matches before a final newline ("zz\n" would pass as "zz").
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@\-]{0,127}\Z"
_ID_RE = re.compile(ID_PATTERN)
# C0 control characters other than tab, newline and carriage return, plus DEL: never stored.
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Limits:
    """Bounds on every number and size a client sends, in one place: the service checks them for every
    interface (Python API, CLI, LangChain, LangGraph) and the REST and MCP schemas declare them. They
    also bound the largest answer: hits x (1 + links per hit) notes, pages of notes, links and versions
    (tests/reliability/test_big_answers.py measures the server under the largest)."""

    k_max: int = 100  # search / ask hits (each brings up to GRAPHMEM_LINKS_PER_HIT linked notes)
    page_max: int = 100  # notes per page of a list
    links_page_max: int = 1000  # links per page of a note's links (a link is a few hundred bytes)
    history_page_max: int = 100  # versions per page of a note's history (a version holds the content)
    items_page_max: int = 1000  # LangGraph store items, namespaces or scopes per page
    offset_max: int = 10_000_000  # any offset: Neo4j's SKIP overflows at 2**63 (issue 16)
    token_budget_min: int = 50  # the context `ask` builds, in tokens
    token_budget_max: int = 32_000
    repair_max: int = 1000  # notes one repair call re-enriches
    batch_max: int = 10_000  # notes per bulk write transaction
    metadata_keys: int = 32
    metadata_value_chars: int = 1000


LIMITS = Limits()


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_note_id() -> str:
    return uuid.uuid4().hex


def check_id(value: str, what: str = "id") -> str:
    """Ids and scope parts are short, printable tokens: no spaces, quotes or control characters."""
    if not isinstance(value, str) or not _ID_RE.fullmatch(value):
        raise InvalidInputError(
            f"{what} must be 1-128 characters of letters, digits and _ . : @ -, "
            f"starting with a letter or digit; got {value!r:.60}"
        )
    return value


def check_bound(value: Any, low: int, high: int, what: str) -> int:
    """An integer in [low, high] (bools refused), or InvalidInputError naming the bounds."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{what} must be an integer from {low} to {high}; got {str(value)[:40]}")
    return value


MAX_SESSION_ID_CHARS = 1024


def check_session_id(value: Any) -> str:
    """A chat session id as an application passes it (LangChain's are free text: slashes, spaces,
    any script): non-empty text of at most 1,024 characters, without control characters or lone
    surrogates. Stored and found exactly as given."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"session_id must be non-empty text, got {value!r:.60}")
    if len(value) > MAX_SESSION_ID_CHARS:
        raise InvalidInputError(f"session_id has {len(value)} characters, over the limit of {MAX_SESSION_ID_CHARS}")
    if CONTROL_CHARS.search(value) or "\x00" in value:
        raise InvalidInputError("session_id contains control characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("session_id is not valid Unicode text (lone surrogates)") from None
    return value


def validate_content(value: Any, max_chars: int, *, what: str = "content") -> str:
    """Refuse what cannot be stored text: non-text, empty, oversized, control characters, invalid UTF-8.

    Returns the text stripped of surrounding whitespace.
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{what} is not valid UTF-8 text (lone surrogates)") from None
    if CONTROL_CHARS.search(value):
        raise InvalidInputError(f"{what} contains control characters (binary data?)")
    stripped = value.strip()
    if not stripped:
        raise InvalidInputError(f"{what} is empty")
    if len(stripped) > max_chars:
        raise InvalidInputError(f"{what} has {len(stripped)} characters, over the limit of {max_chars}")
    return stripped


def validate_label(value: Any, max_chars: int, *, what: str) -> str | None:
    """Optional short text (category, source id): None stays None; otherwise checked like content."""
    if value is None:
        return None
    return validate_content(value, max_chars, what=what)


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


class LinkType(StrEnum):
    """The closed set of typed links between notes (A-MEM's 'strengthen' action, made explicit).

    RELATED_TO   generic association, when no sharper type fits
    SUPPORTS     the source gives evidence for the target
    CONTRADICTS  the source states a fact that cannot be true together with the target's (or corrects it)
    ELABORATES   the source adds detail to the target
    FOLLOWS      the source happens after / continues the target (time or causality)
    SAME_TOPIC   both are about the same entity or subject
    """

    RELATED_TO = "RELATED_TO"
    SUPPORTS = "SUPPORTS"
    CONTRADICTS = "CONTRADICTS"
    ELABORATES = "ELABORATES"
    FOLLOWS = "FOLLOWS"
    SAME_TOPIC = "SAME_TOPIC"

    @property
    def meaning(self) -> str:
        """What the type says, in the words the link prompt gives the LLM."""
        return _LINK_MEANINGS[self]


_LINK_MEANINGS = {
    LinkType.RELATED_TO: "generic",
    LinkType.SUPPORTS: "gives evidence for",
    LinkType.CONTRADICTS: "states a fact that cannot be true together with the neighbour's, rare",
    LinkType.ELABORATES: "adds detail to",
    LinkType.FOLLOWS: "happens after or continues",
    LinkType.SAME_TOPIC: "same entity or subject",
}


class SearchMode(StrEnum):
    """How search finds notes.

    VECTOR  HNSW top-k by cosine inside the scope
    LINKS   vector, + one hop along typed links from each hit
    HYBRID  vector fused with full-text by score (cosine + bounded BM25 boost), + one hop (the default)
    """

    VECTOR = "vector"
    LINKS = "links"
    HYBRID = "hybrid"

    @classmethod
    def parse(cls, value: SearchMode | str) -> SearchMode:
        """The mode a caller named; InvalidInputError for anything else."""
        try:
            return cls(value)
        except ValueError:
            raise InvalidInputError(
                f"unknown search mode {str(value)[:40]!r}; one of {', '.join(m.value for m in cls)}"
            ) from None


class EnrichmentStatus(StrEnum):
    DONE = "done"  # keywords/context/tags written by the LLM
    PENDING = "pending"  # the LLM failed; stored raw, `graphmem repair` re-runs it
    RAW = "raw"  # enrichment switched off on purpose


class Scope(BaseModel):
    """Who a memory belongs to. Every note has exactly one; every query is confined to it."""

    model_config = ConfigDict(frozen=True)

    user_id: str
    agent_id: str = "default"
    run_id: str = "default"

    @field_validator("user_id", "agent_id", "run_id")
    @classmethod
    def _valid(cls, value: str, info: Any) -> str:
        return check_id(value, info.field_name)

    def params(self) -> dict[str, str]:
        return {"user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id}

    def __str__(self) -> str:
        return f"{self.user_id}/{self.agent_id}/{self.run_id}"

    @classmethod
    def parse(cls, text: str) -> Scope:
        """'user', 'user/agent' or 'user/agent/run'."""
        parts = text.split("/")
        if not 1 <= len(parts) <= 3:
            raise ValueError(f"scope must be 'user[/agent[/run]]', got {text!r:.60}")
        keys = ("user_id", "agent_id", "run_id")
        return cls(**dict(zip(keys, parts, strict=False)))


class Note(BaseModel):
    """An atomic memory note (A-MEM's m = {c, t, K, G, X, e, L}) as stored in Neo4j."""

    id: str = Field(default_factory=new_note_id)
    content: str
    scope: Scope
    event_time: datetime | None = None  # when it happened (caller-given, e.g. a session date)
    event_time_text: str | None = None  # the caller's original wording of it, if any
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    keywords: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    context: str = ""
    category: str | None = None
    source_id: str | None = None  # e.g. LoCoMo dia_id, or a chat message id
    metadata: dict[str, str] = Field(default_factory=dict)
    enrichment: EnrichmentStatus = EnrichmentStatus.DONE
    retrieval_count: int = 0
    last_accessed: datetime | None = None
    version: int = 1
    embedding: list[float] | None = Field(default=None, repr=False)

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return check_id(value, "id")

    def brief(self) -> dict[str, Any]:
        """The note as tools and agents see it (MCP, LangChain, LangGraph): what it says and when."""
        return {
            "id": self.id,
            "content": self.content,
            "context": self.context,
            "keywords": list(self.keywords),
            "tags": list(self.tags),
            "event_time": iso(self.event_time) or self.event_time_text,
            "created_at": iso(self.created_at),
        }

    def public(self) -> dict[str, Any]:
        """Every field as JSON except the embedding (CLI ``--json``, REST bodies)."""
        return self.model_dump(mode="json", exclude={"embedding"})


# The reason recorded on a FOLLOWS link made for a conversation turn (add(..., follows=previous id)).
FOLLOWS_REASON = "the next turn of the same conversation"
# Link.caused_by of a link made by link() (a person or an agent tool): no add caused it, so undoing
# an add never removes it.
MANUAL_CAUSE = "manual"


class Link(BaseModel):
    """A typed relationship between two notes of one scope."""

    source_id: str
    target_id: str
    type: LinkType
    reason: str = ""
    strength: float = Field(0.5, ge=0.0, le=1.0)
    created_at: datetime | None = None
    caused_by: str | None = None  # the note whose add created the link, or MANUAL_CAUSE (link())


class NoteVersion(BaseModel):
    """Previous values of a note, kept when evolution, an update, a repair or a rollback changes it.

    ``changed_by`` says what replaced this version: the id of the note whose add evolved it, or a
    change label (``update``, ``repair``, ``rollback:<version>``, ``undo:<note id>``; see ``ChangeKind``).
    """

    version: int
    context: str
    tags: list[str]
    keywords: list[str]
    content: str
    replaced_at: datetime
    changed_by: str | None = None


HitSource = Literal["vector", "fulltext", "link"]


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
    """A validated evolution of one neighbour, ready to write (embedding already computed)."""

    note_id: str
    context: str
    tags: list[str]
    keywords: list[str]
    embedding: list[float]
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


# --- chat histories -------------------------------------------------------------------------------


@dataclass
class StoredMessage:
    """One chat message as stored: its type and LangChain's ``message_to_dict`` JSON."""

    type: str
    data_json: str


@dataclass
class SessionInfo:
    session_id: str
    messages: int
    created_at: datetime | None
    updated_at: datetime | None


# --- store items (key-value items in namespaces: the LangGraph store) -----------------------------

ItemOperator = Literal["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]
ITEM_OPERATORS: tuple[ItemOperator, ...] = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


@dataclass(frozen=True)
class LeafCondition:
    """A filter condition the store evaluates itself (pushed into Cypher): the scalar leaf of an
    item's value at ``head`` (kind and path, encoded) compared with ``entry`` (head + the encoded
    operand), both in the encoding of ``ItemWrite.leaves``."""

    op: ItemOperator
    head: str
    entry: str


@dataclass(frozen=True)
class ItemFilter:
    """A compiled item filter: the conditions the store applies (``pushed``) and whether some
    conditions are left for the service to check on the values the store returns (``residual``:
    list or object equality, null, very large integers)."""

    pushed: tuple[LeafCondition, ...] = ()
    residual: bool = False


@dataclass
class ItemWrite:
    """One store item to write (insert or replace, in one transaction): the value as JSON text,
    its scalar leaves for filters, the embedding of its indexed text (None: not indexed), its TTL."""

    scope: Scope
    namespace: tuple[str, ...]
    key: str
    value_json: str
    leaves: list[str]
    embedding: list[float] | None
    ttl_minutes: float | None


@dataclass
class ItemRecord:
    """A stored item: namespace, key and value (as JSON text; the service parses it)."""

    scope: Scope
    namespace: tuple[str, ...]
    key: str
    value_json: str
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    ttl_minutes: float | None = None
    score: float | None = None


@dataclass
class StoredItem:
    """An item as the service returns it (value parsed)."""

    scope: Scope
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float | None = None
