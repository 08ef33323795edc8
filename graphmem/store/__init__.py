"""The Neo4j adapter (the only package that imports ``neo4j``) and its public API.

``Neo4jNoteStore``, ``Neo4jHistoryStore`` and ``Neo4jItemStore`` implement ``graphmem.ports``; ``open_stores`` is what
``AsyncMemoryService.create`` wires by default. The connection checks (``probe``) serve the local
server manager, ``BenchQueries`` the benchmark and the evaluation.
"""

from __future__ import annotations

from collections.abc import Callable

from graphmem.config import Settings
from graphmem.store.bench_queries import BenchQueries
from graphmem.store.history_store import Neo4jHistoryStore
from graphmem.store.item_store import Neo4jItemStore
from graphmem.store.neo4j_store import Neo4jNoteStore, lucene_query
from graphmem.store.probe import (
    CredentialsRefusedError,
    bolt_answers,
    check_bolt,
    ensure_reachable,
    server_info,
    wait_for_bolt,
)
from graphmem.store.schema import MIGRATE_COMMAND, bootstrap_schema, migrate_vector_index, needs_migration


async def open_stores(
    settings: Settings, dimensions: Callable[[], int] | None = None, *, migrate_index: bool = False
) -> tuple[Neo4jNoteStore, Neo4jHistoryStore, Neo4jItemStore]:
    """Connect (clear error if unreachable; the store learns the server line), then, given
    ``dimensions`` (asked only once Neo4j answered), create the schema for vectors of that size;
    ``migrate_index`` rebuilds a 5.26-style vector index on a 2026 server (else it is refused).
    The driver is closed again on failure."""
    store = Neo4jNoteStore.from_settings(settings)
    try:
        await store.verify()
        if dimensions is not None:
            await bootstrap_schema(store, dimensions(), migrate=migrate_index)
    except BaseException:
        await store.close()
        raise
    return store, Neo4jHistoryStore(store), Neo4jItemStore(store)


__all__ = [
    "MIGRATE_COMMAND",
    "BenchQueries",
    "CredentialsRefusedError",
    "Neo4jHistoryStore",
    "Neo4jItemStore",
    "Neo4jNoteStore",
    "bolt_answers",
    "bootstrap_schema",
    "check_bolt",
    "ensure_reachable",
    "lucene_query",
    "migrate_vector_index",
    "needs_migration",
    "open_stores",
    "server_info",
    "wait_for_bolt",
]
