"""The local LLM's floor and what concurrent requests buy, measured on this machine in one run.

- ``llama_bench``: prompt processing (pp) and generation (tg) rates of a GGUF model from
  llama.cpp's ``llama-bench`` (the cached build of ``graphmem.local.llama_build``).
- ``floor_seconds``: the least time a call can take at those rates,
  ``prompt tokens / pp rate + output tokens / tg rate``. The ingest benchmark divides measured
  seconds per note by it.
- ``run_llm_bench``: both of the above, then the aggregate throughput of 1, 2, 4... concurrent
  A-MEM-sized requests (~600 prompt tokens, ~100 output tokens) against llama-server and against
  the llama-cpp-python server, both running at once and measured level by level in turns, so that
  the machine's load changes hit both alike. On a shared machine read the ratios, not the rates.

Nothing here is a test: ``graphmem llm bench`` runs it and writes JSON and Markdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from graphmem.config import Settings
from graphmem.local.llama_server import ServerKind

Report = Callable[[str], None]


@dataclass(frozen=True)
class LlmRates:
    """Tokens per second of one model on this machine (llama-bench, ``threads`` threads)."""

    pp_per_s: float
    tg_per_s: float
    pp_tokens: int = 512
    tg_tokens: int = 128
    threads: int = 2
    pp_stddev: float = 0.0
    tg_stddev: float = 0.0


def floor_seconds(prompt_tokens: float, output_tokens: float, rates: LlmRates) -> float:
    """The least time one call can take: its prompt at the pp rate plus its output at the tg rate.

    Cached prompt tokens cost nothing, so pass the prompt tokens the server actually evaluated when
    comparing a measurement with its floor.
    """
    if rates.pp_per_s <= 0 or rates.tg_per_s <= 0:
        raise ValueError("rates must be positive")
    return prompt_tokens / rates.pp_per_s + output_tokens / rates.tg_per_s


def parse_llama_bench(output: str, *, threads: int) -> LlmRates:
    """Rates from ``llama-bench -o json`` (one record for the pp test, one for the tg test)."""
    records = json.loads(output)
    pp = next(r for r in records if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0)
    tg = next(r for r in records if r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0)
    return LlmRates(
        pp_per_s=float(pp["avg_ts"]),
        tg_per_s=float(tg["avg_ts"]),
        pp_tokens=int(pp["n_prompt"]),
        tg_tokens=int(tg["n_gen"]),
        threads=threads,
        pp_stddev=float(pp.get("stddev_ts", 0.0)),
        tg_stddev=float(tg.get("stddev_ts", 0.0)),
    )


def llama_bench(
    binary: Path,
    model: Path,
    *,
    threads: int = 2,
    prompt_tokens: int = 512,
    gen_tokens: int = 128,
    repetitions: int = 3,
    timeout: float = 1800.0,
) -> LlmRates:
    """Run ``llama-bench`` on ``model`` and return its pp/tg rates."""
    cmd = [
        str(binary), "-m", str(model), "-t", str(threads), "-p", str(prompt_tokens), "-n", str(gen_tokens),
        "-r", str(repetitions), "-o", "json",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("LLAMA_")}
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"llama-bench failed (exit {result.returncode}): {result.stderr[-800:]}")
    return parse_llama_bench(result.stdout, threads=threads)


# ---------------------------------------------------------------- concurrency

# An A-MEM-sized request: instructions plus a note and its neighbours (~600 prompt tokens with
# Qwen's tokenizer), asking for more than 100 tokens so that every answer is cut at max_tokens.
_PASSAGE = (
    "Caroline went to an LGBTQ support group yesterday and said it was powerful. Melanie painted a "
    "sunrise over the lake and plans to run a charity race next month. Caroline is researching "
    "adoption agencies because she wants to give children a loving home, and she keeps a necklace "
    "from her grandmother as a reminder of where she comes from. Melanie's kids love the beach and "
    "the family camped in the mountains last summer, where they roasted marshmallows and told stories. "
)
BENCH_INSTRUCTIONS = (
    "You maintain a Zettelkasten memory for an AI agent. Read the notes below, then write a numbered "
    "list of at least thirty short facts found in them, one per line, each with its main keyword."
)


def bench_messages(nonce: str, repeats: int = 5) -> list[dict[str, str]]:
    """One request's messages; ``nonce`` first, so no two requests share a cached prefix."""
    notes = "\n".join(f"<note>{_PASSAGE}</note>" for _ in range(repeats))
    return [
        {"role": "system", "content": f"Request {nonce}. {BENCH_INSTRUCTIONS}"},
        {"role": "user", "content": notes},
    ]


