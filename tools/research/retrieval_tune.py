"""Research harness for issue 14: tune hybrid ranking and budget packing offline on LoCoMo.

`cache` reads, once, what the store gives for each question of a scope built by
`graphmem eval retrieval` (the notes, their vectors, the links, and full-text rows for several
query rewrites); `sim` replays rankings over that cache in pure Python (exact cosines instead of
HNSW), so a sweep of fusion and packing choices takes seconds instead of an eval run each.
Numbers reported as results come from `graphmem eval retrieval`, never from this file.

    python tools/research/retrieval_tune.py cache --data locomo-dev.json --out cache.pkl
    python tools/research/retrieval_tune.py sim --cache cache.pkl --conversations conv-26,conv-30,conv-41
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.retrieval import scope_for
from graphmem.models import LinkedNote, LinkedVia, LinkType, Note, SearchHit, TextMatch
from graphmem.service.answer_context import build_context
from graphmem.service.retrieve import fuse, rank_with_links

_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')
_WORD = re.compile(r"\w+", re.UNICODE)


def lucene_of(words: Sequence[str]) -> str | None:
    words = list(words)[:32]
    return " OR ".join(_LUCENE_SPECIAL.sub(r"\\\1", w) for w in words) if words else None


# Words that shape a question; a stop list with them was tried ("stop") and not kept.
QUESTION_WORDS = frozenset(
    ["kind", "kinds", "type", "types", "sort", "many", "much", "ever", "likely", "might", "may", "mention", "mentioned"]
)


def rewrites() -> dict[str, Callable[[str], str | None]]:
    """The query rewrites the cache holds full-text rows for (names are the cache's keys)."""
    from graphmem.store.fulltext import LUCENE_STOP_WORDS, lucene_query

    with_question = LUCENE_STOP_WORDS | QUESTION_WORDS

    def plain(q: str) -> str | None:
        return lucene_of(_WORD.findall(q))

    def stop(q: str) -> str | None:
        return lucene_of([w for w in _WORD.findall(q) if w.lower() not in with_question])

    def stop_min(q: str) -> str | None:  # the analyzer's own 33 words only (what 'english' drops)
        lucene33 = {"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it"}
        lucene33 |= {"no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these"}
        lucene33 |= {"they", "this", "to", "was", "will", "with"}
        return lucene_of([w for w in _WORD.findall(q) if w.lower() not in lucene33])

    def snowball(q: str) -> str | None:  # graphmem's list (Snowball + contraction pieces)
        return lucene_query(q)

    return {"plain": plain, "stop": stop, "stop33": stop_min, "snowball": snowball}


# Word shares tried: a query word in more than this share of the scope's notes (and in 3 or more)
# is left out of the full-text query, as the store does with GRAPHMEM_COMMON_WORD_SHARE.
SHARES = (0.05, 0.1, 0.2, 0.3)


def share_rewrite(question: str, texts: Sequence[str], share: float) -> str | None:
    from graphmem.store.fulltext import lucene_of, query_terms

    kept = []
    for w in query_terms(question):
        pattern = re.compile(r"\b" + re.escape(w.lower()) + r"\b")
        n = sum(1 for t in texts if pattern.search(t))
        if n < 3 or n <= share * len(texts):
            kept.append(w)
    return lucene_of(kept)


@dataclass
class Conv:
    sample_id: str
    ids: list[str]
    sources: list[str]
    matrix: np.ndarray
    notes: dict[str, Note]
    links: dict[str, list[tuple[str, float]]]  # note id -> [(neighbour id, strength)], best first
    questions: list[dict[str, Any]] = field(default_factory=list)  # question, category, evidence, qvec, text


async def build_cache(data: Path, out: Path, tag: str, index: str) -> None:
    import os

    from neo4j import GraphDatabase

    from graphmem.config import get_settings
    from graphmem.service import AsyncMemoryService
    from graphmem.store import BenchQueries

    convs = load_locomo(data)
    rw = rewrites()
    here = Path(__file__).with_name("cypher")
    cypher = (here / "fulltext_ids.cypher").read_text()
    driver = GraphDatabase.driver(os.environ["NEO4J_URI"])
    driver.execute_query((here / "fulltext_index_standard.cypher").read_text())
    driver.execute_query("CALL db.awaitIndexes(300)")
    result: dict[str, Conv] = {}
    async with await AsyncMemoryService.create(get_settings()) as svc:
        store: Any = svc.store
        for conv in convs:
            scope = scope_for(tag, conv.sample_id)
            ids, sources, matrix = await BenchQueries(store).vectors(scope)
            notes: dict[str, Note] = {}
            for start in range(0, len(ids), 100):
                for n in await svc.list(scope, limit=100, offset=start):
                    notes[n.id] = n
            rows = await store.run_auto("search/expand_links", ids=ids, **scope.params(), per_hit=50, exclude_ids=[])
            links: dict[str, list[tuple[str, float]]] = {}
            for r in rows:
                links.setdefault(r["from_id"], []).append((r["note"]["id"], float(r["strength"] or 0.5)))
            c = Conv(conv.sample_id, ids, [s or "" for s in sources], matrix, notes, links)
            wanted = set(sources)
            qs = [(q, set(q.evidence) & wanted) for q in conv.questions(categories=(1, 2, 3, 4))]
            qs = [(q, ev) for q, ev in qs if ev]
            qvecs = await svc.embedder.aembed_documents([q.question for q, _ in qs])
            texts = [n.content.lower() for n in notes.values()]
            for (q, ev), qv in zip(qs, qvecs, strict=True):
                text: dict[str, list[tuple[str, float]]] = {}
                queries = {name: fn(q.question) for name, fn in rw.items()}
                queries |= {f"share{f}": share_rewrite(q.question, texts, f) for f in SHARES}
                for name, lucene in queries.items():
                    for idx_name, suffix in ((index, ""), ("note_text_standard", "-std")):
                        if lucene is None:
                            text[name + suffix] = []
                            continue
                        params = {"index": idx_name, "lucene": lucene, "fetch_k": 4096, "k": 200, **scope.params()}
                        got = driver.execute_query(cypher, params).records
                        text[name + suffix] = [(r["id"], float(r["score"])) for r in got]
                c.questions.append(
                    {"question": q.question, "category": q.category, "evidence": ev, "qvec": np.asarray(qv)}
                )
                c.questions[-1]["text"] = text
            result[conv.sample_id] = c
            print(conv.sample_id, len(ids), len(c.questions), file=sys.stderr)
    out.write_bytes(pickle.dumps(result))


# --- simulation ---------------------------------------------------------------------------------


@dataclass
class Cfg:
    name: str = "base"
    fusion: str = "score"  # "rrf" (before issue 14) or "score" (retrieve.fuse: cosine + text boost)
    rewrite: str = "snowball"  # a key of rewrites() or share<f> (the query's words that reach the index)
    index: str = ""  # "" (note_text, 'english') or "-std" (the 'standard' analyzer's index)
    text_weight: float = 0.3
    pool: int = 40  # vector candidates (k when k is larger)
    text_pool: int = 10  # full-text candidates (fixed: a leg that grew with k broke the nesting)
    link_weight: float = 1.0
    per_hit: int = 3
    exclude_hits: bool = False  # links of a hit skip notes already in the pool (as the store does)
    cut: str = "kth"  # "kth": retrieve.rank_with_links; "pos": before issue 14 (hit, its links, next hit...)
    extra: dict[str, Any] = field(default_factory=dict)


def _hit(c: Conv, nid: str, score: float) -> SearchHit:
    return SearchHit(note=c.notes[nid], score=score, found_by=["vector"])


def _turn(n: Note) -> tuple[int, int]:
    """(session, turn) of a LoCoMo note's source id 'D3:12'."""
    s, _, i = (n.source_id or "D0:0")[1:].partition(":")
    return (int(s), int(i))


def rank(c: Conv, q: dict[str, Any], k: int, cfg: Cfg, cos_all: np.ndarray) -> list[str]:
    """The ids a search returns, replayed with the service's own ranking functions."""
    idx = {nid: i for i, nid in enumerate(c.ids)}
    pool = max(k, cfg.pool) if cfg.cut == "kth" else k
    vorder = np.argsort(-cos_all, kind="stable")[:pool]
    vec = [(c.notes[c.ids[j]], float(cos_all[j])) for j in vorder]
    text = [t for t in q["text"][cfg.rewrite + cfg.index] if t[0] in idx][: cfg.text_pool]
    if cfg.fusion == "rrf":
        scores: dict[str, float] = {}
        for ranked in ([n.id for n, _ in vec], [nid for nid, _ in text]):
            for r, nid in enumerate(ranked):
                scores[nid] = scores.get(nid, 0.0) + 1.0 / (61 + r)
        hits = [_hit(c, n, scores[n]) for n in sorted(scores, key=lambda n: -scores[n])][:pool]
    else:
        matches = [TextMatch(c.notes[nid], bm, float(cos_all[idx[nid]])) for nid, bm in text]
        hits = fuse(vec, matches, cfg.text_weight)[: max(pool, len(vec))]
    ids = {h.note.id for h in hits}
    linked: list[LinkedNote] = []
    for h in hits:
        got = [(m, s) for m, s in c.links.get(h.note.id, []) if not (cfg.exclude_hits and m in ids)]
        for m, s in got[: cfg.per_hit]:
            if "prev_weight" in cfg.extra and _turn(c.notes[m]) < _turn(h.note):
                s *= cfg.extra["prev_weight"]  # the earlier turn of the two (research only)
            via = LinkedVia(from_id=h.note.id, type=LinkType.FOLLOWS, strength=s)
            linked.append(LinkedNote(from_id=h.note.id, via=via, note=c.notes[m]))
    if cfg.cut == "pos":  # before issue 14: each hit followed by its links, in hit order
        out: list[str] = []
        seen: set[str] = set()
        for h in hits[:k]:
            for nid in [h.note.id] + [ln.note.id for ln in linked if ln.from_id == h.note.id]:
                if nid not in seen:
                    seen.add(nid)
                    out.append(nid)
        return out
    return [h.note.id for h in rank_with_links(hits, linked, k, link_weight=cfg.link_weight)]


def simulate(
    cache: dict[str, Conv], convs: Sequence[str], cfg: Cfg, ks: Sequence[int], budget: int = 1000
) -> dict[str, Any]:
    rec: dict[int, list[float]] = {k: [] for k in ks}
    brec: dict[int, list[float]] = {k: [] for k in ks}
    btok: dict[int, list[int]] = {k: [] for k in ks}
    ntok: dict[int, list[int]] = {k: [] for k in ks}
    cat_b: dict[tuple[int, int], list[float]] = {}
    for cid in convs:
        c = cache[cid]
        src = {nid: s for nid, s in zip(c.ids, c.sources, strict=True)}
        for q in c.questions:
            cos_all = c.matrix @ q["qvec"]
            for k in ks:
                found = rank(c, q, k, cfg, cos_all)
                notes = [c.notes[n] for n in found]
                ev = q["evidence"]
                rec[k].append(len(ev & {src[n] for n in found}) / len(ev))
                ctx = build_context(notes, budget)
                got = {src[found[i]] for i in ctx.used}
                br = len(ev & got) / len(ev)
                brec[k].append(br)
                btok[k].append(ctx.tokens)
                ntok[k].append(len(found))
                cat_b.setdefault((q["category"], k), []).append(br)
    return {
        "recall": {k: float(np.mean(v)) for k, v in rec.items()},
        "budget": {k: float(np.mean(v)) for k, v in brec.items()},
        "tokens": {k: float(np.mean(v)) for k, v in btok.items()},
        "notes": {k: float(np.mean(v)) for k, v in ntok.items()},
        "cat": {f"{c}@{k}": float(np.mean(v)) for (c, k), v in sorted(cat_b.items())},
        "n": len(rec[ks[0]]),
    }


def _baseline() -> list[Cfg]:
    return [
        Cfg("before: rrf, all words, hit then its links", fusion="rrf", rewrite="plain", cut="pos"),
        Cfg("rrf, stop words, hit then its links", fusion="rrf", rewrite="stop", cut="pos"),
        Cfg("rrf, stop words, by score, pool 40", fusion="rrf", rewrite="stop"),
        Cfg("score w=.15, stop words, by score, pool 40"),
        Cfg("rrf, stop words, by score, pool 40, links may be hits", fusion="rrf", exclude_hits=False),
        Cfg("score w=.15, stop words, by score, pool 40, links may be hits", exclude_hits=False),
    ]


def _rewrite() -> list[Cfg]:
    return [
        Cfg(f"score, {r}{i}", rewrite=r, index=i) for r in ("plain", "stop33", "snowball", "stop") for i in ("", "-std")
    ]


def _weight() -> list[Cfg]:
    out = [Cfg(f"w={w} lw=1", text_weight=w) for w in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0)]
    return out + [Cfg(f"w={w} lw=.95", text_weight=w, link_weight=0.95) for w in (0.1, 0.15, 0.2, 0.3, 0.4, 0.5)]


