"""The evaluation harness end to end against the real Neo4j: retrieval eval, QA eval (scripted LLM), bench.

The data is the tiny synthetic LoCoMo-format fixture (the real LoCoMo is CC BY-NC and never in the repo).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.messages import AIMessage, BaseMessage
from typer.testing import CliRunner

from graphmem.evaluation.bench import BenchConfig, run_bench, run_tenant_bench
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.qa import run_qa_eval
from graphmem.evaluation.qa_systems import QAConfig
from graphmem.evaluation.report import write_outputs
from graphmem.evaluation.retrieval import RetrievalConfig, run_retrieval_eval, scope_for
from graphmem.models import Scope
from graphmem.store.bench_queries import BenchQueries
from tests.fakes import amem_responder, tool_reply

aio = pytest.mark.asyncio(loop_scope="session")

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "locomo_tiny.json"
KS = (1, 5, 10, 50)


@pytest_asyncio.fixture(loop_scope="session")
async def cleanup(make_service: Any) -> AsyncIterator[list[Scope]]:
    """Scopes the test names here are deleted afterwards."""
    scopes: list[Scope] = []
    yield scopes
    svc, _ = await make_service()
    for sc in scopes:
        await BenchQueries(svc.store).delete_scope(sc)


def _tag() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


@aio
async def test_retrieval_eval_on_tiny_fixture(make_service: Any, cleanup: list[Scope], tmp_path: Path) -> None:
    svc, model = await make_service()
    convs = load_locomo(FIXTURE)
    tag = _tag()
    cleanup.extend(scope_for(tag, c.sample_id) for c in convs)
    cfg = RetrievalConfig(ks=KS, tag=tag, follows_links=False)  # the ablation: no links at all
    result = await run_retrieval_eval(svc, convs, cfg)

    assert not model.calls  # LLM-free
    info = result["conversations"]
    assert (info["tiny-1"]["turns"], info["tiny-1"]["added"], info["tiny-1"]["questions"]) == (11, 11, 7)
    assert (info["tiny-2"]["notes"], info["tiny-2"]["questions"]) == (7, 4)
    assert info["tiny-1"]["links_in_scope"] == 0
    modes = result["modes"]
    assert set(modes) == {"vector", "links", "hybrid", "dense", "full"}
    for mode, data in modes.items():
        o = data["overall"]
        assert o["count"] == 11
        recalls = [o[f"recall@{k}"] for k in KS]
        assert all(0.0 <= r <= 1.0 for r in recalls)
        assert recalls == sorted(recalls), mode  # more notes never lose evidence
        assert o["tokens@1"] <= o["tokens@50"]
        assert {"hit@10", "notes@10", "tokens_p95@10", "budget_recall@10"} <= set(o)
        assert set(data["by_category"]) == {"1", "2", "3", "4"}
    assert modes["full"]["overall"]["recall@1"] == 1.0
    assert modes["dense"]["overall"]["recall@50"] == 1.0  # every note is within 50
    assert modes["vector"]["overall"]["notes@5"] == 5.0
    # no links among raw notes: the one-hop mode finds what vector finds
    assert modes["links"]["overall"]["recall@5"] == modes["vector"]["overall"]["recall@5"]
    assert result["target"]["default_k"] == svc.settings.search_k

    again = await run_retrieval_eval(svc, convs[:1], cfg)  # resumable: nothing is stored twice
    assert again["conversations"]["tiny-1"]["added"] == 0
    assert await svc.count(scope_for(tag, "tiny-1")) == 11

    written = write_outputs(result, tmp_path)
    data = json.loads(written["json"].read_text())
    assert "recall@10" in data["modes"]["links"]["overall"]
    assert "Evidence recall@k" in written["markdown"].read_text()
    assert written["plot"].stat().st_size > 1000


@aio
async def test_conversation_turns_follow_each_other_and_expand_one_hop(make_service: Any, cleanup: list[Scope]) -> None:
    svc, _ = await make_service()
    convs = load_locomo(FIXTURE)[:1]
    tag = _tag()
    cleanup.append(scope_for(tag, "tiny-1"))
    result = await run_retrieval_eval(svc, convs, RetrievalConfig(ks=(1, 5), modes=("vector", "links"), tag=tag))
    info = result["conversations"]["tiny-1"]
    assert info["follows_links"] == 9 and info["links_in_scope"] == 9  # (6 - 1) + (5 - 1) consecutive pairs
    vec, links = result["modes"]["vector"]["overall"], result["modes"]["links"]["overall"]
    assert links["notes@1"] > vec["notes@1"] == 1.0
    assert links["recall@1"] >= vec["recall@1"]


@aio
async def test_the_budgeted_measures_follow_what_ask_packs(make_service: Any, cleanup: list[Scope]) -> None:
    # ask's context without linked notes: the search still brings them, the budget measures do not.
    svc, _ = await make_service(answer_links_per_hit=0, answer_fill_links_per_hit=0)
    convs = load_locomo(FIXTURE)[:1]
    tag = _tag()
    cleanup.append(scope_for(tag, "tiny-1"))
    result = await run_retrieval_eval(svc, convs, RetrievalConfig(ks=(1, 5), modes=("vector", "links"), tag=tag))
    vec, links = result["modes"]["vector"]["overall"], result["modes"]["links"]["overall"]
    assert links["notes@1"] > vec["notes@1"] == 1.0
    for k in (1, 5):
        assert links[f"budget_recall@{k}"] == vec[f"budget_recall@{k}"]
        assert links[f"budget_tokens@{k}"] == vec[f"budget_tokens@{k}"]
    assert result["config"]["answer_links_per_hit"] == 0


def _qa_responder() -> Callable[[list[BaseMessage]], AIMessage]:
    base = amem_responder(answer="Pixel")

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if str(messages[0].content).startswith("You grade answers"):
            return tool_reply("JudgeVerdict", {"reason": "same", "label": "CORRECT"})
        return base(messages)

    return respond


@aio
async def test_qa_eval_with_scripted_llm(make_service: Any, cleanup: list[Scope], tmp_path: Path) -> None:
    svc, model = await make_service(_qa_responder())
    convs = load_locomo(FIXTURE)[:1]
    tag = _tag()
    cleanup.append(Scope(user_id=f"locomo-{tag}-tiny-1"))
    cfg = QAConfig(tag=tag, sessions=[1], systems=("memory", "full-context"), judge=True)
    result = await run_qa_eval(svc, convs, cfg, tmp_path)

    ingest = result["ingest"]["tiny-1"]
    assert (ingest["turns"], ingest["added"], ingest["reused"], ingest["errors"]) == (6, 6, 0, 0)
    assert ingest["per_note"]["llm_calls"] > 1  # construction + link/evolution per note
    assert result["questions"] == 4  # questions whose evidence lies in session 1
    for system in ("memory", "full-context"):
        data = result["systems"][system]
        assert data["by_category"]["4"]["count"] == 2
        assert data["by_category"]["4"]["f1"] == pytest.approx(0.5)  # "Pixel" right once, wrong once
        assert data["overall"]["excluded"]["count"] == 4
        assert data["cost"]["overall"]["context_tokens"] > 0
        assert data["cost"]["overall"]["total_tokens"] > 0
        assert data["cost"]["overall"]["judge_accuracy"] == 1.0
    answers = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert len(answers) == 8 and {a["system"] for a in answers} == {"memory", "full-context"}
    assert all(a["prediction"] == "Pixel" for a in answers)

    calls = len(model.calls)
    again = await run_qa_eval(svc, convs, cfg, tmp_path)  # resumable: no new note, no new answer
    assert again["ingest"]["tiny-1"]["reused"] == 6 and again["ingest"]["tiny-1"]["added"] == 0
    assert len(model.calls) == calls
    assert again["systems"]["memory"]["overall"] == result["systems"]["memory"]["overall"]
    assert "LoCoMo QA evaluation" in write_outputs(again, tmp_path)["markdown"].read_text()


@aio
async def test_bench_on_tiny_sizes(make_service: Any, tmp_path: Path) -> None:
    svc, _ = await make_service()
    user = f"benchtest{uuid.uuid4().hex[:6]}"
    cfg = BenchConfig(sizes=[40, 80], queries=5, repetitions=4, warmup=1, brute_force_repetitions=2, scope_user=user)
    result = await run_bench(svc, cfg)
    assert [r["size"] for r in result["sizes"]] == [40, 80]
    for r in result["sizes"]:
        for key in (
            "vector",
            "vector_with_embedding",
            "links",
            "links_with_embedding",
            "index_ids_only",
            "numpy_exact",
            "brute_force_cypher",
            "query_embedding",
        ):
            assert r[key]["p50_ms"] > 0 and r[key]["p95_ms"] >= r[key]["p50_ms"], key
        assert 0.0 <= r["recall@10"] <= 1.0
        assert r["brute_force_recall@10"] == pytest.approx(1.0)  # exact scan = exact NumPy
        assert r["import"]["notes_per_s"] > 0
        assert r["links"]["mean_notes"] > 10  # the FOLLOWS chain adds one-hop notes
    assert result["sizes"][1]["import"]["notes"] == 40 and result["sizes"][1]["import"]["links"] == 40
    assert set(result["targets"]) >= {"vector_p50_ms<=2", "links_p50_ms<=4", "import_notes_per_s>=500"}
    assert result["deleted"] == 80
    assert await svc.count(Scope(user_id=f"{user}-42", agent_id="bench", run_id="bench")) == 0
    written = write_outputs(result, tmp_path)
    assert written["plot"].stat().st_size > 1000


@aio
async def test_the_tenant_case_on_tiny_sizes(make_service: Any, tmp_path: Path) -> None:
    """10 tenants, 300 notes: the small tenant (3 notes) gets all of its notes on either line (5.26: the
    exact scan; 2026: in-index), the over-fetch alone is timed beside it on 5.26, and all is deleted."""
    svc, _ = await make_service()
    over, _ = await make_service(exact_scan_max_notes=0)
    user = f"tenants{uuid.uuid4().hex[:6]}"
    cfg = BenchConfig(sizes=[40], queries=4, repetitions=3, warmup=1, scope_user=user, tenant_notes=300, tenants=10)
    line = (await svc.health())["neo4j"]["line"]
    result = await run_tenant_bench(svc, cfg, over_fetch_only=over if line == "5.26" else None)
    assert result["server"]["line"] == line and result["deleted"] == 300
    assert (result["small"]["notes"], result["big"]["notes"]) == (3, 150)
    assert result["small"]["recall@10"] == 1.0 and result["big"]["recall@10"] > 0.5
    for label in ("small", "big"):
        for key in ("vector", "hybrid"):
            assert result[label][key]["p50_ms"] > 0 and result[label][key]["n"] == 3
    assert ("vector_over_fetch_only" in result["small"]) == (line == "5.26")
    assert await svc.count(Scope(user_id=f"{user}-t001", agent_id="bench", run_id="bench")) == 0
    bench = await run_bench(svc, cfg)  # the sizes and the tenant case in one report
    md = write_outputs({**bench, "tenants": result}, tmp_path)["markdown"].read_text()
    assert "Tenant case: 300 notes, 10 tenants" in md and f"| {line} (" in md


def test_bench_cli_writes_json(tmp_path: Path) -> None:
    from graphmem.interfaces.cli import app

    user = f"benchcli{uuid.uuid4().hex[:6]}"
    res = CliRunner().invoke(
        app,
        [
            "bench",
            "--sizes",
            "200",
            "--repetitions",
            "3",
            "--warmup",
            "1",
            "--queries",
            "3",
            "--brute-reps",
            "2",
            "--scope-user",
            user,
            "--tenant-notes",
            "0",
            "--out",
            str(tmp_path),
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "bench.json").read_text())
    size = data["sizes"][0]
    assert size["size"] == 200 and {"recall@10", "vector", "links", "brute_force_cypher", "import"} <= set(size)
    assert (tmp_path / "bench.md").is_file() and (tmp_path / "latency_vs_size.png").is_file()


def test_bench_cli_refuses_1m_without_flag(tmp_path: Path) -> None:
    from graphmem.interfaces.cli import app

    res = CliRunner().invoke(app, ["bench", "--sizes", "1000000", "--out", str(tmp_path)])
    assert res.exit_code != 0
