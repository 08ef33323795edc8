"""The QA harness with its baselines against the real Neo4j and scripted models: memory, the budget curve,
full context (with a model that refuses long prompts as llama-server does, HTTP 400), plain RAG and the
memory without the LLM at write; resuming; the `eval locomo --baseline full-context,rag` command."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import pytest_asyncio
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage
from typer.testing import CliRunner

from graphmem.config import Settings
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.longmemeval import load_longmemeval
from graphmem.evaluation.qa import run_qa_eval
from graphmem.evaluation.qa_systems import QAConfig
from graphmem.evaluation.report import write_outputs
from graphmem.models import Scope
from graphmem.service import AsyncMemoryService
from graphmem.store.bench_queries import BenchQueries
from tests.fakes import ScriptedChatModel, amem_responder, step_of

aio = pytest.mark.asyncio(loop_scope="session")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOCOMO = FIXTURES / "locomo_tiny.json"
LME = FIXTURES / "longmemeval_tiny.json"
BEAM = FIXTURES / "beam_tiny" / "1"


def _tag() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def _scopes(prefix: str, tags: list[str], samples: list[str]) -> list[Scope]:
    return [Scope(user_id=f"{prefix}-{t}-{s}") for t in tags for s in samples]


@pytest_asyncio.fixture(loop_scope="session")
async def cleanup(make_service: Any) -> AsyncIterator[list[Scope]]:
    scopes: list[Scope] = []
    yield scopes
    svc, _ = await make_service()
    for sc in scopes:
        await BenchQueries(svc.store).delete_scope(sc)


def context_too_long(marker: str) -> Callable[[list[BaseMessage]], AIMessage | BaseException]:
    """A model whose server refuses prompts holding ``marker`` as llama-server refuses a prompt longer
    than its slot (HTTP 400), and answers "Pixel" otherwise."""
    base = amem_responder(answer="Pixel")

    def respond(messages: list[BaseMessage]) -> AIMessage | BaseException:
        if step_of(messages) == "answer" and marker in str(messages[-1].content):
            request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
            response = httpx.Response(400, request=request)
            return openai.BadRequestError(
                "request (5171 tokens) exceeds the available context size (4096 tokens)", response=response, body=None
            )
        return base(messages)

    return respond


@aio
async def test_memory_budgets_and_baselines_side_by_side(
    make_service: Any, cleanup: list[Scope], tmp_path: Path
) -> None:
    svc, model = await make_service(amem_responder(answer="Pixel"))
    fc_svc, fc_model = await make_service(context_too_long("Lisbon"))  # tiny-2's conversation "does not fit"
    convs = load_locomo(LOCOMO)
    tag, raw = _tag(), _tag()
    cleanup.extend(_scopes("locomo", [tag, raw], ["tiny-1", "tiny-2"]))
    systems = ("memory", "memory@500", "memory@2000", "full-context", "rag", "memory-no-llm")
    cfg = QAConfig(tag=tag, raw_tag=raw, systems=systems, bootstrap=200)
    result = await run_qa_eval(svc, convs, cfg, tmp_path, full_context_svc=fc_svc)

    assert list(result["systems"]) == list(systems)
    assert result["questions"] == 14
    assert result["ingest"]["tiny-1"]["added"] == 11  # the A-MEM ingest, once, shared by the budget arms
    raw_ingest = result["ingest_raw"]["tiny-1"]
    assert (raw_ingest["turns"], raw_ingest["added"]) == (11, 11)
    raw_scope = Scope(user_id=f"locomo-{raw}-tiny-1")
    assert await svc.count(raw_scope) == 11
    raw_notes = await svc.list(raw_scope, limit=20)
    assert all(n.keywords == [] and n.context == "" for n in raw_notes)  # stored without the LLM

    for system in ("memory", "memory@500", "memory@2000", "rag", "memory-no-llm"):
        cost = result["systems"][system]["cost"]["overall"]
        assert (cost["count"], cost["answered"], cost["failed"]) == (14, 14, 0), system
        assert result["systems"][system]["by_category"]["4"]["count"] == 6
    assert result["systems"]["memory@500"]["cost"]["overall"]["context_tokens"] <= 500
    rag = result["systems"]["rag"]["cost"]["overall"]
    assert 0 < rag["context_tokens"] <= 1000
    arms = result["config"]["arms"]
    assert arms["memory@2000"]["k"] == 2 * svc.settings.answer_k and arms["rag"]["kind"] == "rag"

    # full context: tiny-2 was refused (HTTP 400): failed, reported, never scored
    fc = result["systems"]["full-context"]
    cost = fc["cost"]["overall"]
    assert (cost["count"], cost["answered"], cost["failed"]) == (14, 9, 5)
    assert any("BadRequestError" in m and "exceeds the available context size" in m for m in cost["failure_messages"])
    assert fc["by_category"]["4"]["count"] == 2  # tiny-1's two single-hop questions only
    assert fc["by_category"]["4"]["f1"] == pytest.approx(0.5)  # "Pixel" right once, wrong once
    assert result["full_context"]["tiny-1"]["fits"] and result["full_context"]["tiny-1"]["turns"] == 11
    assert (cost["answers_cache_cold"], cost["answers_cache_warm"]) == (1, 8)  # tiny-2's first was refused
    assert cost["seconds_cache_cold"] > 0
    fc_prompts = [str(m[-1].content) for m in fc_model.calls if step_of(m) == "answer"]
    assert fc_prompts and all(p.index("Ada: Hi Ben!") < p.index("Question:") for p in fc_prompts if "Ada:" in p)

    comps = {(c["a"], c["b"]): c["groups"] for c in result["comparisons"]}
    assert len(comps) == 15  # every pair of 6 systems
    overall = comps[("memory", "full-context")]["overall"]
    assert overall["n"] == 7  # tiny-1's categories 1-4; the failed ones pair with nothing
    assert overall["ci95_low"] <= overall["mean"] <= overall["ci95_high"]
    assert comps[("memory", "memory-no-llm")]["overall"]["n"] == 11

    answers = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert len(answers) == 14 * 6
    assert sum(1 for a in answers if a.get("error")) == 5

    md = write_outputs(result, tmp_path)["markdown"].read_text()
    assert "Systems side by side" in md and "A-MEM (paper)" in md and "18.2" in md
    assert "Budget curve" in md and "Differences between systems" in md
    assert "9/14 (**5 failed**)" in md

    # Resume: nothing stored or answered again, except the failed answers, which are asked again
    calls, fc_calls = len(model.calls), len(fc_model.calls)
    bars: list[tuple[str, int, int]] = []
    again = await run_qa_eval(
        svc, convs, cfg, tmp_path, full_context_svc=fc_svc, progress=lambda *update: bars.append(update)
    )
    # a system's bar starts at the answers held and moves once per answer asked (its rate is this run's)
    assert [(done, total) for label, done, total in bars if label == "answer full-context"] == [
        (n, 14) for n in range(9, 15)
    ]
    assert [done for label, done, _ in bars if label == "answer memory"] == [14]
    assert [(done, total) for label, done, total in bars if label.startswith("answers to ask")] == [
        (n, 5) for n in range(1, 6)
    ]
    assert len(model.calls) == calls
    assert len(fc_model.calls) - fc_calls == 5
    assert again["ingest"]["tiny-1"]["added"] == 0 and again["ingest_raw"]["tiny-1"]["added"] == 0
    assert again["systems"]["memory"]["overall"] == result["systems"]["memory"]["overall"]
    assert again["systems"]["full-context"]["cost"]["overall"]["failed"] == 5  # still refused, still not scored


@aio
async def test_systems_sharing_answers_ask_once_and_both_bars_finish(
    make_service: Any, cleanup: list[Scope], tmp_path: Path
) -> None:
    svc, model = await make_service(amem_responder(answer="Pixel"))
    tag = _tag()
    cleanup.extend(_scopes("locomo", [tag], ["tiny-1", "tiny-2"]))
    budget = svc.settings.context_token_budget  # memory@<the default budget> is the memory itself
    cfg = QAConfig(tag=tag, systems=("memory", f"memory@{budget}"), bootstrap=50)
    bars: list[tuple[str, int, int]] = []
    await run_qa_eval(svc, load_locomo(LOCOMO), cfg, tmp_path, progress=lambda *update: bars.append(update))

    answers = (tmp_path / "answers.jsonl").read_text().splitlines()
    assert len(answers) == 14  # one answer per question, shared by both systems
    assert sum(step_of(m) == "answer" for m in model.calls) == 14
    assert [(d, t) for label, d, t in bars if label.startswith("answers to ask")][-1] == (14, 14)
    for system in ("memory", f"memory@{budget}"):
        got = [done for label, done, _ in bars if label == f"answer {system}"]
        assert got == list(range(15)), system  # from 0 (nothing held) to every question


@aio
async def test_recheck_contexts_asks_again_only_where_the_context_moved(
    make_service: Any, cleanup: list[Scope], tmp_path: Path
) -> None:
    """A stored answer is keyed by the settings and the ingest, not by the database's state; with
    --recheck-contexts a memory answer whose context `ask` no longer gives is asked again."""
    svc, model = await make_service(amem_responder(answer="Pixel"))
    convs = load_locomo(LOCOMO)[:1]
    tag = _tag()
    cleanup.extend(_scopes("locomo", [tag], ["tiny-1"]))
    cfg = QAConfig(tag=tag, systems=("memory",), bootstrap=50)
    first = await run_qa_eval(svc, convs, cfg, tmp_path)
    n = first["questions"]
    asked = sum(step_of(m) == "answer" for m in model.calls)
    assert asked == n and first["contexts_rechecked"] is None

    recheck = QAConfig(tag=tag, systems=("memory",), bootstrap=50, recheck_contexts=True)
    same = await run_qa_eval(svc, convs, recheck, tmp_path)
    assert same["contexts_rechecked"] == {"checked": n, "moved": 0}
    assert sum(step_of(m) == "answer" for m in model.calls) == asked  # nothing moved, nothing asked

    # The scope changes under the stored answers: the tiny conversation's notes all fit the budget, so
    # a new note enters every question's context.
    await svc.add("Pixel the cat sleeps on the piano.", Scope(user_id=f"locomo-{tag}-tiny-1"))
    asked = sum(step_of(m) == "answer" for m in model.calls)
    await run_qa_eval(svc, convs, cfg, tmp_path)  # without the flag: the stored answers are reused
    assert sum(step_of(m) == "answer" for m in model.calls) == asked
    moved = await run_qa_eval(svc, convs, recheck, tmp_path)
    assert moved["contexts_rechecked"] == {"checked": n, "moved": n}
    assert sum(step_of(m) == "answer" for m in model.calls) == asked + n
    records = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert sum(bool(r.get("context_moved")) for r in records) == n == len(records) - n
    assert f"of {n} stored memory answers, {n} had a context" in write_outputs(moved, tmp_path)["markdown"].read_text()
    again = await run_qa_eval(svc, convs, recheck, tmp_path)  # the new answers hold their contexts
    assert again["contexts_rechecked"] == {"checked": n, "moved": 0}


@aio
async def test_full_context_cut_to_the_limit_is_reported(make_service: Any, tmp_path: Path) -> None:
    svc, model = await make_service(amem_responder(answer="Pixel"))
    convs = load_locomo(LOCOMO)[1:]
    cfg = QAConfig(systems=("full-context",), full_context_limit=60, categories=(4,))
    result = await run_qa_eval(svc, convs, cfg, tmp_path)
    info = result["full_context"]["tiny-2"]
    assert not info["fits"] and info["cut_turns"] > 0 and info["tokens"] <= 60
    assert info["cut_sessions"] == [1]
    answers = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert answers and all(a["truncated"] and a["cut_turns"] == info["cut_turns"] for a in answers)
    assert result["systems"]["full-context"]["cost"]["overall"]["truncated"] == 4
    prompts = [str(m[-1].content) for m in model.calls]
    assert all("Lisbon" not in p.split("Question:")[0] for p in prompts)  # the first session was cut
    assert "turns cut" in write_outputs(result, tmp_path)["markdown"].read_text()


@aio
async def test_memory_with_contexts_answers_from_the_same_notes(
    make_service: Any, cleanup: list[Scope], tmp_path: Path
) -> None:
    # memory-with-context: the memory's own ingest, each note's LLM context in the answer prompt (the
    # default leaves it out); memory-no-context is the default itself and shares the memory's answers.
    svc, model = await make_service(amem_responder(answer="Pixel"))
    assert svc.settings.answer_shows_context is False
    convs = load_locomo(LOCOMO)[:1]
    tag = _tag()
    cleanup.extend(_scopes("locomo", [tag], ["tiny-1"]))
    systems = ("memory", "memory-with-context", "memory-no-context")
    result = await run_qa_eval(svc, convs, QAConfig(tag=tag, systems=systems, bootstrap=100), tmp_path)
    assert result["ingest"]["tiny-1"]["added"] == 11  # one ingest for every arm
    n = result["questions"]
    prompts = [str(m[-1].content) for m in model.calls if step_of(m) == "answer"]
    assert len(prompts) == 2 * n  # memory-no-context was not asked again
    assert sum("(context: " in p for p in prompts) == n  # memory-with-context's answers only
    for system in systems:
        cost = result["systems"][system]["cost"]["overall"]
        assert cost["answered"] == n and cost["failed"] == 0
    arms = result["config"]["arms"]
    assert arms["memory-no-context"]["key"] == arms["memory"]["key"] != arms["memory-with-context"]["key"]


@aio
async def test_longmemeval_questions_each_in_their_own_scope(
    make_service: Any, cleanup: list[Scope], tmp_path: Path
) -> None:
    from graphmem.evaluation.longmemeval import CATEGORY_NAMES

    svc, model = await make_service(amem_responder(answer="teal"))
    convs = load_longmemeval(LME)
    raw = _tag()
    cleanup.extend(_scopes("lme", [raw], [c.sample_id for c in convs]))
    cfg = QAConfig(
        systems=("memory-no-llm",),
        raw_tag=raw,
        scope_prefix="lme",
        cat5_prompt="open",
        reference=False,
        category_names=dict(CATEGORY_NAMES),
    )
    result = await run_qa_eval(svc, convs, cfg, tmp_path)
    assert result["questions"] == 4
    data = result["systems"]["memory-no-llm"]
    assert data["by_category"]["4"]["f1"] == pytest.approx(1.0)  # "teal"
    assert {"1", "2", "4", "5-amem", "5-locomo"} <= set(data["by_category"])
    assert await svc.count(Scope(user_id=f"lme-{raw}-tiny0002")) == 4
    prompts = [str(m[-1].content) for m in model.calls if step_of(m) == "answer"]
    assert any("asked on 2023-07-01 12:00" in p for p in prompts)
    md = write_outputs(result, tmp_path)["markdown"].read_text()
    assert "abstention" in md and "A-MEM (paper)" not in md


def test_cli_locomo_with_full_context_and_rag_baselines(
    settings: Settings, embedder: Embeddings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graphmem.local
    from graphmem.interfaces.cli import app
    from graphmem.interfaces.cli import evaluate as cli

    main = ScriptedChatModel(amem_responder(answer="Lisbon"))
    answering = ScriptedChatModel(amem_responder(answer="Lisbon"))  # the local model without its prompt cache
    fc = ScriptedChatModel(amem_responder(answer="Lisbon"))
    started: list[Settings] = []
    stopped: list[bool] = []

    def fc_model(s: Settings) -> tuple[ScriptedChatModel, int | None, Any]:
        started.append(s)
        return fc, None, lambda: stopped.append(True)  # a server that does not say its slot size

    models_started: list[bool] = []

    def local_model(s: Settings) -> ScriptedChatModel:
        models_started.append(s.local_llm_cache_prompt)
        return main if s.local_llm_cache_prompt else answering

    monkeypatch.setattr(graphmem.local, "chat_model", local_model)
    monkeypatch.setattr(cli, "_full_context_model", fc_model)
    monkeypatch.setattr(cli, "_settings", lambda **kw: settings.model_copy(update={"local_llm_port": 18011}))
    tag, raw = _tag(), _tag()
    out = tmp_path / "qa"
    args = ["eval", "locomo", "--data", str(LOCOMO), "-c", "tiny-2", "--tag", tag, "--raw-tag", raw]
    try:
        res = CliRunner().invoke(app, [*args, "--baseline", "full-context,rag", "--sample", "3", "--out", str(out)])
        assert res.exit_code == 0, res.output
        data = json.loads((out / "qa.json").read_text())
        assert list(data["systems"]) == ["memory", "full-context", "rag"]
        assert data["questions"] == 3  # the seeded sample
        for system in data["systems"].values():
            assert system["cost"]["overall"]["answered"] == 3
        server = data["config"]["full_context_server"]  # its own server: 1 slot of 32K on the next port
        assert (server["local_llm_ctx"], server["local_llm_parallel"], server["local_llm_port"]) == (32768, 1, 18012)
        assert started and started[0].local_llm_ctx == 32768
        assert len(stopped) == len(started)  # what the run started, it stops
        assert data["config"]["full_context_limit"] == int((32768 - settings.llm_max_tokens - 300) / 1.15)
        assert data["full_context"]["tiny-2"]["fits"] is True
        # memory and rag answered by the model that processes every prompt whole (repeatable answers);
        # the ingest kept the cached one, and full context its own server with its cache
        assert data["config"]["answer_prompt_cache"] is False
        assert data["config"]["answers_maybe_cached"] == 0
        kept = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
        assert {r["system"]: r.get("prompt_cache") for r in kept} == {
            "memory": False,
            "full-context": None,
            "rag": False,
        }
        assert [step_of(c) for c in answering.calls] == ["answer"] * 6
        assert "answer" not in {step_of(c) for c in main.calls}
        assert [step_of(c) for c in fc.calls] == ["answer"] * 3
        assert {"qa.json", "qa.md", "answers.jsonl", "qa_f1_by_category.png"} <= {p.name for p in out.iterdir()}
        calls = len(main.calls) + len(fc.calls) + len(answering.calls)
        assert sorted(models_started) == [False, True]  # the ingest's model and the answers' one
        res = CliRunner().invoke(app, [*args, "--baseline", "full-context,rag", "--sample", "3", "--out", str(out)])
        assert res.exit_code == 0, res.output
        assert len(main.calls) + len(fc.calls) + len(answering.calls) == calls  # resumed: nothing asked again
        assert len(started) == 1  # ... and no full-context server started to score its answers again
        assert len(models_started) == 2  # nor the local model: nothing needed it
        again = json.loads((out / "qa.json").read_text())["config"]["full_context_server"]
        assert again == data["config"]["full_context_server"]  # the report still says where they came from
        assert "full_context_settings" not in json.loads((out / "qa.json").read_text())["config"]
        # another report from the same answers: the budget curve's default point is the memory's answers
        curve = tmp_path / "curve"
        more = ["--budgets", "1000,2000", "--baseline", "full-context", "--baseline-only", "--sample", "3"]
        res = CliRunner().invoke(app, [*args, *more, "--answers", str(out / "answers.jsonl"), "--out", str(curve)])
        assert res.exit_code == 0, res.output
        curve_data = json.loads((curve / "qa.json").read_text())
        assert list(curve_data["systems"]) == ["memory@1000", "memory@2000", "full-context"]
        assert len(main.calls) + len(fc.calls) + len(answering.calls) == calls + 3  # only memory@2000 (k=20)
        assert not (curve / "answers.jsonl").exists()
        assert "Budget curve" in (curve / "qa.md").read_text()
        # interim scores of a run still going: one rag answer not given yet; nothing is asked or started
        interim = tmp_path / "interim.jsonl"
        rag_lines = [line for line in kept if line["system"] == "rag"]
        interim.write_text("".join(json.dumps(r) + "\n" for r in kept if r is not rag_lines[0]), encoding="utf-8")
        before, n_models = interim.read_bytes(), len(models_started)
        score = ["--baseline", "full-context,rag", "--sample", "3", "--answers", str(interim), "--score-only"]
        res = CliRunner().invoke(app, [*args, *score, "--out", str(tmp_path / "interim")])
        assert res.exit_code == 0, res.output
        partial = json.loads((tmp_path / "interim" / "qa.json").read_text())
        assert partial["partial"] == {
            "questions": 3,
            "scored": 2,
            "missing": {"memory": 0, "full-context": 0, "rag": 1},
        }
        assert {s: v["cost"]["overall"]["answered"] for s, v in partial["systems"].items()} == dict.fromkeys(
            ["memory", "full-context", "rag"], 2
        )  # every system on the same two questions
        assert "Interim scores" in (tmp_path / "interim" / "qa.md").read_text()
        assert len(main.calls) + len(fc.calls) + len(answering.calls) == calls + 3  # nothing asked
        assert len(started) == 1 and len(models_started) == n_models and interim.read_bytes() == before
        res = CliRunner().invoke(app, [*args, *score, "--ingest-only", "--out", str(tmp_path / "interim")])
        assert res.exit_code != 0 and "choose one" in str(res.exception)
        res = CliRunner().invoke(app, [*args, *score, "--recheck-contexts", "--out", str(tmp_path / "interim")])
        assert res.exit_code != 0 and "choose one" in str(res.exception)
        res = CliRunner().invoke(app, [*args, "--baseline", "full-context,mem0", "--out", str(out)])
        assert res.exit_code != 0
    finally:

        async def drop() -> None:
            async with await AsyncMemoryService.create(settings, embedder=embedder) as svc:
                for sc in _scopes("locomo", [tag, raw], ["tiny-2"]):
                    await BenchQueries(svc.store).delete_scope(sc)

        asyncio.run(drop())


@aio
async def test_the_report_counts_the_notes_stored_raw_whichever_run_stored_them(
    make_service: Any, cleanup: list[Scope], tmp_path: Path
) -> None:
    """Notes whose enrichment failed stay raw until `graphmem repair`; a resumed run adds nothing, and
    its report still says how many of the memory's notes are raw."""
    from tests.fakes import text_reply

    base = amem_responder(answer="Lisbon")

    def no_enrichment_for_lighthouses(messages: list[BaseMessage]) -> AIMessage:
        if step_of(messages) == "enrich" and any("lighthouses" in str(m.content) for m in messages):
            return text_reply("I would rather not.")  # no JSON, repairs included: the note is stored raw
        reply = base(messages)
        assert isinstance(reply, AIMessage)
        return reply

    svc, _ = await make_service(no_enrichment_for_lighthouses)
    convs = load_locomo(LOCOMO)[1:]
    tag = _tag()
    cleanup.extend(_scopes("locomo", [tag], ["tiny-2"]))
    cfg = QAConfig(tag=tag, systems=("memory",), ingest_only=True)
    first = (await run_qa_eval(svc, convs, cfg, tmp_path))["ingest"]["tiny-2"]
    assert first["pending"] == first["pending_in_memory"] == 1
    again = (await run_qa_eval(svc, convs, cfg, tmp_path))["ingest"]["tiny-2"]
    assert (again["added"], again["pending"], again["pending_in_memory"]) == (0, 0, 1)
    write_outputs(await run_qa_eval(svc, convs, cfg, tmp_path), tmp_path / "report")
    assert "| 0 / 1 |" in (tmp_path / "report" / "qa.md").read_text()


