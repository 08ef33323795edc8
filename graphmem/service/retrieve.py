"""Retrieval: the three search modes over the store port, and the pure ranking functions they use.

vector  HNSW top-k in the scope;
links   vector + one hop along typed links (one round trip: the hop runs inside the vector query);
hybrid  vector and full-text at once, fused by reciprocal rank, + one hop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal

from graphmem.models import LinkedNote, Note, Scope, SearchFilters, SearchHit, SearchMode
from graphmem.ports import NoteStore

RRF_K = 60  # the usual reciprocal-rank-fusion constant: a rank's weight is 1 / (RRF_K + rank)


def as_hits(found: Sequence[tuple[Note, float]], source: Literal["vector", "fulltext"]) -> list[SearchHit]:
    return [SearchHit(note=n, score=s, found_by=[source]) for n, s in found]


def rrf(a: Sequence[SearchHit], b: Sequence[SearchHit], k: int) -> list[SearchHit]:
    """Reciprocal rank fusion of two rankings, top k: scores of different scales are fused by rank,
    not by value. A note in both keeps both sources in ``found_by``."""
    fused: dict[str, SearchHit] = {}
    scores: dict[str, float] = {}
    for ranked in (a, b):
        for rank, hit in enumerate(ranked):
            nid = hit.note.id
            scores[nid] = scores.get(nid, 0.0) + 1.0 / (RRF_K + rank + 1)
            if nid in fused:
                fused[nid].found_by = sorted(set(fused[nid].found_by) | set(hit.found_by))
            else:
                fused[nid] = hit.model_copy()
    ordered = sorted(fused.values(), key=lambda h: scores[h.note.id], reverse=True)[:k]
    for h in ordered:
        h.score = scores[h.note.id]
    return ordered


def attach_links(hits: Sequence[SearchHit], linked: Sequence[LinkedNote]) -> list[SearchHit]:
    """Each hit followed by its linked notes: deduplicated, scored as parent score x link strength."""
    by_parent: dict[str, list[SearchHit]] = {}
    seen: dict[str, SearchHit] = {}
    parent_score = {h.note.id: h.score for h in hits}
    for ln in linked:
        if ln.note.id in seen:
            seen[ln.note.id].linked_via.append(ln.via)
            continue
        hit = SearchHit(
            note=ln.note,
            score=parent_score[ln.from_id] * ln.via.strength,
            found_by=["link"],
            linked_via=[ln.via],
        )
        seen[ln.note.id] = hit
        by_parent.setdefault(ln.from_id, []).append(hit)
    out: list[SearchHit] = []
    for h in hits:
        out.append(h)
        out.extend(by_parent.get(h.note.id, []))
    return out


async def retrieve(
    store: NoteStore,
    query: str,
    embedding: Sequence[float],
    scope: Scope,
    *,
    k: int,
    mode: SearchMode,
    filters: SearchFilters | None,
    over_fetch: int,
    per_hit: int,
) -> list[SearchHit]:
    """The hits of one search (inputs already validated)."""
    if mode == SearchMode.LINKS and per_hit > 0:  # one round trip: the hop runs inside the vector query
        found, linked = await store.vector_search_linked(
            embedding, scope, k, per_hit, filters=filters, over_fetch=over_fetch
        )
        return attach_links(as_hits(found, "vector"), linked)
    vector_search = store.vector_search(embedding, scope, k, filters=filters, over_fetch=over_fetch)
    if mode == SearchMode.HYBRID:  # both queries at once: Neo4j serves them on two threads
        vector_hits, text_hits = await asyncio.gather(
            vector_search, store.fulltext_search(query, scope, k, filters=filters)
        )
        hits = rrf(as_hits(vector_hits, "vector"), as_hits(text_hits, "fulltext"), k)
    else:
        hits = as_hits(await vector_search, "vector")
    if mode != SearchMode.VECTOR and per_hit > 0:
        ids = [h.note.id for h in hits]
        hits = attach_links(hits, await store.expand_links(ids, scope, per_hit, exclude_ids=ids))
    return hits
