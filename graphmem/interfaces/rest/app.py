"""``create_app``: assembles settings, keys, the service's lifespan, middleware, error handlers and
the routers (``routers/``)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from graphmem._version import __version__
from graphmem.config import Settings, load_settings
from graphmem.interfaces.rest.auth import KeyRing
from graphmem.interfaces.rest.body_limit import BodyLimit
from graphmem.interfaces.rest.errors import install_error_handlers
from graphmem.interfaces.rest.malloc import ReleaseMemory
from graphmem.interfaces.rest.routers import meta, notes, retrieval, updates, versions
from graphmem.local import ChatModelStart, chat_model, start_chat_model
from graphmem.service.memory import AsyncMemoryService

log = logging.getLogger("graphmem.interfaces.rest")


def create_app(
    settings: Settings | None = None,
    service: AsyncMemoryService | None = None,
    *,
    max_body_bytes: int | None = None,
    chat_model_start: ChatModelStart = chat_model,
) -> FastAPI:
    """Build the API. With `service` given the app uses it and leaves closing it to the caller;
    otherwise it creates one at start-up (Neo4j must be reachable) and closes it at shutdown.
    The local model starts meanwhile in a worker thread (``chat_model_start``), so ``/health`` and
    the routes that need no LLM answer at once; the others wait for it.

    Raises ConfigError when no API key is configured and auth is not explicitly disabled.
    """
    settings = settings or (service.settings if service is not None else load_settings())
    keys = KeyRing.from_settings(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if service is not None:
            app.state.service = service
            yield
            return
        model = start_chat_model(settings, chat_model_start)
        try:
            svc = await AsyncMemoryService.create(settings, chat_model=model)
        except BaseException:
            model.cancel()
            raise
        app.state.service = svc
        try:
            yield
        finally:
            app.state.service = None
            await svc.close()

    app = FastAPI(
        title="graphmem",
        version=__version__,
        description="A-MEM agentic memory on Neo4j: notes, typed links, evolution, retrieval.",
        lifespan=lifespan,
    )
    app.state.keys = keys
    app.state.service = service
    app.state.liveness = meta.Liveness()
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes or settings.http_max_body_bytes)
    app.add_middleware(ReleaseMemory)
    install_error_handlers(app)
    for router in (meta.router, notes.router, retrieval.router, versions.router, updates.router):
        app.include_router(router)
    return app
