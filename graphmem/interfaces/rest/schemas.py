"""Request and response bodies of the REST API (graphmem.interfaces.rest): the OpenAPI schema."""

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from graphmem.models import (
    LIMITS,
    AddResult,
    AskResult,
    IngestReport,
    IngestStatus,
    Link,
    LinkType,
    NeighbourChange,
    Note,
    NoteVersion,
    RollbackResult,
    SearchFilters,
    SearchHit,
    SearchMode,
    Usage,
    VersionDiff,
)


class ErrorDetail(BaseModel):
    code: str = Field(description="a stable word for the error: unauthorized, not_found, invalid_input, ...")
    message: str = Field(description="what went wrong, for people")
    details: list[dict[str, Any]] | None = Field(
        None, description="for 422: one entry per problem, with loc (where) and msg (what)"
    )


class ErrorBody(BaseModel):
    """Every error the API answers, whatever its status: ``{"error": {"code", "message", "details"?}}``."""

    error: ErrorDetail


class ScopeFields(BaseModel):
    """Optional scope in a JSON body (instead of X-User-Id / X-Agent-Id / X-Run-Id headers)."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = Field(None, max_length=128)
    agent_id: str | None = Field(None, max_length=128)
    run_id: str | None = Field(None, max_length=128)


class NoteCreate(ScopeFields):
    content: str = Field(description="the memory text")
    note_id: str | None = Field(None, description="client-given id: adding it again is a no-op (idempotent)")
    event_time: str | None = Field(None, max_length=200, description="when it happened: ISO 8601 or free text")
    category: str | None = Field(None, max_length=200)
    source_id: str | None = Field(None, max_length=500)
    metadata: dict[str, str] | None = Field(None, description="string values, 32 keys at most")
    dedupe_content: bool = Field(False, description="reuse a note of the scope with exactly this content")
    enrich: bool | None = Field(None, description="false: store raw, no LLM call (default from settings)")
    follows: str | None = Field(
        None, max_length=128, description="id of the previous conversation turn: this note gets a FOLLOWS link to it"
    )


class BulkNote(BaseModel):
    """One note of a bulk add."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="the memory text")
    note_id: str | None = Field(
        None, max_length=128, description="client-given id; default: derived from source_id, or the content"
    )
    event_time: str | None = Field(None, max_length=200, description="when it happened: ISO 8601 or free text")
    category: str | None = Field(None, max_length=200)
    source_id: str | None = Field(None, max_length=500)
    metadata: dict[str, str] | None = Field(None, description="string values, 32 keys at most")
    follows: str | None = Field(
        None, max_length=128, description="id of the previous turn (in this request or stored): a FOLLOWS link"
    )


class BulkCreate(ScopeFields):
    notes: list[BulkNote] = Field(min_length=1, max_length=1000, description="in order: earlier notes first")
    concurrency: int | None = Field(
        None, ge=1, le=64, description="notes in flight (default GRAPHMEM_INGEST_CONCURRENCY)"
    )
    enrich: bool | None = Field(None, description="false: store raw, no LLM call (default from settings)")


class BulkItemOut(BaseModel):
    index: int
    note_id: str | None
    status: IngestStatus
    error: str | None = None
    enrichment: str | None = None
    links: list[Link] = Field(default_factory=list)
    evolved: list[NeighbourChange] = Field(default_factory=list)
    rejected: list[str] = Field(default_factory=list)
    usage: Usage


class BulkResult(BaseModel):
    summary: dict[str, int | float | None] = Field(
        description="counts by status (added, existing, failed, skipped), pending, links, evolved, seconds, notes_per_s"
    )
    items: list[BulkItemOut] = Field(description="one per note, in the request's order")
    warnings: list[str] = Field(default_factory=list, description="batch-level trouble that resending repairs")


def bulk_result_out(report: IngestReport) -> BulkResult:
    return BulkResult(
        summary=report.summary(),
        items=[
            BulkItemOut(
                index=x.index,
                note_id=x.note_id,
                status=x.status,
                error=x.error,
                enrichment=x.enrichment.value if x.enrichment else None,
                links=x.links,
                evolved=x.evolved,
                rejected=x.rejected,
                usage=x.usage,
            )
            for x in report.items
        ],
        warnings=report.warnings,
    )


