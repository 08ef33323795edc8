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
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

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
    extra: dict[str, Any] = field(default_factory=dict)


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
                return await bq.index_ids(query_vecs[i % nq], scope, cfg.k, cfg.k * svc.settings.over_fetch_ratio)

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
        "config": {**{k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}, "scope": str(scope)},
        "settings": {
            "over_fetch_ratio": svc.settings.over_fetch_ratio,
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
