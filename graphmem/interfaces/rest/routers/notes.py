"""``/v1/notes``: add, list, get, update, delete notes; their links and history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from graphmem.errors import NoteNotFoundError
from graphmem.interfaces.rest.deps import Auth, Given, Svc, resolve_scope
from graphmem.interfaces.rest.errors import COMMON_ERRORS, error_responses
from graphmem.interfaces.rest.responses import NOTE_EXCLUDE, json_list
from graphmem.interfaces.rest.schemas import (
    AddResultOut,
    BulkCreate,
    BulkResult,
    HistoryResponse,
    LinkCreate,
    LinksResponse,
    NoteCreate,
    NoteOut,
    NotePage,
    NoteUpdate,
    add_result_out,
    bulk_result_out,
    note_out,
)
from graphmem.models import LIMITS, Link, NoteInput

router = APIRouter(prefix="/v1/notes", tags=["notes"], responses=error_responses(*COMMON_ERRORS))


@router.post(
    "",
    response_model=AddResultOut,
    status_code=201,
    responses={
        200: {"description": "already stored (same note_id, or same content with dedupe_content)"},
        **error_responses(404, 502),  # 404: `follows` names no note of the scope
    },
)
async def add_note(body: NoteCreate, who: Auth, given: Given, svc: Svc, response: Response) -> AddResultOut:
    """Add a memory the A-MEM way: construct the note, link it, evolve its neighbours."""
    scope = resolve_scope(who, given, body)
    result = await svc.add(
        body.content,
        scope,
        note_id=body.note_id,
        event_time=body.event_time,
        category=body.category,
        source_id=body.source_id,
        metadata=body.metadata,
        dedupe_content=body.dedupe_content,
        enrich=body.enrich,
        follows=body.follows,
    )
    if not result.created:
        response.status_code = 200
    return add_result_out(result)


@router.post("/bulk", response_model=BulkResult)
async def add_notes(body: BulkCreate, who: Auth, given: Given, svc: Svc) -> BulkResult:
    """Add many memories the A-MEM way, several at once and in order: each note's links and
    evolutions consider every earlier note (of the scope and of this request). Per note: added,
    existing (its id is stored: resending the request after a timeout adds nothing twice), failed
    (with the error) or skipped. A failed note does not fail the request."""
    scope = resolve_scope(who, given, body)
    items = [NoteInput.model_validate(n.model_dump(exclude_none=True)) for n in body.notes]
    report = await svc.ingest(items, scope, concurrency=body.concurrency, enrich=body.enrich)
    return bulk_result_out(report)


@router.get("", response_model=NotePage)
async def list_notes(
    who: Auth,
    given: Given,
    svc: Svc,
    limit: Annotated[int, Query(ge=1, le=LIMITS.page_max)] = 50,
    offset: Annotated[int, Query(ge=0, le=LIMITS.offset_max)] = 0,
) -> Response:
    """The scope's notes, newest first."""
    scope = resolve_scope(who, given)
    notes = await svc.list(scope, limit=limit, offset=offset)
    total = await svc.count(scope)
    nxt = offset + len(notes)
    return await json_list(
        "notes",
        notes,
        exclude=NOTE_EXCLUDE,
        total=total,
        limit=limit,
        offset=offset,
        next_offset=nxt if nxt < total else None,
    )


@router.get("/{note_id}", response_model=NoteOut, responses=error_responses(404))
async def get_note(note_id: str, who: Auth, given: Given, svc: Svc) -> NoteOut:
    """One note of the scope."""
    return note_out(await svc.get(note_id, resolve_scope(who, given)))


@router.put("/{note_id}", response_model=AddResultOut, responses=error_responses(404, 502))
async def replace_note(note_id: str, body: NoteUpdate, who: Auth, given: Given, svc: Svc) -> AddResultOut:
    """Replace the content: re-enrich, re-embed, keep the previous values as a version."""
    return add_result_out(await svc.update(note_id, resolve_scope(who, given, body), body.content))


@router.patch("/{note_id}", response_model=AddResultOut, responses=error_responses(404, 502))
async def update_note(note_id: str, body: NoteUpdate, who: Auth, given: Given, svc: Svc) -> AddResultOut:
    """Same as PUT: content is the only field a client may change."""
    return add_result_out(await svc.update(note_id, resolve_scope(who, given, body), body.content))


@router.delete("/{note_id}", status_code=204, responses=error_responses(404))
async def delete_note(note_id: str, who: Auth, given: Given, svc: Svc) -> Response:
    """Delete a note with its versions and links."""
    if not await svc.delete(note_id, resolve_scope(who, given)):
        raise NoteNotFoundError(note_id)
    return Response(status_code=204)


@router.get("/{note_id}/links", response_model=LinksResponse, responses=error_responses(404))
async def note_links(
    note_id: str,
    who: Auth,
    given: Given,
    svc: Svc,
    limit: Annotated[int, Query(ge=1, le=LIMITS.links_page_max)] = LIMITS.links_page_max,
    offset: Annotated[int, Query(ge=0, le=LIMITS.offset_max)] = 0,
) -> Response:
    """A page of the note's typed links, both directions, oldest first."""
    links = await svc.links(note_id, resolve_scope(who, given), limit=limit, offset=offset)
    return await json_list("links", links, limit=limit, offset=offset, next_offset=_next(offset, limit, len(links)))


@router.post("/{note_id}/links", response_model=Link, status_code=201, responses=error_responses(404))
async def add_link(note_id: str, body: LinkCreate, who: Auth, given: Given, svc: Svc) -> Link:
    """Link this note to another note of the scope."""
    scope = resolve_scope(who, given, body)
    return await svc.link(note_id, body.target_id, scope, body.type, body.reason, body.strength)


@router.get("/{note_id}/history", response_model=HistoryResponse, responses=error_responses(404))
async def note_history(
    note_id: str,
    who: Auth,
    given: Given,
    svc: Svc,
    limit: Annotated[int, Query(ge=1, le=LIMITS.history_page_max)] = LIMITS.history_page_max,
    offset: Annotated[int, Query(ge=0, le=LIMITS.offset_max)] = 0,
) -> Response:
    """Previous versions (evolution by later notes, updates, rollbacks), oldest first, one page;
    `/history/diff` gives what changed at each step."""
    versions = await svc.history(note_id, resolve_scope(who, given), limit=limit, offset=offset)
    nxt = _next(offset, limit, len(versions))
    return await json_list("versions", versions, limit=limit, offset=offset, next_offset=nxt)


def _next(offset: int, limit: int, got: int) -> int | None:
    """A full page may have a next one (which may then be empty); a short page is the last."""
    return offset + got if got == limit and offset + got <= LIMITS.offset_max else None
