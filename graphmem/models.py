"""Domain models: notes, scopes, links, search hits, accounting. No I/O here."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphmem.errors import InvalidInputError

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@\-]{0,127}$"
_ID_RE = re.compile(ID_PATTERN)


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_note_id() -> str:
    return uuid.uuid4().hex


def check_id(value: str, what: str = "id") -> str:
    """Ids and scope parts are short, printable tokens: no spaces, quotes or control characters."""
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise InvalidInputError(
            f"{what} must be 1-128 characters of letters, digits and _ . : @ -, "
            f"starting with a letter or digit; got {value!r:.60}"
        )
    return value


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