@dataclass
class LevelResult:
    """``concurrency`` requests at a time, ``requests`` in all, against one server."""

    server: str
    concurrency: int
    requests: int
    wall_s: float
    prompt_tokens: int
    output_tokens: int
    mean_latency_s: float
    load_1m: float | None = None  # the machine's 1-minute load average when the level started

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.wall_s

    @property
    def output_tokens_per_s(self) -> float:
        return self.output_tokens / self.wall_s

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "requests_per_s": round(self.requests_per_s, 4),
            "output_tokens_per_s": round(self.output_tokens_per_s, 2),
        }


async def _one(client: httpx.AsyncClient, base_url: str, model: str, max_tokens: int) -> tuple[float, int, int]:
    body = {
        "model": model,
        "messages": bench_messages(uuid.uuid4().hex[:12]),
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "seed": 0,
    }
    started = time.perf_counter()
    response = await client.post(f"{base_url}/chat/completions", json=body)
    response.raise_for_status()
    usage = response.json()["usage"]
    return time.perf_counter() - started, int(usage["prompt_tokens"]), int(usage["completion_tokens"])


async def measure_level(
    server: str, base_url: str, model: str, *, concurrency: int, requests: int, max_tokens: int = 100
) -> LevelResult:
    """``requests`` requests in rounds of ``concurrency`` sent together; aggregate throughput."""
    load = os.getloadavg()[0]
    async with httpx.AsyncClient(timeout=httpx.Timeout(3600.0), trust_env=False) as client:
        results: list[tuple[float, int, int]] = []
        started = time.perf_counter()
        for _ in range(max(1, requests // concurrency)):
            results += await asyncio.gather(*(_one(client, base_url, model, max_tokens) for _ in range(concurrency)))
        wall = time.perf_counter() - started
    return LevelResult(
        server=server,
        concurrency=concurrency,
        requests=len(results),
        wall_s=round(wall, 2),
        prompt_tokens=sum(r[1] for r in results),
        output_tokens=sum(r[2] for r in results),
        mean_latency_s=round(sum(r[0] for r in results) / len(results), 2),
        load_1m=round(load, 2),
    )


@dataclass
class LlmBenchResult:
    model: str
    threads: int
    parallel: int
    rates: LlmRates | None
    levels: list[LevelResult] = field(default_factory=list)
    load_before: tuple[float, float, float] | None = None
    load_after: tuple[float, float, float] | None = None
    notes: list[str] = field(default_factory=list)

    def level(self, server: str, concurrency: int) -> LevelResult | None:
        return next((x for x in self.levels if x.server == server and x.concurrency == concurrency), None)

    def ratios(self) -> list[dict[str, Any]]:
        """Per server and level: throughput over the same server's at concurrency 1, and over the
        llama-cpp-python server's at the same level; seconds per request over the floor at level 1."""
        rows = []
        for lv in self.levels:
            base = self.level(lv.server, 1)
            old = self.level("llama-cpp-python", lv.concurrency)
            row: dict[str, Any] = {"server": lv.server, "concurrency": lv.concurrency}
            row["speedup_vs_1"] = round(lv.requests_per_s / base.requests_per_s, 2) if base else None
            row["vs_llama_cpp_python"] = round(lv.requests_per_s / old.requests_per_s, 2) if old else None
            if self.rates is not None and lv.concurrency == 1:
                floor = floor_seconds(lv.prompt_tokens / lv.requests, lv.output_tokens / lv.requests, self.rates)
                row["floor_s"] = round(floor, 2)
                row["latency_over_floor"] = round(lv.mean_latency_s / floor, 2)
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "threads": self.threads,
            "parallel": self.parallel,
            "rates": asdict(self.rates) if self.rates else None,
            "levels": [lv.to_dict() for lv in self.levels],
            "ratios": self.ratios(),
            "load_before": self.load_before,
            "load_after": self.load_after,
            "notes": self.notes,
        }

    def markdown(self) -> str:
        lines = [f"# Local LLM floor and concurrency: {self.model}, {self.threads} threads", ""]
        if self.rates:
            r = self.rates
            lines += [
                f"llama-bench: pp{r.pp_tokens} {r.pp_per_s:.1f} ± {r.pp_stddev:.1f} tok/s, "
                f"tg{r.tg_tokens} {r.tg_per_s:.1f} ± {r.tg_stddev:.1f} tok/s",
                "",
            ]
        lines += [
            f"Load average before / after: {self.load_before} / {self.load_after}; llama-server slots: {self.parallel}.",
            "",
            "| server | concurrent | requests | wall s | req/s | out tok/s | mean latency s | speedup vs 1 "
            "| vs llama-cpp-python | latency / floor | load (1 min) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        ratios = {(x["server"], x["concurrency"]): x for x in self.ratios()}
        for lv in self.levels:
            x = ratios[(lv.server, lv.concurrency)]
            lines.append(
                f"| {lv.server} | {lv.concurrency} | {lv.requests} | {lv.wall_s} | {lv.requests_per_s:.3f} "
                f"| {lv.output_tokens_per_s:.1f} | {lv.mean_latency_s} | {x['speedup_vs_1']} "
                f"| {x['vs_llama_cpp_python']} | {x.get('latency_over_floor', '')} | {lv.load_1m} |"
            )
        lines += ["", *[f"- {n}" for n in self.notes]]
        return "\n".join(lines) + "\n"


@contextlib.contextmanager
def bench_home(settings: Settings) -> Iterator[Path]:
    """A throwaway GRAPHMEM_HOME sharing the real one's model cache and llama.cpp build, so the
    bench's servers never touch the pid file (or the server) of the user's own local LLM."""
    with tempfile.TemporaryDirectory(prefix="graphmem-llm-bench-") as tmp:
        home = Path(tmp)
        for name in ("cache", "llama.cpp"):
            (settings.home / name).mkdir(parents=True, exist_ok=True)
            (home / name).symlink_to(settings.home / name)
        yield home


def run_llm_bench(
    settings: Settings,
    *,
    levels: Sequence[int] = (1, 2, 4),
    requests: int = 4,
    servers: Sequence[ServerKind] = ("llama-server", "llama-cpp-python"),
    ports: Sequence[int] = (8024, 8025),
    max_tokens: int = 100,
    bench_repetitions: int = 3,
    report: Report = lambda _m: None,
    on_update: Callable[[LlmBenchResult], None] = lambda _r: None,
) -> LlmBenchResult:
    """llama-bench for ``settings.local_model``, then each level against every server, in turns.

    ``on_update`` gets the result so far after llama-bench and after every level (the CLI writes
    it out each time, so an interrupted run keeps what it measured)."""
    from graphmem.local.llama_build import LlamaBuild
    from graphmem.local.llm_server import LocalLLM

    threads = settings.local_llm_threads
    result = LlmBenchResult(
        model=settings.local_model, threads=threads, parallel=settings.local_llm_parallel, rates=None
    )
    result.load_before = os.getloadavg()
    build = LlamaBuild(settings.home)
    with contextlib.ExitStack() as stack:
        managers: dict[str, LocalLLM] = {}
        try:
            for kind, port in zip(servers, ports, strict=False):
                home = stack.enter_context(bench_home(settings))  # one state folder (pid file) per server
                s = settings.model_copy(update={"home": home, "local_llm_port": port, "local_llm_server": kind})
                llm = LocalLLM(s, show_progress=False)
                report(f"starting {kind} on port {port}")
                started = llm.start(timeout=600.0)
                if started.server != kind:
                    result.notes.append(f"{kind} unavailable ({started.note}); skipped")
                    llm.stop()
                    continue
                managers[kind] = llm
            model_path = next(iter(managers.values())).ensure_model() if managers else None
            if build.is_built() and model_path is not None and bench_repetitions > 0:
                report(f"llama-bench (pp512, tg128, {bench_repetitions} repetitions)")
                result.rates = llama_bench(
                    build.bench_binary, model_path, threads=threads, repetitions=bench_repetitions
                )
                on_update(result)
            for level in levels:
                for name, llm in managers.items():
                    report(f"{name}: {requests} requests, {level} at a time")
                    lv = asyncio.run(
                        measure_level(
                            name, llm.base_url, llm.model_name, concurrency=level, requests=requests,
                            max_tokens=max_tokens,
                        )
                    )  # fmt: skip
                    result.levels.append(lv)
                    result.load_after = os.getloadavg()
                    on_update(result)
        finally:
            for llm in managers.values():
                llm.stop()
    result.load_after = os.getloadavg()
    return result