class NoteUpdate(ScopeFields):
    content: str = Field(description="the new text; the note is re-enriched and the old values kept as a version")


class SearchRequest(ScopeFields):
    query: str
    k: int | None = Field(None, ge=1, le=LIMITS.k_max)
    mode: SearchMode | None = None
    filters: SearchFilters | None = None
    history: bool = Field(False, description="every hit, superseded ones marked (default: current notes)")
    as_of: datetime | None = Field(None, description="the state at this time")


class AskRequest(ScopeFields):
    question: str
    k: int | None = Field(None, ge=1, le=LIMITS.k_max)
    mode: SearchMode | None = None
    token_budget: int | None = Field(None, ge=LIMITS.token_budget_min, le=LIMITS.token_budget_max)
    filters: SearchFilters | None = None
    history: bool = Field(False, description="every note, superseded ones marked (default: current notes)")
    as_of: datetime | None = Field(None, description="the state at this time")


class LinkCreate(ScopeFields):
    target_id: str
    type: LinkType = LinkType.RELATED_TO
    reason: str = Field("", max_length=300)
    strength: float = Field(0.5, ge=0.0, le=1.0)


class NoteOut(Note):
    embedding: SkipJsonSchema[None] = Field(None, exclude=True)


class SearchHitOut(SearchHit):
    note: NoteOut


class AddResultOut(AddResult):
    note: NoteOut


class AskResultOut(AskResult):
    notes: list[SearchHitOut]  # type: ignore[assignment]  # narrower item type, no embeddings


class NotePage(BaseModel):
    notes: list[NoteOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


class SearchResponse(BaseModel):
    hits: list[SearchHitOut]


class LinksResponse(BaseModel):
    links: list[Link]
    limit: int
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null when this page is the last")


class HistoryResponse(BaseModel):
    versions: list[NoteVersion]
    limit: int
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null when this page is the last")


class Health(BaseModel):
    status: str = Field(description="ok, starting or unavailable")


class Status(BaseModel):
    status: str = Field(description="ok, starting or unavailable")
    version: str
    neo4j: dict[str, str] | None = None
    llm: str | None = Field(None, description="ready, starting (the local model), failed: ..., or on first use")
    detail: str | None = Field(None, description="why Neo4j cannot be reached (secrets redacted)")


def note_out(note: Note) -> NoteOut:
    return NoteOut.model_validate(note.public())


def hit_out(hit: SearchHit) -> SearchHitOut:
    return SearchHitOut.model_validate({**hit.model_dump(exclude={"note"}), "note": note_out(hit.note)})


def add_result_out(result: AddResult) -> AddResultOut:
    return AddResultOut.model_validate({**result.model_dump(exclude={"note"}), "note": note_out(result.note)})


def ask_result_out(result: AskResult) -> AskResultOut:
    return AskResultOut.model_validate(
        {**result.model_dump(exclude={"notes"}), "notes": [hit_out(h) for h in result.notes]}
    )


# --- versions: history diffs, rollback, undo of an add --------------------------------------------


class RollbackRequest(ScopeFields):
    version: int = Field(ge=1, description="the earlier version whose content, context, tags and keywords come back")


class UndoRequest(ScopeFields):
    delete_note: bool = Field(False, description="delete the note itself too")
    keep_follows: bool = Field(False, description="keep its FOLLOWS link (its place in the conversation)")
    dry_run: bool = Field(False, description="say what would be undone; write nothing")


class RollbackResultOut(RollbackResult):
    note: NoteOut


class HistoryDiffResponse(BaseModel):
    note_id: str
    diffs: list[VersionDiff] = Field(description="one per step, oldest first")
    limit: int
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null on the last one")


def rollback_result_out(result: RollbackResult) -> RollbackResultOut:
    return RollbackResultOut.model_validate({**result.model_dump(exclude={"note"}), "note": note_out(result.note)})
