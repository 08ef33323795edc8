"""``/v1/search`` and ``/v1/ask``."""

from __future__ import annotations

from fastapi import APIRouter, Response

from graphmem.interfaces.rest.deps import Auth, Given, Svc, resolve_scope
from graphmem.interfaces.rest.errors import COMMON_ERRORS, error_responses
from graphmem.interfaces.rest.responses import HIT_EXCLUDE, json_list
from graphmem.interfaces.rest.schemas import (
    AskRequest,
    AskResultOut,
    SearchRequest,
    SearchResponse,
    ask_result_out,
)

router = APIRouter(prefix="/v1", tags=["retrieval"], responses=error_responses(*COMMON_ERRORS))


@router.post("/search", response_model=SearchResponse)
async def search(body: SearchRequest, who: Auth, given: Given, svc: Svc) -> Response:
    """Top-k notes of the scope; `links` and `hybrid` add linked notes (found_by: link)."""
    scope = resolve_scope(who, given, body)
    hits = await svc.search(
        body.query, scope, k=body.k, mode=body.mode, filters=body.filters, history=body.history, as_of=body.as_of
    )
    return await json_list("hits", hits, exclude=HIT_EXCLUDE)


@router.post("/ask", response_model=AskResultOut, responses=error_responses(502))
async def ask(body: AskRequest, who: Auth, given: Given, svc: Svc) -> AskResultOut:
    """Answer a question from the scope's notes (within a token budget), with the notes used."""
    scope = resolve_scope(who, given, body)
    result = await svc.ask(
        body.question,
        scope,
        k=body.k,
        mode=body.mode,
        token_budget=body.token_budget,
        filters=body.filters,
        history=body.history,
        as_of=body.as_of,
    )
    return ask_result_out(result)
