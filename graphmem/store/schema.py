"""Schema bootstrap from cypher/schema.cypher: idempotent, constraint first, waits until ONLINE."""

from __future__ import annotations

import logging

from graphmem.errors import SchemaMismatchError
from graphmem.store.neo4j_store import Neo4jNoteStore

log = logging.getLogger(__name__)

# The full-text index's analyzer. Every built-in English analyzer of Neo4j 5.26 and 2026 stops the
# same 33 words (Lucene's list), which keeps "I", "my", "do", "what"; the query side drops a fuller
# stop list (graphmem.store.fulltext). An index made with another analyzer is dropped and rebuilt.
FULLTEXT_ANALYZER = "english"


async def bootstrap_schema(store: Neo4jNoteStore, dimensions: int, *, await_seconds: int = 300) -> None:
    """Create the constraint and indexes if missing and wait until they are ONLINE.

    A full-text index made with another analyzer than ``FULLTEXT_ANALYZER`` is dropped and
    created again (its population runs in the background; the wait below covers it).

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
    await store.run_schema(store.query("schema/await"), seconds=await_seconds)
