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
    HYBRID  vector fused with full-text by reciprocal rank, + one hop (the default)
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


class Link(BaseModel):
    """A typed relationship between two notes of one scope."""

    source_id: str
    target_id: str
    type: LinkType
    reason: str = ""
    strength: float = Field(0.5, ge=0.0, le=1.0)
    created_at: datetime | None = None
    caused_by: str | None = None  # the note whose insertion created the link


class NoteVersion(BaseModel):
    """Previous values of a note, kept when evolution or an update changes it."""

    version: int
    context: str
    tags: list[str]
    keywords: list[str]
    content: str
    replaced_at: datetime
    changed_by: str | None = None  # id of the note whose evolution changed it, or 'update'


HitSource = Literal["vector", "fulltext", "link"]


class LinkedVia(BaseModel):
    """How a link-expanded hit was reached."""

    from_id: str
    type: LinkType
    reason: str = ""
    strength: float = 0.5


class SearchHit(BaseModel):
    note: Note
    score: float  # plain cosine for vector hits; fused RRF score for hybrid
    found_by: list[HitSource]
    linked_via: list[LinkedVia] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)


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
    usage: Usage = Field(default_factory=Usage)


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


# --- the steps of an add, and what the service hands the store ------------------------------------


@dataclass
class ConstructedNote:
    """A note after A-MEM's construction step (validated, enriched or marked, embedded); not stored yet."""

    note: Note
    embedding: list[float]
    usage: Usage = field(default_factory=lambda: Usage())


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


@dataclass
class NeighbourUpdate:
    """A validated evolution of one neighbour, ready to write (embedding already computed)."""

    note_id: str
    context: str
    tags: list[str]
    keywords: list[str]
    embedding: list[float]


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
