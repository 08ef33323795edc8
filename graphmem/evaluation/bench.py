"""Benchmark: bulk import rate, search latency (p50/p95), index recall and store size, by scope size.

One run grows one bench scope through the requested sizes (deterministic synthetic sentences,
imported with embeddings via ``add_many``, plus a FOLLOWS chain in bulk so one-hop expansion has
links to follow) and at each size measures, with warm-up and many repetitions:

- graphmem ``search`` in ``vector`` and ``links`` mode, with the query embedding given (store path
  only) and with the query text (MiniLM embedding included);
- the bare HNSW query returning ids only (the floor under graphmem's search);
- a brute-force Cypher scan (exact cosine over the scope, no index);
- exact NumPy top-k over the same vectors, in process;
- recall@k of graphmem's vector search against the NumPy exact top-k;
- notes/s of the bulk import (embedding included, and the store part alone);
- bytes on disk per note (the Neo4j data directory before and after, when given).

The bench scope is deleted at the end unless ``keep``.

The tenant case (``run_tenant_bench``): 100 tenants in one database, ``t000`` holding half of the
notes, ``t001`` 1 % (the small tenant searched), the rest shared by ``t002``..``t099``; vector and
hybrid p50/p95 and recall@k against the exact in-tenant top-k for the small and the big tenant. On
a 5.26 server it also times the small tenant with the exact scan of small scopes switched off (the
growing over-fetch alone), which is what the scan saves. ``graphmem bench --uri A --uri B`` runs
both on each server (a 5.26 and a 2026 one) with the same notes and queries (``ReusedEmbeddings``:
each text is embedded once).
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from graphmem.embeddings import embedding_dimensions
from graphmem.evaluation.synthetic import sentences
from graphmem.models import Scope, SearchMode, Usage
from graphmem.service import AsyncMemoryService, NoteInput
from graphmem.store import BenchQueries

Report = Callable[[str], None]


def percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values), q)) if len(values) else None


def latency_summary(seconds: Sequence[float]) -> dict[str, float | int | None]:
    ms = [s * 1000 for s in seconds]
    return {
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "mean_ms": float(np.mean(ms)) if ms else None,
        "n": len(ms),
    }


def dir_size(path: Path | None) -> dict[str, int] | None:
    """Apparent bytes and allocated bytes of a directory tree."""
    if path is None or not path.is_dir():
        return None
    apparent = allocated = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            apparent += st.st_size
            allocated += getattr(st, "st_blocks", 0) * 512
    return {"apparent": apparent, "allocated": allocated}


def store_dirs(data_dir: Path | None, database: str) -> dict[str, Path | None]:
    if data_dir is None:
        return {"databases": None, "transactions": None}
    return {"databases": data_dir / "databases" / database, "transactions": data_dir / "transactions" / database}


@dataclass
class BenchConfig:
    sizes: list[int]
    queries: int = 100  # distinct query sentences, cycled through the repetitions
    repetitions: int = 500  # timed calls per graphmem measurement
    warmup: int = 50
    brute_force_repetitions: int = 20
    brute_force_budget_s: float = 60.0  # stop the brute-force loop after this long (at least 3 calls)
    k: int = 10
    seed: int = 42
    links: bool = True
    keep: bool = False
    data_dir: Path | None = None
    batch_size: int = 1000
    scope_user: str = "bench"
    tenant_notes: int = 0  # the tenant case's total notes (0: not run)
    tenants: int = 100
    extra: dict[str, Any] = field(default_factory=dict)


class ReusedEmbeddings(Embeddings):
    """An embedder that embeds each text once: a bench over several servers gives every server the
    same vectors, and MiniLM's time is spent once (the later servers' import rates are then the
    store's; their ``import.embed_seconds`` is near zero)."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.dimensions = embedding_dimensions(inner)
        self._cache: dict[str, npt.NDArray[np.float32]] = {}

    def _known(self, texts: list[str], fresh: list[list[float]]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        for t, v in zip(todo, fresh, strict=True):
            self._cache[t] = np.asarray(v, dtype=np.float32)
        return [self._cache[t].tolist() for t in texts]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        return self._known(texts, self.inner.embed_documents(todo) if todo else [])

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        return self._known(texts, await self.inner.aembed_documents(todo) if todo else [])

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)  # timed by the bench as the query embedding: never cached

    async def aembed_query(self, text: str) -> list[float]:
        return await self.inner.aembed_query(text)


