"""Reliability suite fixtures. The CI form runs by default; the full form (tests marked ``slow``) runs
with ``GRAPHMEM_FULL=1`` and is skipped otherwise (see docs/reliability.md).

Services here use a fast deterministic embedder (support.ClusterEmbedder) unless a test needs MiniLM,
and scripted chat models (tests/fakes.py) or the fault-injecting OpenAI server (support.FaultyOpenAI).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from graphmem.config import Settings
from graphmem.models import Scope
from graphmem.service.memory import AsyncMemoryService
from tests.fakes import Responder, ScriptedChatModel, amem_responder
from tests.reliability.support import FULL, OUT, ClusterEmbedder

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if FULL:
        return
    skip = pytest.mark.skip(reason="full-size reliability run: set GRAPHMEM_FULL=1 (docs/reliability.md)")
    for item in items:
        if item.get_closest_marker("slow") and _HERE in Path(str(item.fspath)).parents:
            item.add_marker(skip)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A Markdown table of every scenario recorded in this output folder (the latest run of each)."""
    if not OUT.is_dir():
        return
    rows = []
    for path in sorted(OUT.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError:
            continue
        table = data.get("table")
        if isinstance(table, dict):
            rows.append(table)
    if not rows:
        return
    head = "| scenario | injected | operations | lost | notes |\n|---|---|---|---|---|\n"
    body = "".join(
        f"| {r.get('scenario', '')} | {r.get('injected', '')} | {r.get('operations', '')} | "
        f"{r.get('lost', '')} | {r.get('notes', '')} |\n"
        for r in rows
    )
    (OUT / "summary.md").write_text(head + body)


@pytest_asyncio.fixture(loop_scope="session")
async def user_scope(settings: Settings) -> AsyncIterator[Scope]:
    """A fresh user; every scope of that user (all agents and runs) is deleted afterwards.

    The cleanup is async on purpose: a search's background write (retrieval counts) may still hold
    locks and need the event loop to finish; a blocking cleanup would wait for it forever.
    """
    from neo4j import AsyncGraphDatabase

    sc = Scope(user_id=f"rel-{uuid.uuid4().hex[:12]}")
    yield sc
    async with AsyncGraphDatabase.driver(settings.neo4j_uri, auth=settings.neo4j_auth) as driver:
        await driver.execute_query(
            "MATCH (n) WHERE (n:Note OR n:NoteVersion) AND n.user_id STARTS WITH $u DETACH DELETE n",
            {"u": sc.user_id},
            database_=settings.neo4j_database,
        )


@pytest_asyncio.fixture(loop_scope="session")
async def make_service(settings: Settings) -> AsyncIterator[Callable[..., Any]]:
    """``await make_service(responder=None, embedder=None, chat_model=None, **setting_overrides)`` ->
    (service, model); ``chat_model`` (a model or an LLMCaller) replaces the scripted model.

    The default embedder is a fresh ClusterEmbedder (fast); pass ``embedder=`` for MiniLM.
    """
    made: list[AsyncMemoryService] = []

    async def factory(
        responder: Responder | None = None, embedder: Any = None, chat_model: Any = None, **overrides: Any
    ) -> tuple[AsyncMemoryService, ScriptedChatModel]:
        model = ScriptedChatModel(responder or amem_responder())
        svc = await AsyncMemoryService.create(
            settings.model_copy(update=overrides),
            chat_model=chat_model or model,
            embedder=embedder or ClusterEmbedder(),
        )
        made.append(svc)
        return svc, model

    yield factory
    for svc in made:
        await svc.close()
