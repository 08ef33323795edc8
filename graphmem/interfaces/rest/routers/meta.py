"""``/health`` (no auth): up or down, nothing else. ``/v1/status`` (a key): the details an operator
needs (versions, the LLM's state, why Neo4j is unreachable, with secrets redacted).

``/health`` never waits for Neo4j once it has an answer: load balancers probe it often, and under
load a Neo4j round trip per probe measured Neo4j's queue, not the API's health (issue 16). It
answers from the last check and starts a new one in the background when that is older than a second.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from graphmem._version import __version__
from graphmem.errors import StoreUnavailableError
from graphmem.interfaces.rest.deps import Auth
from graphmem.interfaces.rest.errors import COMMON_ERRORS, error_responses
from graphmem.interfaces.rest.schemas import Health, Status
from graphmem.redaction import redact
from graphmem.service.memory import AsyncMemoryService

router = APIRouter(tags=["meta"])

_FRESH_S = 1.0  # a check younger than this is reused
_CHECK_TIMEOUT_S = 10.0  # a check that takes longer counts as down


class Liveness:
    """Is Neo4j reachable: the last check's answer, refreshed in the background (one check at a time)."""

    def __init__(self) -> None:
        self.ok: bool | None = None
        self.checked_at = 0.0
        self._running: asyncio.Task[None] | None = None

    async def _check(self, svc: AsyncMemoryService) -> None:
        try:
            await asyncio.wait_for(svc.health(), _CHECK_TIMEOUT_S)
            self.ok = True
        except Exception:  # unreachable, too slow, or closing: down, whatever the reason (/v1/status says it)
            self.ok = False
        finally:
            self.checked_at = time.monotonic()

    async def up(self, svc: AsyncMemoryService) -> bool:
        idle = self._running is None or self._running.done()
        if idle and (self.ok is None or time.monotonic() - self.checked_at > _FRESH_S):
            self._running = asyncio.create_task(self._check(svc))
        if self.ok is None and self._running is not None:  # the first probe waits for the first answer
            await asyncio.shield(self._running)
        return bool(self.ok)


def _service(request: Request) -> AsyncMemoryService | None:
    return getattr(request.app.state, "service", None)


@router.get(
    "/health",
    response_model=Health,
    responses={
        503: {"model": Health, "description": "starting, or Neo4j unavailable"},
        500: error_responses(500)[500],
    },
)
async def health(request: Request) -> JSONResponse:
    """Up (200, ``{"status": "ok"}``) or not (503, ``starting`` or ``unavailable``). No auth, no details."""
    svc = _service(request)
    if svc is None:
        return JSONResponse(status_code=503, content={"status": "starting"})
    liveness: Liveness = request.app.state.liveness
    if await liveness.up(svc):
        return JSONResponse(content={"status": "ok"})
    return JSONResponse(status_code=503, content={"status": "unavailable"})


@router.get("/v1/status", response_model=Status, responses=error_responses(*COMMON_ERRORS))
async def status(request: Request, who: Auth) -> JSONResponse:
    """The API's and Neo4j's versions and the LLM's state (``ready``, ``starting``, ``failed: ...``, ``on
    first use``), checked now; ``status`` ``unavailable`` with the reason when Neo4j cannot be reached
    (a 200: the report itself succeeded; ``/health`` is the one that answers 503)."""
    svc = _service(request)
    if svc is None:
        return JSONResponse(content=Status(status="starting", version=__version__).model_dump())
    try:
        info: dict[str, Any] = await svc.health()
    except StoreUnavailableError as exc:
        body = Status(status="unavailable", version=__version__, detail=redact(str(exc)))
        return JSONResponse(content=body.model_dump())
    return JSONResponse(
        content=Status(status="ok", version=__version__, neo4j=info["neo4j"], llm=info.get("llm")).model_dump()
    )