@aio
async def test_memory_answers_wait_while_the_ingest_is_incomplete(
    make_service: Any, cleanup: list[Scope], tmp_path: Path
) -> None:
    svc, _ = await make_service(amem_responder(answer="Lisbon"), max_content_chars=60)  # some turns fail
    convs = load_locomo(LOCOMO)[1:]
    tag = _tag()
    cleanup.extend(_scopes("locomo", [tag], ["tiny-2"]))
    cfg = QAConfig(tag=tag, systems=("memory", "full-context"))
    result = await run_qa_eval(svc, convs, cfg, tmp_path)
    failed = result["ingest"]["tiny-2"]["errors"]
    assert failed > 0
    assert "tiny-2" in result["skipped"]
    assert result["systems"]["memory"]["by_category"] == {}  # nothing answered on a partial memory
    assert result["systems"]["full-context"]["cost"]["overall"]["answered"] == 5  # the baseline needs no memory
    answers = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert {a["system"] for a in answers} == {"full-context"}
    assert "not answered by the memory in this run" in write_outputs(result, tmp_path)["markdown"].read_text()


def test_cli_beam(settings: Settings, embedder: Embeddings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import graphmem.local
    from graphmem.interfaces.cli import app
    from graphmem.interfaces.cli import evaluate as cli

    main = ScriptedChatModel(amem_responder(answer="About 250ms"))
    monkeypatch.setattr(graphmem.local, "chat_model", lambda s: main)
    monkeypatch.setattr(cli, "_settings", lambda **kw: settings)
    raw = _tag()
    out = tmp_path / "beam"
    args = ["eval", "beam", "--data", str(BEAM), "--roles", "user", "--out", str(out), "--raw-tag", raw]
    try:
        res = CliRunner().invoke(app, [*args, "--baseline", "rag", "--baseline-only"])
        assert res.exit_code == 0, res.output
        data = json.loads((out / "qa.json").read_text())
        assert data["questions"] == 4 and data["config"]["scope_prefix"] == "beam"
        assert data["ingest_raw"]["beam-1"]["scope"].startswith(f"beam-{raw}-beam-1")
        assert data["systems"]["rag"]["by_category"]["3"]["f1"] == pytest.approx(1.0)  # the newer value
        prompts = [str(m[-1].content) for m in main.calls if step_of(m) == "answer"]
        assert any("250ms" in p for p in prompts) and not any("->->" in p for p in prompts)
        md = (out / "qa.md").read_text()
        assert "knowledge-update" in md and "contradiction-resolution" in md
        bad = CliRunner().invoke(app, ["eval", "beam", "--data", str(tmp_path / "none"), "--out", str(out)])
        assert bad.exit_code != 0 and "no such folder" in str(bad.exception)  # main() prints it as "Error: ..."
    finally:

        async def drop() -> None:
            async with await AsyncMemoryService.create(settings, embedder=embedder) as svc:
                for sc in _scopes("beam", [raw], ["beam-1"]):
                    await BenchQueries(svc.store).delete_scope(sc)

        asyncio.run(drop())


def test_cli_longmemeval(
    settings: Settings, embedder: Embeddings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graphmem.local
    from graphmem.interfaces.cli import app
    from graphmem.interfaces.cli import evaluate as cli

    main = ScriptedChatModel(amem_responder(answer="teal"))
    monkeypatch.setattr(graphmem.local, "chat_model", lambda s: main)
    monkeypatch.setattr(cli, "_settings", lambda **kw: settings)
    raw = _tag()
    out = tmp_path / "lme"
    args = ["eval", "longmemeval", "--data", str(LME), "-q", "tiny0001,4", "--out", str(out)]
    try:
        res = CliRunner().invoke(app, [*args, "--baseline", "rag", "--baseline-only", "--raw-tag", raw])
        assert res.exit_code == 0, res.output
        data = json.loads((out / "qa.json").read_text())
        assert list(data["systems"]) == ["rag"] and data["questions"] == 2
        assert data["config"]["scope_prefix"] == "lme" and data["config"]["cat5_prompt"] == "open"
        assert data["ingest_raw"]["tiny0004_abs"]["scope"].startswith(f"lme-{raw}-tiny0004_abs")
        assert data["systems"]["rag"]["by_category"]["4"]["f1"] == pytest.approx(1.0)
        assert data["reference"] is None
        assert "abstention" in (out / "qa.md").read_text()
    finally:

        async def drop() -> None:
            async with await AsyncMemoryService.create(settings, embedder=embedder) as svc:
                for sc in _scopes("lme", [raw], ["tiny0001", "tiny0004_abs"]):
                    await BenchQueries(svc.store).delete_scope(sc)

        asyncio.run(drop())
