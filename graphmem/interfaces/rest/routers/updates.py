"""``/v1/consolidate``: consolidation that only adds (issue 28)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field

from graphmem.interfaces.rest.deps import Auth, Given, Svc, resolve_scope
from graphmem.interfaces.rest.errors import COMMON_ERRORS, error_responses
from graphmem.interfaces.rest.schemas import ScopeFields
from graphmem.models.timeline import ConsolidationResult

router = APIRouter(prefix="/v1", tags=["updates"], responses=error_responses(*COMMON_ERRORS))


class ConsolidateRequest(ScopeFields):
    dry_run: bool = Field(True, description="propose and write nothing (the default); false writes the notes")


@router.post("/consolidate", response_model=ConsolidationResult)
async def consolidate(body: ConsolidateRequest, who: Auth, given: Given, svc: Svc) -> ConsolidationResult:
    """One synthesis note per supersession chain of the scope: its dated history in the notes' own
    words, DERIVED_FROM every source (which never change). A dry run unless `dry_run` is false; a
    synthesis is undone like any add (`/v1/notes/{id}/undo` with `delete_note`)."""
    return await svc.consolidate(resolve_scope(who, given, body), dry_run=body.dry_run)
