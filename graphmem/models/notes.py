"""The core domain: link types, search modes, scopes, notes, links and note versions."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphmem.errors import InvalidInputError
from graphmem.models.validation import check_id, iso, new_note_id, utcnow


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


# The note fields the full-text index holds; a full-text search may look in some of them only.
TextField = Literal["content", "context", "keywords", "tags"]
TEXT_FIELDS: tuple[TextField, ...] = ("content", "context", "keywords", "tags")


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
