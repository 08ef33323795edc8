"""The adapter's public benchmark API: queries used only by the evaluation and the benchmark
(``cypher/bench/``), run through the store's public ``run``/``run_write``.

Kept apart from ``neo4j_store.py`` so the product's adapter stays small.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from graphmem.models import Scope
from graphmem.store.neo4j_store import Neo4jNoteStore


class BenchQueries:
    """Benchmark and evaluation queries over graphmem's Neo4j note store (its runner, and its bulk
    FOLLOWS write).

    Takes ``object`` and checks it: the evaluation holds the service's store as the port
    (``ports.NoteStore``), which says nothing of Neo4j, and apps may not import the adapter's modules.
    """

    def __init__(self, store: object) -> None:
        if not isinstance(store, Neo4jNoteStore):
            raise TypeError(f"the benchmark queries need graphmem's Neo4j store, got {type(store).__name__}")
        self.store = store

    async def server(self) -> dict[str, str]:
        """The server's name, version, edition, query line and default Cypher language."""
        return await self.store.server()

    async def await_indexes(self, seconds: int) -> None:
        """Wait until every index is ONLINE (after a bulk import, before timing searches)."""
        await self.store.run_schema(self.store.query("schema/await"), seconds=seconds)

    async def brute_force(self, embedding: Sequence[float], scope: Scope, k: int) -> list[tuple[str, float]]:
        """Exact top-k by a Cypher scan of the scope (no index): the baseline the HNSW path is measured against."""
        rows = await self.store.run("bench/brute_force", embedding=list(embedding), k=k, **scope.params())
        return [(r["id"], 2 * float(r["score"]) - 1) for r in rows]

    async def index_ids(self, embedding: Sequence[float], scope: Scope, k: int, fetch_k: int) -> list[str]:
        """The bare HNSW query, ids only (no note conversion): the floor under graphmem's vector search."""
        rows = await self.store.run(
            "bench/index_ids", embedding=list(embedding), k=k, fetch_k=fetch_k, **scope.params()
        )
        return [r["id"] for r in rows]

    async def vectors(
        self, scope: Scope, *, page: int = 5000
    ) -> tuple[list[str], list[str | None], npt.NDArray[np.float32]]:
        """(ids, source ids, matrix of embeddings) of every note of the scope, ordered by id."""
        ids: list[str] = []
        sources: list[str | None] = []
        chunks: list[npt.NDArray[np.float32]] = []
        after = ""
        while True:
            rows = await self.store.run("bench/vectors", after=after, limit=page, **scope.params())
            if not rows:
                break
            after = rows[-1]["id"]
            rows_v = [r for r in rows if r["embedding"] is not None]
            if rows_v:
                ids.extend(r["id"] for r in rows_v)
                sources.extend(r["source_id"] for r in rows_v)
                chunks.append(np.asarray([r["embedding"] for r in rows_v], dtype=np.float32))
            if len(rows) < page:
                break
        matrix = np.vstack(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)
        return ids, sources, matrix

    async def follows_links(
        self, pairs: Sequence[tuple[str, str]], scope: Scope, *, reason: str = "consecutive", strength: float = 0.5
    ) -> int:
        """Bulk FOLLOWS links (source after target); returns the number written."""
        return await self.store.add_follows(pairs, scope, reason=reason, strength=strength)

    async def link_count(self, scope: Scope) -> int:
        rows = await self.store.run("bench/link_count", **scope.params())
        return int(rows[0]["links"]) if rows else 0

    async def delete_scope(self, scope: Scope, *, batch: int = 5000) -> int:
        """Delete every note of a scope in batches (bounded transactions); returns the number deleted."""
        total = 0
        while True:
            rows = await self.store.run_write("bench/delete_scope", batch=batch, **scope.params())
            deleted = int(rows[0]["deleted"]) if rows else 0
            total += deleted
            if deleted < batch:
                return total
