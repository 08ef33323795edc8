"""The floor arithmetic and the parsing of llama-bench's JSON (a trimmed record of the real output)."""

from __future__ import annotations

import json

import pytest

from graphmem.evaluation.llm_floor import (
    LevelResult,
    LlmBenchResult,
    LlmRates,
    bench_messages,
    floor_seconds,
    parse_llama_bench,
)


def record(n_prompt: int, n_gen: int, avg_ts: float, stddev_ts: float) -> dict[str, object]:
    return {
        "build_commit": "0c1e570",
        "model_type": "qwen2 1B Q4_K - Medium",
        "n_threads": 2,
        "n_prompt": n_prompt,
        "n_gen": n_gen,
        "n_depth": 0,
        "avg_ns": 15832045935,
        "avg_ts": avg_ts,
        "stddev_ts": stddev_ts,
        "samples_ts": [avg_ts],
    }


def test_parse_llama_bench() -> None:
    out = json.dumps([record(512, 0, 160.5, 3.2), record(0, 128, 41.0, 0.5)])
    rates = parse_llama_bench(out, threads=2)
    assert rates == LlmRates(
        pp_per_s=160.5, tg_per_s=41.0, pp_tokens=512, tg_tokens=128, threads=2, pp_stddev=3.2, tg_stddev=0.5
    )


def test_floor_is_prompt_at_pp_plus_output_at_tg() -> None:
    rates = LlmRates(pp_per_s=150.0, tg_per_s=25.0)
    assert floor_seconds(600, 100, rates) == pytest.approx(600 / 150 + 100 / 25)  # 4 s + 4 s
    assert floor_seconds(0, 0, rates) == 0
    with pytest.raises(ValueError, match="positive"):
        floor_seconds(1, 1, LlmRates(pp_per_s=0.0, tg_per_s=1.0))


def test_requests_never_share_a_cached_prefix() -> None:
    a, b = bench_messages("aaaa"), bench_messages("bbbb")
    assert a[0]["content"].startswith("Request aaaa.") and a[0]["content"] != b[0]["content"]
    assert a[1] == b[1]  # the same body: the same amount of work


def test_ratios_and_report() -> None:
    def level(server: str, c: int, wall: float) -> LevelResult:
        return LevelResult(server, c, 4, wall, 4 * 600, 4 * 100, wall / 4 * c)

    result = LlmBenchResult(model="m", threads=2, parallel=4, rates=LlmRates(pp_per_s=150.0, tg_per_s=25.0))
    result.levels = [
        level("llama-server", 1, 40.0),
        level("llama-cpp-python", 1, 40.0),
        level("llama-server", 4, 20.0),
        level("llama-cpp-python", 4, 40.0),
    ]
    rows = {(r["server"], r["concurrency"]): r for r in result.ratios()}
    assert rows[("llama-server", 4)]["speedup_vs_1"] == 2.0
    assert rows[("llama-server", 4)]["vs_llama_cpp_python"] == 2.0
    assert rows[("llama-cpp-python", 4)]["speedup_vs_1"] == 1.0
    assert rows[("llama-server", 1)]["floor_s"] == 8.0 and rows[("llama-server", 1)]["latency_over_floor"] == 1.25
    assert "| llama-server | 4 | 4 | 20.0 |" in result.markdown()
    assert json.loads(json.dumps(result.to_dict()))["ratios"]