def bench_id(scope: Scope, i: int) -> str:
    """Note ids are global in Neo4j: derived from the scope, so two bench scopes never collide."""
    return f"{scope.user_id}-{i:08d}"


async def _drain(svc: AsyncMemoryService) -> None:
    """Write search's retrieval statistics outside the timed region."""
    await svc.flush()


async def _timed(
    fn: Callable[[int], Awaitable[Any]],
    reps: int,
    warmup: int,
    svc: AsyncMemoryService,
    budget_s: float | None = None,
) -> tuple[list[float], list[Any]]:
    for i in range(warmup):
        await fn(i)
        await _drain(svc)
    times: list[float] = []
    results: list[Any] = []
    started = time.perf_counter()
    for i in range(reps):
        t0 = time.perf_counter()
        out = await fn(i)
        times.append(time.perf_counter() - t0)
        results.append(out)
        if budget_s is not None and i >= 2 and time.perf_counter() - started > budget_s:
            break
    await _drain(svc)
    return times, results


async def _interleaved(
    fns: dict[str, Callable[[int], Awaitable[Any]]],
    reps: int,
    warmup: int,
    svc: AsyncMemoryService,
) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Time several methods round-robin (rotating which goes first), so load that comes and goes on the
    machine hits them alike instead of whichever happened to run during a busy minute."""
    names = list(fns)
    for i in range(warmup):
        for name in names:
            await fns[name](i)
            await _drain(svc)
    times: dict[str, list[float]] = {n: [] for n in names}
    results: dict[str, list[Any]] = {n: [] for n in names}
    for i in range(reps):
        for j in range(len(names)):
            name = names[(i + j) % len(names)]
            t0 = time.perf_counter()
            out = await fns[name](i)
            times[name].append(time.perf_counter() - t0)
            results[name].append(out)
    await _drain(svc)  # statistics were written every TOUCH_DELAY meanwhile, as in real use
    return times, results


def exact_topk(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k rows of unit vectors most similar to q, best first."""
    sims = matrix @ q
    k = min(k, len(sims))
    part = np.argpartition(-sims, k - 1)[:k]
    return part[np.argsort(-sims[part], kind="stable")]


