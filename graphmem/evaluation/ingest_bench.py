"""`graphmem bench ingest`: notes/s of the A-MEM write path, sequential vs the concurrent ingest.

Against a stub LLM (``llm_stub``, started here in its own process: a fixed latency per call and
schema-shaped JSON replies), each level adds the same synthetic notes into a fresh scope:

- ``sequential``: one ``add`` after another (today's path: two LLM calls per note, one note at a time);
- concurrency N: ``ingest(items, concurrency=N)``.

Per level: notes/s, the speedup over sequential, ``lost`` (items neither stored nor reported
failed, or acknowledged and not stored), duplicates, tokens and LLM calls per note, and the order
rule: every note's link candidates must be the ``neighbour_k`` nearest of the notes before it
(stored or in flight), computed here exactly from the notes' embeddings. The notes are embedded
from their content only (``embed_text_variant=content``) so that evolutions, which change context
and tags, do not move the vectors the check compares. Each level holds at least four waves of
notes (``max(notes, 4 x N)``); the sequential level and level 1 use ``sequential_notes``.

With ``local``: the configured local model instead of the stub, a few notes sequential and at
``local_concurrency``: seconds and tokens per note, and the ratio to the floor,
``prompt tokens / pp rate + output tokens / tg rate``, with pp/tg given (``rates``, e.g. from
``graphmem llm bench``) or measured here on the same server with two short completions.

Nothing here is a test; the numbers depend on the machine's load, which the JSON records.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx
import numpy as np

from graphmem.config import Settings
from graphmem.evaluation.synthetic import sentences
from graphmem.llm import local_base_url
from graphmem.models import EnrichmentStatus, IngestReport, IngestStatus, NoteInput, Scope, Usage
from graphmem.service import AsyncMemoryService
from graphmem.store import BenchQueries

Report = Callable[[str], None]
ModelStart = Callable[[Settings], Any]  # settings -> a ready chat model (graphmem.local.chat_model)

# Cosine difference below which two candidates count as equally near. The vector index scores on
# int8-quantized vectors (cypher/schema.cypher): its cosines were off the exact ones by up to 0.007
# here, so a stored note and an in-flight one (scored exactly) within that distance may swap places.
_TIE = 0.02


@dataclass
class IngestBenchConfig:
    levels: Sequence[int] = (1, 4, 16, 64)
    notes: int = 128
    sequential_notes: int = 24
    latency: float = 0.5
    seed: int = 42
    keep: bool = False
    local: bool = False
    local_notes: int = 16
    local_concurrency: int = 4
    rates: tuple[float, float] | None = None  # pp, tg tokens/s for the local floor
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:6])


def unique_sentences(seed: int, count: int) -> list[str]:
    """``count`` distinct synthetic sentences (equal texts would tie in the order check)."""
    out: list[str] = []
    seen: set[str] = set()
    start = 0
    while len(out) < count:
        for text in sentences(seed, start, count):
            if text not in seen:
                seen.add(text)
                out.append(text)
        start += count
    return out[:count]


def order_violations(
    report: IngestReport, ids: Sequence[str], vectors: np.ndarray, k: int, *, limit: int = 5
) -> tuple[int, int, list[dict[str, Any]]]:
    """Check A-MEM's order rule: each note's candidates must be the k nearest of the notes before it.

    Returns (violations, index misses, examples). A violation: a candidate that is not an earlier
    note, a wrong number of candidates, or a nearer earlier note left out that was still in flight
    (not settled when the candidates were chosen: ``IngestItem.settled_before``). A nearer earlier
    note left out that was already stored is an index miss: the approximate vector index (HNSW)
    missed it, as it may in a sequential ``add``.
    """
    position = {nid: i for i, nid in enumerate(ids)}
    written = [x.status == IngestStatus.ADDED for x in report.items]
    bad = misses = 0
    examples: list[dict[str, Any]] = []
    for i, item in enumerate(report.items):
        if item.status != IngestStatus.ADDED or item.enrichment != EnrichmentStatus.DONE:
            continue
        earlier = [j for j in range(i) if written[j]]
        sims = vectors[earlier] @ vectors[i] if earlier else np.zeros(0)
        want = min(k, len(earlier))
        shown = [position.get(c, -1) for c in item.candidates]
        problem = None
        if len(shown) != want:
            problem = f"{len(shown)} candidates, {want} earlier notes expected"
        elif any(j < 0 or j >= i for j in shown):
            problem = "a candidate that is not an earlier note"
        elif want:
            by_j = dict(zip(earlier, sims.tolist(), strict=True))
            weakest = min(by_j[j] for j in shown)
            missed = [j for j in earlier if j not in shown and by_j[j] > weakest + _TIE]
            in_flight = [j for j in missed if j >= (item.settled_before or 0)]
            if in_flight:
                problem = f"missed nearer earlier notes in flight {in_flight[:3]}"
            elif missed:
                misses += 1
        if problem is not None:
            bad += 1
            if len(examples) < limit:
                examples.append({"index": i, "problem": problem, "candidates": item.candidates})
    return bad, misses, examples


def _stub(latency: float, id_pattern: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphmem.evaluation.llm_stub", "--latency", str(latency), "--id-pattern", id_pattern],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise RuntimeError(f"the stub LLM did not start: {url} {proc.stderr.read() if proc.stderr else ''}"[:800])
    return proc, url


def _stats(base_url: str, reset: bool = True) -> dict[str, Any]:
    r = httpx.get(base_url + "/stats" + ("?reset=1" if reset else ""), timeout=10)
    data: dict[str, Any] = r.json()
    return data


async def _level(
    svc: AsyncMemoryService,
    texts: Sequence[str],
    vectors: np.ndarray | None,
    label: str,
    concurrency: int | None,
    cfg: IngestBenchConfig,
    say: Report,
) -> dict[str, Any]:
    """Add ``texts`` into a fresh scope, sequentially (``concurrency`` None) or concurrently."""
    scope = Scope(user_id=f"bi-{cfg.run_id}-{label}", agent_id="bench", run_id="ingest")
    ids = [f"bi-{cfg.run_id}-{label}-{i:05d}" for i in range(len(texts))]
    items = [NoteInput(content=t, note_id=nid) for t, nid in zip(texts, ids, strict=True)]
    how = "one add after another" if concurrency is None else f"{concurrency} in flight"
    say(f"{label}: {len(items)} notes, {how}")
    load_before = os.getloadavg()
    usage = Usage()
    acked: list[str] = []
    failed: set[str] = set()
    report: IngestReport | None = None
    started = time.perf_counter()
    if concurrency is None:
        for item in items:
            try:
                result = await svc.add(item.content, scope, note_id=item.note_id)
            except Exception as exc:  # counted, as the ingest counts its failed items
                say(f"  add failed: {exc}")
                failed.add(item.note_id or "")
                continue
            usage.add(result.usage)
            acked.append(result.note.id)
    else:
        report = await svc.ingest(items, scope, concurrency=concurrency)
        usage = report.usage
        acked = [x.note_id or "" for x in report.items if x.status == IngestStatus.ADDED]
        failed = {x.note_id or "" for x in report.items if x.status in (IngestStatus.FAILED, IngestStatus.SKIPPED)}
    seconds = time.perf_counter() - started
    stored = await svc.store.existing_ids(ids, scope)
    count = await svc.count(scope)
    row: dict[str, Any] = {
        "level": label,
        "concurrency": concurrency,
        "notes": len(items),
        "added": len(acked),
        "seconds": round(seconds, 3),
        "notes_per_s": round(len(acked) / seconds, 3) if seconds > 0 else None,
        "failed": len(failed),
        # neither stored nor reported failed, or acknowledged and then not found
        "lost": sum(1 for nid in ids if nid not in stored and nid not in failed) + len(set(acked) - stored),
        "duplicates": count - len(stored),
        "tokens_per_note": round(usage.total_tokens / len(acked), 1) if acked else None,
        "input_tokens_per_note": round(usage.input_tokens / len(acked), 1) if acked else None,
        "output_tokens_per_note": round(usage.output_tokens / len(acked), 1) if acked else None,
        "llm_calls_per_note": round(usage.llm_calls / len(acked), 2) if acked else None,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    if report is not None:
        summary = report.summary()
        row["rebased"] = summary["rebased"]
        # notes per write statement (the ordered write step writes consecutive ready notes together)
        together = [x.written_with for x in report.items if x.status == IngestStatus.ADDED and x.written_with]
        row["notes_per_write"] = round(sum(together) / len(together), 2) if together else None
        row["links_per_note"] = round(summary["links"] / len(acked), 2) if acked else None
        row["evolved_per_note"] = round(summary["evolved"] / len(acked), 2) if acked else None
        if vectors is not None:
            bad, misses, examples = order_violations(report, ids, vectors, svc.settings.neighbour_k)
            row["order_violations"] = bad
            row["index_misses"] = misses
            if examples:
                row["order_examples"] = examples
    if not cfg.keep:
        await BenchQueries(svc.store).delete_scope(scope)
    say(
        f"  {row['notes_per_s']} notes/s, lost {row['lost']}, failed {row['failed']}"
        + (f", order violations {row.get('order_violations')}" if report is not None else "")
    )
    return row


async def run_stub_bench(svc: AsyncMemoryService, cfg: IngestBenchConfig, base_url: str, say: Report) -> dict[str, Any]:
    """Every level against the stub (the service's chat model points at it)."""
    biggest = max([cfg.sequential_notes, cfg.notes, *(4 * c for c in cfg.levels)])
    texts = unique_sentences(cfg.seed, biggest)
    vectors = np.asarray(await svc.embedder.aembed_documents(texts), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = []
    _stats(base_url)
    n_seq = cfg.sequential_notes
    rows.append(await _level(svc, texts[:n_seq], None, "sequential", None, cfg, say))
    rows[-1]["stub"] = _stats(base_url)
    for c in cfg.levels:
        n = n_seq if c == 1 else max(cfg.notes, 4 * c)
        rows.append(await _level(svc, texts[:n], vectors[:n], f"c{c}", c, cfg, say))
        rows[-1]["stub"] = _stats(base_url)
    base = rows[0]["notes_per_s"] or 0.0
    for row in rows:
        row["speedup"] = round(row["notes_per_s"] / base, 2) if base and row["notes_per_s"] else None
    at16 = next((r for r in rows if r["concurrency"] == 16), None)
    return {
        "levels": rows,
        "targets": {
            "speedup_at_16": at16["speedup"] if at16 else None,
            "speedup_at_16_ok": bool(at16 and at16["speedup"] and at16["speedup"] >= 10),
            "lost": sum(r["lost"] for r in rows),
            "duplicates": sum(r["duplicates"] for r in rows),
            "order_rule_held": all(r.get("order_violations", 0) == 0 for r in rows),
        },
    }


# --- the real local model -------------------------------------------------------------------------


async def measure_rates(base_url: str, model: str, seed: int = 7) -> dict[str, Any]:
    """pp and tg tokens/s of an OpenAI-compatible local server, from two short completions on
    prompts no cache holds: the server's own ``timings`` (llama-server) when it sends them; else pp
    from a one-token completion (prompt tokens over its wall time, overheads included) and tg from
    the gaps between the streamed tokens of a second one."""
    stamp = int(time.time())
    prompts = [
        " ".join(unique_sentences(seed + stamp + n, 40)) + "\nCount from 1 to 100, separated by spaces." for n in (0, 1)
    ]

    def body(prompt: str, max_tokens: int, stream: bool) -> dict[str, Any]:
        return {
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "temperature": 0,
            "stream": stream,
        }

    async with httpx.AsyncClient(timeout=600) as client:
        t0 = time.perf_counter()
        r = await client.post(base_url + "/chat/completions", json=body(prompts[0], 1, False))
        r.raise_for_status()
        seconds = time.perf_counter() - t0
        first: dict[str, Any] = r.json()
        arrivals: list[float] = []
        timings: dict[str, Any] = {}
        async with client.stream("POST", base_url + "/chat/completions", json=body(prompts[1], 48, True)) as stream:
            stream.raise_for_status()
            async for line in stream.aiter_lines():
                if not line.startswith("data:") or line.strip() == "data: [DONE]":
                    continue
                chunk = json.loads(line[5:])
                timings = chunk.get("timings") or timings
                delta = (chunk.get("choices") or [{}])[0].get("delta") or {}
                if delta.get("content"):
                    arrivals.append(time.perf_counter())
    given = first.get("timings") or {}
    if given.get("prompt_per_second") and timings.get("predicted_per_second"):
        return {
            "pp_per_s": float(given["prompt_per_second"]),
            "tg_per_s": float(timings["predicted_per_second"]),
            "source": "server timings",
        }
    if len(arrivals) < 3:
        raise RuntimeError("the local server streamed too few tokens to measure tg")
    return {
        "pp_per_s": first["usage"]["prompt_tokens"] / seconds,
        "tg_per_s": (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]),
        "source": "wall times: pp from a 1-token completion, tg from streamed token gaps",
    }


def _floor(usage: Usage, rates: dict[str, Any]) -> float:
    return usage.input_tokens / float(rates["pp_per_s"]) + usage.output_tokens / float(rates["tg_per_s"])


async def run_local_bench(svc: AsyncMemoryService, cfg: IngestBenchConfig, say: Report) -> dict[str, Any]:
    """A few notes on the local model, sequential and concurrent, against the floor."""
    s = svc.settings
    if cfg.rates is not None:
        rates: dict[str, Any] = {"pp_per_s": cfg.rates[0], "tg_per_s": cfg.rates[1], "source": "given"}
    else:
        say("measuring pp/tg on the local server")
        rates = await measure_rates(local_base_url(s), s.local_model)
    texts = unique_sentences(cfg.seed + 1, 2 * cfg.local_notes)
    out: dict[str, Any] = {"model": s.local_model, "threads": s.local_llm_threads, "rates": rates, "levels": []}
    for label, concurrency, chunk in (
        ("sequential", None, texts[: cfg.local_notes]),
        (f"c{cfg.local_concurrency}", cfg.local_concurrency, texts[cfg.local_notes :]),
    ):
        scope = Scope(user_id=f"bi-{cfg.run_id}-local-{label}", agent_id="bench", run_id="ingest")
        items = [NoteInput(content=t) for t in chunk]
        say(f"local {label}: {len(items)} notes")
        started = time.perf_counter()
        usage = Usage()
        if concurrency is None:
            for item in items:
                usage.add((await svc.add(item.content, scope)).usage)
            added = len(items)
        else:
            report = await svc.ingest(items, scope, concurrency=concurrency)
            usage, added = report.usage, report.added
        seconds = time.perf_counter() - started
        floor = _floor(usage, rates)
        out["levels"].append(
            {
                "level": label,
                "concurrency": concurrency,
                "notes": added,
                "seconds": round(seconds, 2),
                "seconds_per_note": round(seconds / added, 2) if added else None,
                "notes_per_s": round(added / seconds, 4) if seconds else None,
                "tokens_per_note": round(usage.total_tokens / added, 1) if added else None,
                "input_tokens_per_note": round(usage.input_tokens / added, 1) if added else None,
                "output_tokens_per_note": round(usage.output_tokens / added, 1) if added else None,
                "floor_seconds_per_note": round(floor / added, 2) if added else None,
                # sequential: time per note over its floor; concurrent: wall time over the floor of
                # all its notes, so < 1 means batching beat one-at-a-time compute
                "ratio_to_floor": round(seconds / floor, 2) if floor else None,
                "load_after": [round(x, 2) for x in os.getloadavg()],
            }
        )
        if not cfg.keep:
            await BenchQueries(svc.store).delete_scope(scope)
    seq, par = out["levels"]
    if seq["notes_per_s"] and par["notes_per_s"]:
        out["batched_speedup"] = round(par["notes_per_s"] / seq["notes_per_s"], 2)
    return out


def run_ingest_bench(
    settings: Settings,
    cfg: IngestBenchConfig,
    *,
    local_model: ModelStart | None = None,
    report: Report | None = None,
) -> dict[str, Any]:
    """The stub levels (a stub server started and stopped here), then, with ``cfg.local``, the local
    model (``local_model(settings)`` starts it). Returns the JSON-ready result."""
    say = report or (lambda _m: None)
    result: dict[str, Any] = {
        "kind": "ingest_bench",
        "config": {
            **{k: v for k, v in asdict(cfg).items() if k != "rates"},
            "rates": list(cfg.rates) if cfg.rates else None,
            "neighbour_k": settings.neighbour_k,
            "embed_text_variant": "content",
        },
        "machine": {"cpus": os.cpu_count(), "load_before": [round(x, 2) for x in os.getloadavg()]},
    }
    # the order rule is about the nearest notes: word candidates (full-text) would add others
    bench_settings = settings.model_copy(update={"embed_text_variant": "content", "link_word_candidates": 0})
    pattern = rf"\bbi-{cfg.run_id}-[0-9a-z]+-\d{{5}}\b"
    proc, url = _stub(cfg.latency, pattern)
    try:
        stub_settings = bench_settings.model_copy(
            update={"llm_provider": "compatible", "llm_base_url": url, "llm_model": "stub", "llm_api_key": None}
        )

        async def stub_main() -> dict[str, Any]:
            async with await AsyncMemoryService.create(stub_settings) as svc:
                return await run_stub_bench(svc, cfg, url, say)

        result["stub"] = {"base_url": url, **asyncio.run(stub_main())}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    if cfg.local:
        if local_model is None:
            raise ValueError("the local benchmark needs a way to start the local model")
        local_settings = bench_settings.model_copy(update={"llm_provider": "local"})

        async def local_main() -> dict[str, Any]:
            model = await asyncio.to_thread(local_model, local_settings)
            async with await AsyncMemoryService.create(local_settings, chat_model=model) as svc:
                return await run_local_bench(svc, cfg, say)

        result["local"] = asyncio.run(local_main())
    result["machine"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return result


def read_rates(path: str) -> tuple[float, float]:
    """pp/tg from a JSON file: ``graphmem llm bench``'s ``llm_bench.json`` (its ``rates``) or
    ``{"pp_per_s": ..., "tg_per_s": ...}``."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    rates = data.get("rates") or data
    return float(rates["pp_per_s"]), float(rates["tg_per_s"])
