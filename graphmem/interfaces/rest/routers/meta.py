"""``/health``: is the API up, Neo4j reachable, and the LLM ready? No auth; reveals no data."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from graphmem._version import __version__
from graphmem.errors import StoreUnavailableError
from graphmem.interfaces.rest.errors import error_responses
from graphmem.interfaces.rest.schemas import Health
from graphmem.service.memory import AsyncMemoryService

router = APIRouter(tags=["meta"])


@router.get(
    "/health",
    response_model=Health,
    responses={
        503: {"model": Health, "description": "starting, or Neo4j unavailable"},
        500: error_responses(500)[500],
    },
)
async def health(request: Request) -> JSONResponse:
    """Is the API up and Neo4j reachable? Answers while the local model is still starting. No auth."""
    svc: AsyncMemoryService | None = getattr(request.app.state, "service", None)
    if svc is None:
        return JSONResponse(status_code=503, content=Health(status="starting", version=__version__).model_dump())
    try:
        info = await svc.health()
    except StoreUnavailableError as exc:
        body = Health(status="unavailable", version=__version__, detail=str(exc))
        return JSONResponse(status_code=503, content=body.model_dump())
    return JSONResponse(
        content=Health(status="ok", version=__version__, neo4j=info["neo4j"], llm=info.get("llm")).model_dump()
    )