async def run_bench(svc: AsyncMemoryService, cfg: BenchConfig, *, report: Report | None = None) -> dict[str, Any]:
    """Grow a bench scope through cfg.sizes, measuring at each size; returns the JSON-ready result."""
    say = report or (lambda _m: None)
    sizes = sorted(set(cfg.sizes))
    scope = Scope(user_id=f"{cfg.scope_user}-{cfg.seed}", agent_id="bench", run_id="bench")
    bq = BenchQueries(svc.store)
    dirs = store_dirs(cfg.data_dir, svc.settings.neo4j_database)

    server = await BenchQueries(svc.store).server()
    # The bare index query fetches what graphmem's search fetches first on this line.
    first_ratio = svc.settings.in_index_over_fetch if server["line"] == "2026" else svc.settings.over_fetch_ratio

    started_all = time.perf_counter()
    existing = await svc.count(scope)
    if existing:
        say(f"removing {existing} notes left in {scope} by an earlier run")
        await bq.delete_scope(scope)

    query_texts = sentences(cfg.seed + 7919, 0, cfg.queries)
    query_vecs = await svc.embedder.aembed_documents(query_texts)
    qmat = np.asarray(query_vecs, dtype=np.float32)

    nq = len(query_vecs)
    results: list[dict[str, Any]] = []
    have = 0
    try:
        for size in sizes:
            entry: dict[str, Any] = {"size": size, "loadavg_before": list(os.getloadavg())}
            new = size - have
            # --- bulk import (embedding included) ---
            before = {name: dir_size(p) for name, p in dirs.items()}
            texts = sentences(cfg.seed, have, new)
            items = [
                NoteInput(content=t, note_id=bench_id(scope, have + i), source_id=str(have + i))
                for i, t in enumerate(texts)
            ]
            say(f"size {size}: importing {new} notes")
            spent = Usage()  # the service reports embedding and writing time apart
            t0 = time.perf_counter()
            await svc.add_many(items, scope, batch_size=cfg.batch_size, usage=spent)
            import_s = time.perf_counter() - t0
            embed_s, store_s = spent.embed_seconds, spent.store_seconds
            links_s = 0.0
            links = 0
            if cfg.links:
                pairs = [(bench_id(scope, i), bench_id(scope, i - 1)) for i in range(max(have, 1), size)]
                t0 = time.perf_counter()
                links = await bq.follows_links(pairs, scope, reason="bench chain")
                links_s = time.perf_counter() - t0
            after = {name: dir_size(p) for name, p in dirs.items()}
            have = size
            entry["import"] = {
                "notes": new,
                "seconds": import_s,
                "notes_per_s": new / import_s if import_s else None,
                "embed_seconds": embed_s,
                "store_seconds": store_s,  # embedding and writing overlap, so these add up to more than seconds
                "store_notes_per_s": new / store_s if store_s else None,
                "embed_notes_per_s": new / embed_s if embed_s else None,
                "links": links,
                "links_seconds": links_s,
            }
            disk: dict[str, Any] = {}
            for name in dirs:
                b, a = before[name], after[name]
                if b is not None and a is not None:
                    disk[name] = {
                        "before": b["apparent"],
                        "after": a["apparent"],
                        "delta_bytes_per_note": (a["apparent"] - b["apparent"]) / new,
                        "delta_allocated_per_note": (a["allocated"] - b["allocated"]) / new,
                    }
            entry["disk"] = disk or None

            # --- exact NumPy baseline over the same stored vectors ---
            say(f"size {size}: exporting vectors for the exact baseline")
            ids, _, matrix = await bq.vectors(scope)
            exact_times = []
            exact_ids: list[list[str]] = []
            for qi in range(len(qmat)):
                t0 = time.perf_counter()
                top = exact_topk(matrix, qmat[qi], cfg.k)
                exact_times.append(time.perf_counter() - t0)
                exact_ids.append([ids[j] for j in top])
            entry["numpy_exact"] = latency_summary(exact_times)

            async def vec_emb(i: int) -> list[str]:
                hits = await svc.search(
                    query_texts[i % nq], scope, k=cfg.k, mode=SearchMode.VECTOR, query_embedding=query_vecs[i % nq]
                )
                return [h.note.id for h in hits]

            async def vec_text(i: int) -> int:
                return len(await svc.search(query_texts[i % nq], scope, k=cfg.k, mode=SearchMode.VECTOR))

            async def links_emb(i: int) -> int:
                return len(
                    await svc.search(
                        query_texts[i % nq], scope, k=cfg.k, mode=SearchMode.LINKS, query_embedding=query_vecs[i % nq]
                    )
                )

            async def hybrid_emb(i: int) -> int:  # the default mode: vector and full-text at once, + one hop
                return len(
                    await svc.search(
                        query_texts[i % nq], scope, k=cfg.k, mode=SearchMode.HYBRID, query_embedding=query_vecs[i % nq]
                    )
                )

            async def links_text(i: int) -> int:
                return len(await svc.search(query_texts[i % nq], scope, k=cfg.k, mode=SearchMode.LINKS))

            async def bare(i: int) -> list[str]:
                return await bq.index_ids(query_vecs[i % nq], scope, cfg.k, cfg.k * first_ratio)

            async def brute(i: int) -> list[str]:
                return [x for x, _ in await bq.brute_force(query_vecs[i % nq], scope, cfg.k)]

            say(f"size {size}: timing searches ({cfg.repetitions} repetitions each, interleaved)")
            times, outs = await _interleaved(
                {
                    "vector": vec_emb,
                    "vector_with_embedding": vec_text,
                    "links": links_emb,
                    "links_with_embedding": links_text,
                    "hybrid": hybrid_emb,
                    "index_ids_only": bare,
                },
                cfg.repetitions,
                cfg.warmup,
                svc,
            )
            for name, t in times.items():
                entry[name] = latency_summary(t)
            res, res_l, res_b = outs["vector"], outs["links"], outs["index_ids_only"]
            recall = [len(set(res[i]) & set(exact_ids[i % nq])) / cfg.k for i in range(min(len(res), nq))]
            entry[f"recall@{cfg.k}"] = float(np.mean(recall)) if recall else None
            entry["links"]["mean_notes"] = float(np.mean(res_l)) if res_l else None
            bare_recall = [len(set(res_b[i]) & set(exact_ids[i % nq])) / cfg.k for i in range(min(len(res_b), nq))]
            entry[f"index_ids_recall@{cfg.k}"] = float(np.mean(bare_recall)) if bare_recall else None
            say(f"size {size}: timing the brute-force Cypher scan")
            t, res_bf = await _timed(brute, cfg.brute_force_repetitions, 1, svc, budget_s=cfg.brute_force_budget_s)
            entry["brute_force_cypher"] = latency_summary(t)
            bf_recall = [len(set(res_bf[i]) & set(exact_ids[i % nq])) / cfg.k for i in range(len(res_bf))]
            entry[f"brute_force_recall@{cfg.k}"] = float(np.mean(bf_recall)) if bf_recall else None
            for i in range(3):  # warm-up
                svc.embedder.embed_query(query_texts[i % nq])
            emb_times = []
            for i in range(min(cfg.repetitions, 200)):
                t0 = time.perf_counter()
                svc.embedder.embed_query(query_texts[i % nq])
                emb_times.append(time.perf_counter() - t0)
            entry["query_embedding"] = latency_summary(emb_times)
            entry["loadavg_after"] = list(os.getloadavg())  # other work on the machine skews latencies
            p50_v = entry["vector"]["p50_ms"]
            p50_bf = entry["brute_force_cypher"]["p50_ms"]
            entry["speedup_vs_brute_force"] = p50_bf / p50_v if p50_v and p50_bf else None
            results.append(entry)
            say(
                f"size {size}: vector p50 {entry['vector']['p50_ms']:.2f} ms, links p50 {entry['links']['p50_ms']:.2f} ms, "
                f"brute force p50 {p50_bf:.1f} ms, recall@{cfg.k} {entry[f'recall@{cfg.k}']:.3f}, "
                f"import {entry['import']['notes_per_s']:.0f} notes/s"
            )
    finally:
        deleted = 0
        if not cfg.keep:
            say(f"deleting the bench scope {scope}")
            deleted = await bq.delete_scope(scope)

    return {
        "kind": "bench",
        "server": server,
        "config": {**{k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}, "scope": str(scope)},
        "settings": {
            "over_fetch_ratio": svc.settings.over_fetch_ratio,
            "in_index_over_fetch": svc.settings.in_index_over_fetch,
            "exact_scan_max_notes": svc.settings.exact_scan_max_notes,
            "links_per_hit": svc.settings.links_per_hit,
            "embedder": svc.settings.embedder,
            "embed_batch_size": svc.settings.embed_batch_size,
            "embed_threads": svc.settings.embed_threads,
        },
        "machine": {"cpus": os.cpu_count()},
        "sizes": results,
        "targets": targets(results, cfg.k),
        "deleted": deleted,
        "seconds": time.perf_counter() - started_all,
    }