def _links() -> list[Cfg]:
    out = [Cfg(f"per_hit={n}", per_hit=n) for n in (0, 1, 2, 3, 5)]
    out += [Cfg("per_hit=3, links skip pool notes", exclude_hits=True)]
    return out + [Cfg(f"pool={p}", pool=p) for p in (10, 20, 40, 80)]


def _grid() -> list[Cfg]:
    out = []
    for tp in (10, 20, 40):
        for lw in (1.0, 0.95, 0.9):
            out.append(Cfg(f"text_pool={tp} link_weight={lw}", text_pool=tp, link_weight=lw))
    return out


def _check() -> list[Cfg]:
    return [
        Cfg("before: rrf, all words, hit then its links", fusion="rrf", rewrite="plain", cut="pos"),
        Cfg("chosen: score w=.3, stop words, text_pool 20"),
        Cfg("text_pool 10", text_pool=10),
        Cfg("stop words without question words", rewrite="snowball"),
        Cfg("analyzer 'standard'", index="-std"),
        Cfg("link_weight .95", link_weight=0.95),
    ]


def _direction() -> list[Cfg]:
    out = [Cfg("both turns at parent score")]
    return out + [Cfg(f"earlier turn x{w}", extra={"prev_weight": w}) for w in (0.98, 0.95, 0.9, 0.8)]


