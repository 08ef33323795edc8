"""Shared fixtures: one real Neo4j per test session, a fresh Scope per test, cleanup by scope.

The session server is the Neo4j at NEO4J_URI when Bolt answers there (CI starts it with
`graphmem neo4j start`; a developer may run their own). Otherwise the fixture starts the same
local server `graphmem neo4j start` would, and stops it at the end because it started it.
Markers (e2e, slow, browser) are registered in pyproject.toml.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from neo4j import Driver, GraphDatabase  # tests may import neo4j directly

from graphmem import queries
from graphmem.config import Settings, load_settings
from graphmem.local.neo4j_server import LocalNeo4j
from graphmem.models import Scope
from graphmem.store.probe import bolt_answers

# The scripted models of tests/fakes.py speak A-MEM's joint link protocol (one call, typed links,
# neighbour updates). The pairwise decision, the local model's default, has its own tests
# (tests/integration/test_decisions.py, tests/e2e), which choose it explicitly.
os.environ.setdefault("GRAPHMEM_LINK_DECISION", "joint")
# They also evolve neighbours, which the local model's default leaves off (config.evolution_enabled).
os.environ.setdefault("GRAPHMEM_ENABLE_EVOLUTION", "true")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The e2e tests (the real local model) last: CI compiles llama-server while the others run."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)  # stable: order kept within


@dataclass(frozen=True)
class SessionServer:
    settings: Settings
    managed: bool  # the graphmem-managed local server (its pid is known), not someone else's Neo4j
    started_here: bool  # this test session started it (and stops it at the end)


@pytest.fixture(scope="session")
def neo4j_server() -> Iterator[SessionServer]:
    settings = load_settings()
    local = LocalNeo4j(settings)
    if bolt_answers(settings.neo4j_uri, settings.neo4j_auth, database=settings.neo4j_database, timeout=5.0):
        yield SessionServer(settings, managed=local.pid() is not None, started_here=False)
        return
    result = local.start(timeout=120.0)  # raises LocalServiceError with the server log's tail
    started_here = not result.already_running
    try:
        yield SessionServer(settings, managed=True, started_here=started_here)
    finally:
        if started_here:
            local.stop()


@pytest.fixture(scope="session")
def settings(neo4j_server: SessionServer) -> Settings:
    """Settings pointing at the session's Neo4j."""
    return neo4j_server.settings


@pytest.fixture(scope="session")
def neo4j_driver(settings: Settings) -> Iterator[Driver]:
    with GraphDatabase.driver(settings.neo4j_uri, auth=settings.neo4j_auth) as driver:
        yield driver


@pytest.fixture
def scope(neo4j_driver: Driver, settings: Settings) -> Iterator[Scope]:
    """A scope no other test uses; its notes and versions are deleted after the test."""
    sc = Scope(user_id=f"test-{uuid.uuid4().hex[:12]}")
    yield sc
    query = queries.load("admin/delete_scope")
    neo4j_driver.execute_query(query.text, query.bind(**sc.params()), database_=settings.neo4j_database)


class Graph:
    """Direct Cypher for assertions: tests check what actually landed in Neo4j."""

    def __init__(self, settings: Settings) -> None:
        self.driver = GraphDatabase.driver(
            settings.neo4j_uri, auth=settings.neo4j_auth, notifications_min_severity="OFF"
        )
        self.database = settings.neo4j_database

    def q(self, cypher: str, **params: Any) -> list[dict[str, Any]]:
        records, _, _ = self.driver.execute_query(cypher, params, database_=self.database)
        return [r.data() for r in records]


@pytest.fixture(scope="session")
def graph(settings: Settings) -> Iterator[Graph]:
    g = Graph(settings)
    yield g
    g.driver.close()