def targets(results: Sequence[dict[str, Any]], k: int) -> dict[str, Any]:
    """The issue's targets, checked at 100k notes (the largest size measured when 100k was not)."""
    if not results:
        return {}
    at = next((r for r in results if r["size"] == 100_000), results[-1])
    out: dict[str, Any] = {"measured_at_size": at["size"]}
    checks: dict[str, tuple[Any, Callable[[float], bool]]] = {
        "vector_p50_ms<=2": (at["vector"]["p50_ms"], lambda v: v <= 2.0),
        "links_p50_ms<=4": (at["links"]["p50_ms"], lambda v: v <= 4.0),
        "speedup_vs_brute_force>=100": (at.get("speedup_vs_brute_force"), lambda v: v >= 100),
        "import_notes_per_s>=500": (at["import"]["notes_per_s"], lambda v: v >= 500),
    }
    for name, (value, ok) in checks.items():
        out[name] = {"value": value, "met": bool(value is not None and ok(value))}
    return out


def tenant_sizes(total: int, tenants: int) -> list[int]:
    """Notes per tenant: the first holds half, the second 1 % (at least one), the others share the rest."""
    if tenants < 3 or total < 2 * tenants:
        raise ValueError("the tenant case needs at least 3 tenants and 2 notes per tenant")
    big, small = total // 2, max(1, total // 100)
    rest = total - big - small
    share, extra = divmod(rest, tenants - 2)
    return [big, small, *[share + (1 if i < extra else 0) for i in range(tenants - 2)]]


def recall_at(found: Sequence[Sequence[str]], exact: Sequence[Sequence[str]], k: int) -> float | None:
    # A tenant smaller than k has fewer exact hits: all of them found is recall 1.
    values = [
        len(set(f) & set(want)) / max(1, min(k, len(want)))
        for i, f in enumerate(found)
        for want in [exact[i % len(exact)]]
    ]
    return float(np.mean(values)) if values else None


