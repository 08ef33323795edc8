"""``/v1/notes/{id}/history/diff``, ``/v1/notes/{id}/rollback``, ``/v1/notes/{id}/undo``: a note's
changes step by step, rollback to an earlier version, undo of everything one add caused."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from graphmem.interfaces.rest.deps import Auth, Given, Svc, resolve_scope
from graphmem.interfaces.rest.errors import COMMON_ERRORS, ERROR_MEANINGS, error_responses
from graphmem.interfaces.rest.schemas import (
    HistoryDiffResponse,
    RollbackRequest,
    RollbackResultOut,
    UndoRequest,
    rollback_result_out,
)
from graphmem.models import LIMITS, UndoResult

router = APIRouter(prefix="/v1/notes", tags=["versions"], responses=error_responses(*COMMON_ERRORS))


def _errors(**meanings: str) -> dict[int | str, dict[str, Any]]:
    """The shared error body, with what each status means on this route (``s404="..."``)."""
    out = error_responses(*(int(k[1:]) for k in meanings))
    for key, meaning in meanings.items():
        out[int(key[1:])]["description"] = meaning
    return out


@router.get("/{note_id}/history/diff", response_model=HistoryDiffResponse, responses=error_responses(404))
async def note_history_diff(
    note_id: str,
    who: Auth,
    given: Given,
    svc: Svc,
    limit: Annotated[
        int, Query(ge=1, le=LIMITS.history_page_max, description="steps per page")
    ] = LIMITS.history_page_max,
    offset: Annotated[int, Query(ge=0, description="steps to skip, oldest first")] = 0,
) -> HistoryDiffResponse:
    """What changed from each version to the next: a word diff of content and context, tags and
    keywords added and removed, and the cause (evolution by a note's add, update, repair, rollback, undo)."""
    diffs = await svc.history_diff(note_id, resolve_scope(who, given), limit=limit, offset=offset)
    nxt = offset + len(diffs) if len(diffs) == limit else None
    return HistoryDiffResponse(note_id=note_id, diffs=diffs, limit=limit, offset=offset, next_offset=nxt)


@router.post(
    "/{note_id}/rollback",
    response_model=RollbackResultOut,
    responses=_errors(
        s404="no such note in this scope, or no such earlier version",
        s409="the note changed while it was rolled back; nothing written",
        s422=f"{ERROR_MEANINGS[422]}; or the note is at that version already",
    ),
)
async def rollback_note(note_id: str, body: RollbackRequest, who: Auth, given: Given, svc: Svc) -> RollbackResultOut:
    """Roll the note back to an earlier version's content, context, tags and keywords, re-embedded, as
    a new version (history is append-only: `changed_by` of the replaced version is `rollback:<version>`)."""
    result = await svc.rollback(note_id, resolve_scope(who, given, body), body.version)
    return rollback_result_out(result)


@router.post(
    "/{note_id}/undo",
    response_model=UndoResult,
    responses=_errors(
        s404="no such note in this scope, and no evolution of its add recorded",
        s422=f"{ERROR_MEANINGS[422]}; or the id reads as a change label (update, repair, manual, rollback:N, undo:ID)",
    ),
)
async def undo_add(note_id: str, body: UndoRequest, who: Auth, given: Given, svc: Svc) -> UndoResult:
    """Undo everything the note's add caused, in one transaction: the links it made, and its evolutions
    of neighbours, each reverted only if nothing changed that neighbour since (otherwise `refused`,
    with the reason); with `delete_note` the note too. `dry_run` reports without writing."""
    scope = resolve_scope(who, given, body)
    return await svc.undo_add(
        note_id, scope, delete_note=body.delete_note, keep_follows=body.keep_follows, dry_run=body.dry_run
    )
