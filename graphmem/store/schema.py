"""Schema bootstrap from cypher/schema.cypher and the line's vector index: idempotent, constraint
first, waits until ONLINE; and the migration of a 5.26-style vector index on a 2026 server."""

from __future__ import annotations

import logging
from typing import Any

from neo4j.exceptions import ClientError

from graphmem.errors import SchemaMismatchError
from graphmem.store.runner import Neo4jRunner

log = logging.getLogger(__name__)

# Idempotent steps from older schemas, in order (docs/architecture.md, "Schema and migrations").
MIGRATIONS = ("schema/scoped_ids",)  # note ids unique per scope, not across scopes (issue 16)
SCOPE_PROPERTIES = ("user_id", "agent_id", "run_id")  # what the 2026 index declares with WITH
MIGRATE_COMMAND = "graphmem migrate-index"
# The full-text index's analyzer. Every built-in English analyzer of Neo4j 5.26 and 2026 stops the
# same 33 words (Lucene's list), which keeps "I", "my", "do", "what"; the query side drops a fuller
# stop list (graphmem.store.fulltext). An index made with another analyzer is dropped and rebuilt.
FULLTEXT_ANALYZER = "english"


def needs_migration(line: str | None, info: dict[str, Any] | None) -> bool:
    """A 2026 server holding a vector index without the scope properties (one a 5.26 server, or a
    graphmem older than the 2026 queries, created): SEARCH with the scope filter fails on it (22ND3)."""
    if line != "2026" or info is None:
        return False
    declared = set(info.get("properties") or [])
    return not set(SCOPE_PROPERTIES) <= declared


def _check_dimensions(info: dict[str, Any] | None, dimensions: int) -> None:
    if info is not None and info["dimensions"] is not None and int(info["dimensions"]) != dimensions:
        raise SchemaMismatchError(
            f"the database's vector index 'note_embedding' has {info['dimensions']} dimensions but the "
            f"configured embedder produces {dimensions}: use another NEO4J_DATABASE, or re-embed "
            f"(export, drop the index, import)"
        )


async def bootstrap_schema(
    store: Neo4jRunner, dimensions: int, *, await_seconds: int = 300, migrate: bool = False
) -> None:
    """Create the constraint and indexes if missing and wait until they are ONLINE.

    Raises SchemaMismatchError when the existing vector index was built for other dimensions,
    instead of silently mixing vectors of two embedders, and on a 2026 server whose vector index
    lacks the scope properties, naming the command that migrates it (``migrate=True`` migrates:
    the index is rebuilt, during which vector search has no index, so it is never implicit).

    A full-text index made with another analyzer than ``FULLTEXT_ANALYZER`` is dropped and
    created again (its population runs in the background; the wait below covers it).
    """
    server = await store.server()  # the line decides which vector index file runs
    info = await store.vector_index_info()
    _check_dimensions(info, dimensions)
    if info is not None and needs_migration(server["line"], info):
        if not migrate:
            raise SchemaMismatchError(
                f"the vector index 'note_embedding' on this Neo4j {server['version']} server has no scope "
                f"properties (properties {info['properties']}, provider {info['provider']}): it was created "
                f"for Neo4j 5.26, and the 2026 line's scoped SEARCH cannot use it. Run `{MIGRATE_COMMAND}` once "
                f"(drops and rebuilds the index with WITH [n.user_id, n.agent_id, n.run_id]; vector search is "
                f"unavailable while it rebuilds), or use a 5.26 server"
            )
        await migrate_vector_index(store, dimensions, await_seconds=await_seconds)
    text_index = await store.fulltext_index_info()
    if text_index is not None and text_index["analyzer"] != FULLTEXT_ANALYZER:
        # An index's analyzer cannot change in place; the CREATE below rebuilds it from the notes.
        log.warning(
            "rebuilding full-text index 'note_text': analyzer %s -> %s", text_index["analyzer"], FULLTEXT_ANALYZER
        )
        await store.run_schema(store.query("schema/drop_fulltext_index"))
    available: dict[str, object] = {"dimensions": dimensions, "analyzer": FULLTEXT_ANALYZER}
    for statement in store.statements("schema"):
        await store.run_schema(statement, **{p: available[p] for p in statement.params})
    # Migrations of databases made by earlier versions, after the schema they move to exists.
    for migration in MIGRATIONS:
        await store.run_schema(store.query(migration))
    await _create_vector_index(store, dimensions)
    await store.run_schema(store.query("schema/await"), seconds=await_seconds)


async def _create_vector_index(store: Neo4jRunner, dimensions: int) -> None:
    statement = store.query("schema/vector_index_create")
    try:
        await store.run_schema(statement, dimensions=dimensions)
    except ClientError as exc:
        # A store a 5.26 server wrote is upgraded by its first write transaction on a 2026 server;
        # until then it knows only 5.26's index options, and the failed statement runs the upgrade
        # (docs/neo4j-2026.md, Migrating): the same statement succeeds right after.
        if "unrecognized setting" not in (exc.message or ""):
            raise
        log.info("vector index options refused before the store upgrade (%s); retrying once", exc.code)
        await store.run_schema(statement, dimensions=dimensions)


async def migrate_vector_index(store: Neo4jRunner, dimensions: int, *, await_seconds: int = 3600) -> bool:
    """On a 2026 server: drop a vector index without the scope properties and create the line's one
    (notes and embeddings stay; the index is rebuilt from them), then wait until it is ONLINE.
    Returns whether it migrated (False: nothing to do)."""
    server = await store.server()
    info = await store.vector_index_info()
    _check_dimensions(info, dimensions)
    if not needs_migration(server["line"], info):
        return False
    log.warning("migrating the vector index 'note_embedding' to the 2026 index with the scope properties")
    await store.run_schema(store.query("schema/drop_vector_index"))
    await _create_vector_index(store, dimensions)
    await store.run_schema(store.query("schema/await"), seconds=await_seconds)
    return True