async def run_tenant_bench(
    svc: AsyncMemoryService,
    cfg: BenchConfig,
    *,
    over_fetch_only: AsyncMemoryService | None = None,
    report: Report | None = None,
) -> dict[str, Any]:
    """The tenant case: cfg.tenant_notes notes over cfg.tenants tenants (tenant_sizes), then per searched
    tenant (``small``: 1 %, ``big``: half) vector and hybrid p50/p95 and recall@k against the exact
    top-k within the tenant. ``over_fetch_only``: a service on the same server with the exact scan of
    small scopes off (5.26), timed for the small tenant as ``vector_over_fetch_only``."""
    say = report or (lambda _m: None)
    bq = BenchQueries(svc.store)
    server = await bq.server()
    sizes = tenant_sizes(cfg.tenant_notes, cfg.tenants)
    scopes = [Scope(user_id=f"{cfg.scope_user}-t{i:03d}", agent_id="bench", run_id="bench") for i in range(cfg.tenants)]
    started = time.perf_counter()
    for sc in scopes:  # an interrupted earlier run
        await bq.delete_scope(sc)
    query_texts = sentences(cfg.seed + 7919, 0, cfg.queries)
    query_vecs = await svc.embedder.aembed_documents(query_texts)
    nq = len(query_vecs)
    say(f"tenant case: importing {cfg.tenant_notes} notes into {cfg.tenants} tenants ({sizes[0]} / {sizes[1]} / ...)")
    t0 = time.perf_counter()
    offset = 0
    for sc, n in zip(scopes, sizes, strict=True):
        texts = sentences(cfg.seed + 104_729, offset, n)
        items = [NoteInput(content=t, note_id=bench_id(sc, i)) for i, t in enumerate(texts)]
        await svc.add_many(items, sc, batch_size=cfg.batch_size)
        offset += n
    import_s = time.perf_counter() - t0
    await bq.await_indexes(600)
    out: dict[str, Any] = {
        "server": server,
        "notes": cfg.tenant_notes,
        "tenants": cfg.tenants,
        "import_seconds": import_s,
        "loadavg_before": list(os.getloadavg()),
    }
    try:
        for label, sc in (("small", scopes[1]), ("big", scopes[0])):
            ids, _, matrix = await bq.vectors(sc)
            exact = [[ids[j] for j in exact_topk(matrix, np.asarray(q, dtype=np.float32), cfg.k)] for q in query_vecs]

            def searcher(
                service: AsyncMemoryService, mode: SearchMode, sc: Scope = sc
            ) -> Callable[[int], Awaitable[list[str]]]:
                async def run(i: int) -> list[str]:
                    hits = await service.search(
                        query_texts[i % nq], sc, k=cfg.k, mode=mode, query_embedding=query_vecs[i % nq]
                    )
                    return [h.note.id for h in hits]

                return run

            fns = {"vector": searcher(svc, SearchMode.VECTOR), "hybrid": searcher(svc, SearchMode.HYBRID)}
            if over_fetch_only is not None and label == "small":
                fns["vector_over_fetch_only"] = searcher(over_fetch_only, SearchMode.VECTOR)
            say(f"tenant case: timing the {label} tenant ({len(ids)} notes)")
            times, outs = await _interleaved(fns, cfg.repetitions, cfg.warmup, svc)
            entry: dict[str, Any] = {"tenant": str(sc), "notes": len(ids)}
            for name, t in times.items():
                entry[name] = latency_summary(t)
            entry[f"recall@{cfg.k}"] = recall_at(outs["vector"][:nq], exact, cfg.k)
            if "vector_over_fetch_only" in outs:
                entry[f"over_fetch_only_recall@{cfg.k}"] = recall_at(outs["vector_over_fetch_only"][:nq], exact, cfg.k)
            out[label] = entry
            say(
                f"tenant case, {label}: vector p50 {entry['vector']['p50_ms']:.2f} ms, "
                f"recall@{cfg.k} {entry[f'recall@{cfg.k}']:.3f}"
            )
    finally:
        out["loadavg_after"] = list(os.getloadavg())
        if not cfg.keep:
            say("tenant case: deleting the tenants")
            out["deleted"] = sum([await bq.delete_scope(sc) for sc in scopes])
    out["seconds"] = time.perf_counter() - started
    return out
