"""Fixtures for tests against the real Neo4j: a real MiniLM embedder and services with scripted LLMs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.embeddings import Embeddings

from graphmem.config import Settings
from graphmem.embeddings import make_embedder
from graphmem.service.memory import AsyncMemoryService
from tests.fakes import Responder, ScriptedChatModel, amem_responder


@pytest.fixture(scope="session")
def embedder(settings: Settings) -> Embeddings:
    return make_embedder(settings)


@pytest_asyncio.fixture(loop_scope="session")
async def make_service(settings: Settings, embedder: Embeddings, scope: Any) -> AsyncIterator[Callable[..., Any]]:
    """Factory: `await make_service(responder=..., **setting_overrides)` -> (service, chat model);
    `chat_model=` (a model or an LLMCaller) replaces the scripted model; `link_decider=`,
    `link_model=`, `enrich_model=`, `answer_model=` go to ``create`` as they are.

    Depends on `scope` so that services close (and their background writes finish) before the
    scope's cleanup runs: the other order can block the cleanup on a lock held by a paused task.
    """
    made: list[AsyncMemoryService] = []

    async def factory(
        responder: Responder | None = None, chat_model: Any = None, **overrides: Any
    ) -> tuple[AsyncMemoryService, ScriptedChatModel]:
        model = ScriptedChatModel(responder or amem_responder())
        wiring = {
            k: overrides.pop(k)
            for k in ("link_decider", "link_model", "enrich_model", "answer_model")
            if k in overrides
        }
        svc = await AsyncMemoryService.create(
            settings.model_copy(update=overrides), chat_model=chat_model or model, embedder=embedder, **wiring
        )
        made.append(svc)
        return svc, model

    yield factory
    for svc in made:
        await svc.close()
