"""Retrieval: the three search modes over the store port, and the pure ranking functions they use.

vector  HNSW top-k in the scope;
links   vector + one hop along typed links (one round trip: the hop runs inside the vector query);
hybrid  vector and full-text at once, fused by score (cosine + a bounded full-text boost), + one hop;
        words common in the scope (a speaker's name) are left out of the full-text leg.

links and hybrid rank a pool of candidates that does not depend on k (``pool`` >= k): the hits by their
score, the notes their links reach by parent score x link strength, all in one order; the result is
that order down to the (k+1)-th best hit. So the list for k is a prefix of the list for k + 1, and ``ask``'s
budget, which keeps notes in rank order, never loses a note when k grows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal

from graphmem.models import LinkedNote, Note, Scope, SearchFilters, SearchHit, SearchMode, TextField, TextMatch
from graphmem.ports import NoteStore

# Hybrid's default weight of the full-text leg, in cosine points: the best BM25 match of a query
# gains this much, the others in proportion to their BM25. Tuned on the LoCoMo dev subset (see
# docs/evaluation.md); a note the words match can outrank a note only by less than this.
TEXT_WEIGHT = 0.4
# Query words in more than this share of the scope's notes do not reach the full-text leg: BM25's
# statistics span the whole index, where a speaker's name in half of one conversation looks rare,
# and matching it lifted every turn of that speaker over the turn the question is about.
COMMON_SHARE = 0.1
# The note fields hybrid's full-text leg reads: what the note says and its tags. The LLM's contexts
# and keywords there cost budgeted recall on LoCoMo (their words match questions about other turns;
# docs/evaluation.md, "What search reads"). The link and supersession candidates read every field.
SEARCH_TEXT_FIELDS: tuple[TextField, ...] = ("content", "tags")
# Vector candidates scored before the cut (at least k; full-text: half): fixed, so that the
# rankings for different k nest.
RANK_POOL = 40
# A linked note's score: parent score x link strength x this.
LINK_WEIGHT = 1.0


def as_hits(found: Sequence[tuple[Note, float]], source: Literal["vector", "fulltext"]) -> list[SearchHit]:
    return [SearchHit(note=n, score=s, found_by=[source]) for n, s in found]


def fuse(vector: Sequence[tuple[Note, float]], text: Sequence[TextMatch], weight: float) -> list[SearchHit]:
    """Vector and full-text hits by one score: cosine + ``weight`` x BM25 / (the query's best BM25).

    Reciprocal rank fusion gave the full-text ranking the vector ranking's weight, so a note that
    only shared common words with the query could bury the semantic best; here words lift a note
    by at most ``weight``, and a match only the words found competes with its own cosine (one
    without a cosine cannot be placed and is left out). A note in both keeps both sources.
    """
    hits: dict[str, SearchHit] = {n.id: SearchHit(note=n, score=s, found_by=["vector"]) for n, s in vector}
    best = max((m.score for m in text), default=0.0)
    for m in text:
        boost = weight * m.score / best if best > 0 else 0.0
        hit = hits.get(m.note.id)
        if hit is not None:
            hit.score += boost
            hit.found_by = ["fulltext", "vector"]
        elif m.cosine is not None:
            hits[m.note.id] = SearchHit(note=m.note, score=m.cosine + boost, found_by=["fulltext"])
    return sorted(hits.values(), key=lambda h: (-h.score, h.note.id))


def rank_with_links(
    hits: Sequence[SearchHit], linked: Sequence[LinkedNote], k: int, *, link_weight: float = 1.0
) -> list[SearchHit]:
    """Hits and the notes linked to them in one order by score, down to the (k+1)-th best hit.

    A linked note scores its parent's score x the link's strength x ``link_weight`` (the best over
    its paths) and
    competes on that score with every hit: it precedes the hits it outscores, wherever its parent
    stands. A hit reached by a link too keeps the higher of its two scores. The cut: everything
    that scores above the (k+1)-th hit's own score (all when there are at most k hits), so the k
    best hits, their linked notes that outrank the next hit, and lower hits a link lifted.
    """
    scored: dict[str, SearchHit] = {h.note.id: h.model_copy() for h in hits}
    parent_score = {h.note.id: h.score for h in hits}
    lifted: set[str] = set()  # notes whose score is a link's: at a tie they follow their parent
    for ln in linked:
        if ln.from_id not in parent_score:
            continue
        score = parent_score[ln.from_id] * ln.via.strength * link_weight
        hit = scored.get(ln.note.id)
        if hit is None:
            scored[ln.note.id] = SearchHit(note=ln.note, score=score, found_by=["link"], linked_via=[ln.via])
            lifted.add(ln.note.id)
            continue
        hit.linked_via = [*hit.linked_via, ln.via]
        if "link" not in hit.found_by:
            hit.found_by = sorted({*hit.found_by, "link"})
        if score > hit.score:
            hit.score = score
            lifted.add(ln.note.id)

    def key(h: SearchHit) -> tuple[float, bool, str]:
        return (-h.score, h.note.id in lifted, h.note.id)

    ordered = sorted(scored.values(), key=key)
    own = sorted(hits, key=lambda h: (-h.score, h.note.id))
    if len(own) <= k:
        return ordered
    stop = (-own[k].score, False, own[k].note.id)
    return [h for h in ordered if key(h) < stop]


async def linked_after(
    store: NoteStore, hits: Sequence[SearchHit], scope: Scope, per_hit: int, *, link_weight: float = LINK_WEIGHT
) -> list[SearchHit]:
    """The notes linked to ``hits`` that are not hits themselves, up to ``per_hit`` per hit (its strongest
    links), in the hits' order: what ``ask`` packs after every hit. Unlike ``rank_with_links`` they never
    compete with the hits, so a linked note the search also found lower down cannot take a hit's place."""
    ids = [h.note.id for h in hits]
    rank: dict[str, int] = {}
    for i, note_id in enumerate(ids):
        rank.setdefault(note_id, i)
    linked = await store.expand_links(ids, scope, per_hit, exclude_ids=ids)
    out: dict[str, SearchHit] = {}
    # sorted() is stable: within a hit the query's order (strongest link first) stands
    for ln in sorted((ln for ln in linked if ln.from_id in rank), key=lambda ln: rank[ln.from_id]):
        if ln.note.id in out:
            out[ln.note.id].linked_via.append(ln.via)
            continue
        score = hits[rank[ln.from_id]].score * ln.via.strength * link_weight
        out[ln.note.id] = SearchHit(note=ln.note, score=score, found_by=["link"], linked_via=[ln.via])
    return list(out.values())


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
    pool: int = RANK_POOL,
    text_weight: float = TEXT_WEIGHT,
    link_weight: float = LINK_WEIGHT,
    common_share: float = COMMON_SHARE,
    text_fields: Sequence[TextField] = SEARCH_TEXT_FIELDS,
) -> list[SearchHit]:
    """The hits of one search (inputs already validated); the full-text leg reads ``text_fields``."""
    if mode == SearchMode.VECTOR or (mode == SearchMode.LINKS and per_hit <= 0):
        return as_hits(await store.vector_search(embedding, scope, k, filters=filters, over_fetch=over_fetch), "vector")
    size = max(k, pool)
    if mode == SearchMode.LINKS:  # one round trip: the hop runs inside the vector query
        found, linked = await store.vector_search_linked(
            embedding, scope, size, per_hit, filters=filters, over_fetch=over_fetch
        )
        return rank_with_links(as_hits(found, "vector"), linked, k, link_weight=link_weight)
    # hybrid: both queries at once (Neo4j serves them on two threads). The full-text leg is half the
    # pool whatever k is: its deeper matches cost recall on LoCoMo, and a leg that grew with k would
    # change the ranking of the first candidates (the lists must nest across k).
    share = common_share if common_share < 1.0 else None
    vector_hits, text_hits = await asyncio.gather(
        store.vector_search(embedding, scope, size, filters=filters, over_fetch=over_fetch),
        store.fulltext_search(
            query,
            scope,
            max(1, pool // 2),
            filters=filters,
            embedding=embedding,
            common_share=share,
            fields=text_fields,
        ),
    )
    hits = fuse(vector_hits, text_hits, text_weight)
    # Links may reach other hits: a hit's neighbour deep in the pool rises to its parent's score.
    linked = await store.expand_links([h.note.id for h in hits], scope, per_hit, exclude_ids=[]) if per_hit > 0 else []
    return rank_with_links(hits, linked, k, link_weight=link_weight)
