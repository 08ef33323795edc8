"""The note store's searches: scoped vector search (HNSW over-fetch or an exact scan on 5.26,
SEARCH inside the index on 2026), the one-hop search in one round trip, full-text search with the
scope's common words left out, and the expansion of hits along typed links.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from neo4j import AsyncDriver
from neo4j.exceptions import ClientError

from graphmem import queries
from graphmem.models import TEXT_FIELDS, LinkedNote, Note, Scope, SearchFilters, TextField, TextMatch
from graphmem.store.fulltext import in_fields, lucene_of, query_terms
from graphmem.store.records import filter_params, linked_note_from_record, note_from_record
from graphmem.store.runner import Neo4jRunner, QueryTable, Rows, mapped

log = logging.getLogger(__name__)

_MAX_FETCH = 4096  # above this, the exact in-scope scan is cheaper than a bigger ANN over-fetch
IN_INDEX_OVER_FETCH = 3  # 2026: SEARCH's LIMIT as a multiple of k (recall@10 >= 0.99 at 100k, docs/neo4j-2026.md)
EXACT_SCAN_MAX = 2000  # 5.26: a scope this small is scanned exactly once the first over-fetch came back short
_MAX_FETCH_TEXT = 65536  # full-text rows fetched at most to find k of one scope
# Notes of a scope read to estimate how common a query word is there (a share: a sample does).
_WORD_SHARE_SAMPLE = 1000
# A word in fewer of them is never common: in a small scope one or two notes are already a large
# share, and such a word still tells them apart.
_COMMON_MIN_NOTES = 3
_YIELD_EVERY = 32  # records mapped between two yields to the event loop (a few ms of work)


class NoteSearch(Neo4jRunner):
    """The search queries of the note store, on the query runner.

    Args:
        driver, database, uri, username, resolve: the runner's.
        in_index_over_fetch: 2026: SEARCH's LIMIT as a multiple of k.
        exact_scan_max: 5.26: a scope this small is scanned exactly when the over-fetch came back short.
    """

    def __init__(
        self,
        driver: AsyncDriver,
        database: str,
        uri: str = "",
        *,
        username: str | None = None,
        resolve: QueryTable = queries.for_line,
        in_index_over_fetch: int = IN_INDEX_OVER_FETCH,
        exact_scan_max: int = EXACT_SCAN_MAX,
    ) -> None:
        super().__init__(driver, database, uri, username=username, resolve=resolve)
        self._in_index_over_fetch = in_index_over_fetch
        self._exact_scan_max = exact_scan_max

    def _first_fetch(self, k: int, over_fetch: int, excluded: int) -> int:
        """Candidates of the first index query: on 2026 the in-scope SEARCH LIMIT (3 x k by default,
        the recall the research measured), on 5.26 the global over-fetch before the scope filter."""
        ratio = self._in_index_over_fetch if self._line == "2026" else over_fetch
        return max(k * ratio, k + excluded)

    async def _scan_exactly(self, scope: Scope) -> bool:
        """5.26, after a short over-fetch: is the scope small enough that scoring all of its notes costs
        less than growing the global over-fetch? (about 0.02 ms of server CPU per note against 60-130
        ms for a fetch grown to 2,560 among 100k notes; docs/neo4j-2026.md). On 2026 SEARCH already
        searches only the scope, so the answer is no."""
        if self._line == "2026" or self._exact_scan_max <= 0:
            return False
        rows = await self.run_auto("notes/count", **scope.params())
        return int(rows[0]["count"]) <= self._exact_scan_max

    async def vector_search(
        self,
        embedding: Sequence[float],
        scope: Scope,
        k: int,
        *,
        exclude_ids: Sequence[str] = (),
        filters: SearchFilters | None = None,
        over_fetch: int = 4,
    ) -> list[tuple[Note, float]]:
        """Top-k by cosine inside the scope. 2026: SEARCH filtered by scope inside the index; 5.26: HNSW
        with growing over-fetch, or an exact scan of a small scope; exact scan as the last resort."""
        if k <= 0:
            return []
        base = {
            "embedding": list(embedding),
            "k": k,
            **scope.params(),
            "exclude_ids": list(exclude_ids),
            **filter_params(filters),
        }
        fetch_k = self._first_fetch(k, over_fetch, len(exclude_ids))
        first = True
        while fetch_k <= _MAX_FETCH:
            rows = await self.run_auto("search/vector", fetch_k=fetch_k, **base)
            fetched, hits = _hit_rows(rows, "cosine")
            # Enough hits, or the index has no more to give: done.
            if len(hits) >= k or fetched < fetch_k:
                return await mapped(hits, _scored("cosine"))
            if first and await self._scan_exactly(scope):
                break
            first = False
            fetch_k *= 4
        rows = await self.run_auto("search/vector_exact", **base)
        return await mapped(rows, _scored("cosine"))

    async def vector_search_linked(
        self,
        embedding: Sequence[float],
        scope: Scope,
        k: int,
        per_hit: int,
        *,
        filters: SearchFilters | None = None,
        over_fetch: int = 4,
    ) -> tuple[list[tuple[Note, float]], list[LinkedNote]]:
        """``vector_search`` and ``expand_links`` of its hits in one round trip (the one-hop search mode)."""
        if k <= 0:
            return [], []
        base = {"embedding": list(embedding), "k": k, **scope.params(), "exclude_ids": [], **filter_params(filters)}
        fetch_k = self._first_fetch(k, over_fetch, 0)
        first = True
        while fetch_k <= _MAX_FETCH:
            rows = await self.run_auto("search/vector_links", fetch_k=fetch_k, per_hit=per_hit, **base)
            fetched, hits = _hit_rows(rows, "cosine")
            if len(hits) >= k or fetched < fetch_k:  # the query expanded them: top-k is final
                notes = await mapped(hits, _scored("cosine"))
                return notes, await mapped([x for h in hits for x in h["linked"]], linked_note_from_record)
            if first and await self._scan_exactly(scope):
                break
            first = False
            fetch_k *= 4
        rows = await self.run_auto("search/vector_exact", **base)
        notes = await mapped(rows, _scored("cosine"))
        ids = [n.id for n, _ in notes]
        return notes, await self.expand_links(ids, scope, per_hit, exclude_ids=[])

    async def fulltext_search(
        self,
        text: str,
        scope: Scope,
        k: int,
        *,
        filters: SearchFilters | None = None,
        over_fetch: int = 4,
        embedding: Sequence[float] | None = None,
        common_share: float | None = None,
        fields: Sequence[TextField] = TEXT_FIELDS,
    ) -> list[TextMatch]:
        fields = [f for f in TEXT_FIELDS if f in fields]  # the closed set: never a caller's string
        words = query_terms(text)
        if common_share is not None and words and fields:
            words = await self._uncommon(words, scope, common_share, fields)
        lucene = lucene_of(words)
        if lucene is None or k <= 0 or not fields:
            return []
        if len(fields) < len(TEXT_FIELDS):
            lucene = in_fields(lucene, fields)
        fetch_k = k * over_fetch * 4
        vector = list(embedding) if embedding is not None else None
        while True:
            try:
                rows = await self.run_auto(
                    "search/fulltext",
                    lucene=lucene,
                    fetch_k=fetch_k,
                    k=k,
                    embedding=vector,
                    **scope.params(),
                    **filter_params(filters),
                )
            except ClientError as exc:  # a query Lucene still cannot parse: no full-text hits, not a crash
                log.warning("full-text query rejected: %s", exc.code)
                return []
            fetched, hits = _hit_rows(rows, "score")
            # Enough hits, the index has no more matches, or so many other-scope matches that a
            # bigger fetch costs more than the hits are worth (vector search still covers the scope).
            if len(hits) >= k or fetched < fetch_k or fetch_k >= _MAX_FETCH_TEXT:
                return await mapped(hits, _text_match)
            fetch_k *= 4

    async def _uncommon(
        self, words: Sequence[str], scope: Scope, share: float, fields: Sequence[TextField]
    ) -> list[str]:
        """``words`` less the ones in more than ``share`` of the scope's notes (sampled; in ``fields``)."""
        lowered = sorted({w.lower() for w in words})
        rows = await self.run_auto(
            "search/word_shares", words=lowered, fields=list(fields), sample=_WORD_SHARE_SAMPLE, **scope.params()
        )
        common = {
            r["word"] for r in rows if r["containing"] >= _COMMON_MIN_NOTES and r["containing"] > share * r["notes"]
        }
        return [w for w in words if w.lower() not in common]

    async def expand_links(
        self, ids: Sequence[str], scope: Scope, per_hit: int, exclude_ids: Sequence[str]
    ) -> list[LinkedNote]:
        if not ids or per_hit <= 0:
            return []
        rows = await self.run_auto(
            "search/expand_links", ids=list(ids), **scope.params(), per_hit=per_hit, exclude_ids=list(exclude_ids)
        )
        return await mapped(rows, linked_note_from_record)


def _hit_rows(rows: Rows, score: str) -> tuple[int, Rows]:
    """(rows the index gave, the hit rows best first) of a search query that returns one row per hit
    (one row with a null note when none is kept)."""
    hits = sorted((r for r in rows if r["note"] is not None), key=lambda r: -float(r[score]))
    return (int(rows[0]["fetched"]) if rows else 0), hits


def _scored(key: str) -> Callable[[dict[str, Any]], tuple[Note, float]]:
    return lambda row: (note_from_record(row["note"]), float(row[key]))


def _text_match(row: dict[str, Any]) -> TextMatch:
    cosine = row["cosine"]
    return TextMatch(note_from_record(row["note"]), float(row["score"]), None if cosine is None else float(cosine))