def _combined() -> list[Cfg]:
    return [Cfg("text_pool 10 + stop words without question words", text_pool=10, rewrite="snowball")]


def _shares() -> list[Cfg]:
    out = [Cfg("before: all content words, w=.3, text_pool 10")]
    for f in SHARES:
        for w in (0.3, 0.4, 0.5, 0.7):
            for tp in (10, 20):
                out.append(Cfg(f"share {f}, w={w}, text_pool {tp}", rewrite=f"share{f}", text_weight=w, text_pool=tp))
    return out


SWEEPS: dict[str, Callable[[], list[Cfg]]] = {
    "shares": _shares,
    "baseline": _baseline,
    "rewrite": _rewrite,
    "weight": _weight,
    "links": _links,
    "grid": _grid,
    "check": _check,
    "direction": _direction,
    "combined": _combined,
}


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cache")
    c.add_argument("--data", type=Path, required=True)
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--tag", default="raw-full-follows")
    c.add_argument("--index", default="note_text")
    s = sub.add_parser("sim")
    s.add_argument("--cache", type=Path, required=True)
    s.add_argument("--conversations", default="conv-26,conv-30,conv-41")
    s.add_argument("--sweep", default="baseline", help="a name in SWEEPS")
    s.add_argument("--ks", default="1,5,10,20,40")
    a = ap.parse_args()
    if a.cmd == "cache":
        asyncio.run(build_cache(a.data, a.out, a.tag, a.index))
        return
    cache = pickle.loads(a.cache.read_bytes())
    ks = [int(x) for x in a.ks.split(",")]
    convs = [x for x in a.conversations.split(",") if x]
    print(f"| config | {' | '.join(f'b@{k}' for k in ks)} | r@10 | tok@10 | notes@10 | cats b@10 (1/2/3/4) |")
    print("|---" * (len(ks) + 5) + "|")
    for cfg in SWEEPS[a.sweep]():
        r = simulate(cache, convs, cfg, ks)
        cats = "/".join(f"{r['cat'].get(f'{c}@10', float('nan')):.3f}" for c in (1, 2, 3, 4))
        budget = " | ".join(f"{r['budget'][k]:.3f}" for k in ks)
        print(
            f"| {cfg.name} | {budget} | {r['recall'][10]:.3f} | "
            f"{r['tokens'][10]:.0f} | {r['notes'][10]:.1f} | {cats} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
