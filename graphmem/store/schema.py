"""Schema bootstrap from cypher/schema.cypher: idempotent, constraint first, waits until ONLINE."""

from __future__ import annotations

from graphmem.errors import SchemaMismatchError
from graphmem.store.neo4j_store import Neo4jNoteStore

# Idempotent steps from older schemas, in order (docs/architecture.md, "Schema and migrations").
MIGRATIONS = ("schema/scoped_ids",)  # note ids unique per scope, not across scopes (issue 16)


async def bootstrap_schema(store: Neo4jNoteStore, dimensions: int, *, await_seconds: int = 300) -> None:
    """Create the constraint and indexes if missing and wait until they are ONLINE.

    Raises SchemaMismatchError when the existing vector index was built for other dimensions,
    instead of silently mixing vectors of two embedders.
    """
    info = await store.vector_index_info()
    if info is not None and info["dimensions"] is not None and int(info["dimensions"]) != dimensions:
        raise SchemaMismatchError(
            f"the database's vector index 'note_embedding' has {info['dimensions']} dimensions but the "
            f"configured embedder produces {dimensions}: use another NEO4J_DATABASE, or re-embed "
            f"(export, drop the index, import)"
        )
    available = {"dimensions": dimensions}
    for statement in store.statements("schema"):
        await store.run_schema(statement, **{p: available[p] for p in statement.params})
    # Migrations of databases made by earlier versions, after the schema they move to exists.
    for migration in MIGRATIONS:
        await store.run_schema(store.query(migration))
    await store.run_schema(store.query("schema/await"), seconds=await_seconds)
