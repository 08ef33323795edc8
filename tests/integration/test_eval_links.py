"""`graphmem eval links` end to end on the real Neo4j: an `eval locomo` ingest of the tiny fixture with
a scripted model whose links and evolutions are known, then connectivity (checked by hand) and the
four ablation arms (links dropped, evolutions reverted and re-embedded)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_asyncio
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage
from typer.testing import CliRunner

from graphmem.config import Settings
from graphmem.errors import InvalidInputError
from graphmem.evaluation.links import (
    ARMS,
    STRONGEST,
    LinksConfig,
    arm_note_id,
    arm_tag,
    is_turn_link,
    run_links_eval,
)
from graphmem.evaluation.locomo import load_locomo, note_id
from graphmem.evaluation.qa import run_qa_eval
from graphmem.evaluation.qa_systems import QAConfig
from graphmem.evaluation.report import write_outputs
from graphmem.evaluation.retrieval import RetrievalConfig, run_retrieval_eval, scope_for
from graphmem.models import FOLLOWS_REASON, Scope
from graphmem.service import AsyncMemoryService, embed_text
from graphmem.store.bench_queries import BenchQueries
from tests.fakes import ScriptedChatModel, amem_responder, shown_ids, step_of, tool_reply

aio = pytest.mark.asyncio(loop_scope="session")

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "locomo_tiny.json"

# What the scripted model decides when each turn of tiny-1 arrives (all earlier turns are shown:
# neighbour k 20). Links: new turn -> (earlier turn, type, reason); a FOLLOWS the model proposes is
# an LLM link. Evolutions: new turn -> (earlier turn, its new context), each faithful to its note.
LINKS = {
    "D1:3": [("D1:1", "SAME_TOPIC", "both about Ada's kitten Pixel")],
    "D1:6": [("D1:2", "SAME_TOPIC", "both about Ben's hobbies")],
    "D2:1": [("D1:5", "ELABORATES", "both about Ada's cello")],
    "D2:2": [("D1:6", "SAME_TOPIC", "both about Ben's hobbies")],
    "D2:3": [("D1:3", "FOLLOWS", "Pixel's mischief continues")],
    "D2:4": [("D1:6", "ELABORATES", "both about Ben's marathon training")],
}
EVOLUTIONS = {
    "D1:3": [("D1:1", "Ada adopted a grey kitten called Pixel last Sunday; Pixel is playful.")],
    "D2:1": [("D1:5", "Ada started learning the cello in April and now plays concerts.")],
    "D2:3": [
        ("D1:1", "Ada adopted a grey kitten called Pixel last Sunday."),
        ("D1:3", "Pixel loves chasing the laser pointer and is mischievous."),
    ],
}
EVOLVED = {"D1:1": 2, "D1:5": 1, "D1:3": 1}  # evolutions per turn


def scripted_responder() -> Callable[[list[BaseMessage]], AIMessage]:
    base = amem_responder()
    by_content = {t.content: t.dia_id for _, t in load_locomo(FIXTURE)[0].turns()}  # tiny-1; tiny-2 gets no links

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if step_of(messages) != "evolve":
            return base(messages)
        text = str(messages[-1].content)
        new = re.search(r"<note>(.*?)</note>", text, re.S)
        dia = by_content.get(new.group(1)) if new else None
        ids = shown_ids(messages)

        def shown(turn: str) -> str:
            return next(i for i in ids if i.endswith(f"-{turn}"))

        links = [
            {"target_id": shown(t), "type": ty, "reason": why, "strength": 0.8}
            for t, ty, why in LINKS.get(dia or "", [])
        ]
        updates = [
            {"note_id": shown(t), "context": ctx, "tags": ["personal", "evolved"], "keywords": None}
            for t, ctx in EVOLUTIONS.get(dia or "", [])
        ]
        return tool_reply("EvolutionDecision", {"links": links, "neighbour_updates": updates})

    return respond


def _tag() -> str:
    return f"lk{uuid.uuid4().hex[:8]}"


def _all_scopes(tag: str) -> list[Scope]:
    return [scope_for(t, s) for s in ("tiny-1", "tiny-2") for t in (tag, *(arm_tag(tag, a) for a in ARMS))]


@pytest_asyncio.fixture(loop_scope="session")
async def ingested(make_service: Any, tmp_path: Path) -> AsyncIterator[tuple[AsyncMemoryService, str]]:
    """The tiny fixture ingested by `eval locomo --ingest-only` with the scripted model; every scope
    of the tag (source and arms) is deleted afterwards."""
    svc, _ = await make_service(scripted_responder(), neighbour_k=20, evolution_words=False)
    tag = _tag()
    result = await run_qa_eval(svc, load_locomo(FIXTURE), QAConfig(tag=tag, ingest_only=True), tmp_path / "qa")
    one = result["ingest"]["tiny-1"]
    assert (one["added"], one["errors"], one["links"], one["evolved"]) == (11, 0, 9 + 6, 4)
    yield svc, tag
    for sc in _all_scopes(tag):
        await BenchQueries(svc.store).delete_scope(sc)


@aio
async def test_connectivity_and_arms_on_a_scripted_ingest(
    ingested: tuple[AsyncMemoryService, str], embedder: Embeddings, tmp_path: Path
) -> None:
    svc, tag = ingested
    convs = load_locomo(FIXTURE)
    cfg = LinksConfig(reuse_tag=tag, samples=40, seed=1)
    result = await run_links_eval(svc, convs, cfg)

    # Connectivity, by hand: pairs (D1:5, D2:1), joined by a link, and (D1:2, D2:2), two hops apart
    # through D1:6; the turn links join neither (they stay inside a session).
    conn = result["connectivity"]
    assert (conn["pairs"], conn["questions"]) == (2, 2)
    graph = conn["graphs"]["tiny-1"]
    assert (graph["notes"], graph["llm_links"], graph["turn_links"], graph["max_degree"]) == (11, 6, 9, 3)
    assert conn["graphs"]["tiny-2"]["llm_links"] == 0 and conn["graphs"]["tiny-2"]["pairs"] == 0
    row = conn["subsets"]["all"]
    assert row["llm"] == {"hop1": 0.5, "hop2": 1.0}
    assert row["turn"] == {"hop1": 0.0, "hop2": 0.0}
    assert row["all_links"] == {"hop1": 0.5, "hop2": 1.0}
    for hop in ("hop1", "hop2"):
        rnd = row["random"][hop]
        assert 0.0 < rnd["mean"] < row["llm"][hop]
        assert row["ratio"][hop] == pytest.approx(row["llm"][hop] / rnd["mean"])
    assert conn["subsets"]["same session"]["pairs"] == 0 and conn["subsets"]["cross session"]["pairs"] == 2

    # The arms: ids renamed, LLM links dropped where asked, evolutions reverted and re-embedded.
    info = result["conversations"]["tiny-1"]
    assert info["sessions"] == [1, 2] and info["turns_missing"] == 0
    arms = info["arms"]
    assert (arms["evolved_notes"], arms["evolutions"], arms["other_versions"]) == (3, 4, 0)
    assert arms["embedding_check_min_cosine"] > 0.999
    source = scope_for(tag, "tiny-1")
    originals = {d: (await svc.history(note_id(tag, "tiny-1", d), source))[0] for d in EVOLVED}
    evolved_now = {d: await svc.get(note_id(tag, "tiny-1", d), source) for d in EVOLVED}
    for d, n in EVOLVED.items():
        assert evolved_now[d].version == 1 + n
        assert evolved_now[d].context == [c for t, cs in EVOLUTIONS.items() for x, c in cs if x == d][-1]
    source_records = await svc.export_notes(source)
    source_vectors = {r["id"]: r["embedding"] for r in source_records}
    lent_words: dict[str, list[str]] = {}  # what the later notes' LLM links lend each evolved note
    for r in source_records:
        for x in r["links"]:
            d = next((d for d in EVOLVED if note_id(tag, "tiny-1", d) == x["target_id"]), None)
            if d is not None and not is_turn_link(x):
                have = {w.lower() for w in [*originals[d].keywords, *lent_words.get(d, [])]}
                lender = originals[r["source_id"]].keywords if r["source_id"] in EVOLVED else r["keywords"]
                lent_words.setdefault(d, []).extend(w for w in lender if w.lower() not in have)
    for arm, (links_on, evolution_on, enrichment_on, _updates, _context, link_words, _vector) in ARMS.items():
        scope = scope_for(arm_tag(tag, arm), "tiny-1")
        records = {r["source_id"]: r for r in await svc.export_notes(scope)}
        assert len(records) == 11 and arms[arm]["notes"] == 11
        links = [link for r in records.values() for link in r["links"]]
        turn = [x for x in links if x["type"] == "FOLLOWS" and x["reason"] == FOLLOWS_REASON]
        assert len(turn) == 9 and len(links) == (15 if links_on else 9), arm
        assert all(x["target_id"].startswith(arm_note_id(arm, "")) for x in links)
        for d in EVOLVED:
            rec = records[d]
            src_id = note_id(tag, "tiny-1", d)
            if not enrichment_on:  # content alone, embedded from it
                assert (rec["context"], rec["tags"], rec["keywords"]) == ("", [], [])
                note = await svc.get(rec["id"], scope)
                (fresh,) = embedder.embed_documents([embed_text(note, svc.settings.embed_text_variant)])
                assert float(np.dot(fresh, rec["embedding"])) > 0.999
                assert float(np.dot(source_vectors[src_id], rec["embedding"])) < 0.999
            elif ARMS[arm].embed_variant:  # enrichment kept, the vector of the content alone
                assert rec["context"] == evolved_now[d].context
                (fresh,) = embedder.embed_documents([evolved_now[d].content])
                assert float(np.dot(fresh, rec["embedding"])) > 0.999
                assert float(np.dot(source_vectors[src_id], rec["embedding"])) < 0.999
            elif evolution_on == STRONGEST:  # D2:3 evolved D1:1 with no link to it: D1:3's evolution stays
                expected = EVOLUTIONS["D1:3"][0][1] if d == "D1:1" else evolved_now[d].context
                assert rec["context"] == expected and arms[arm]["evolved"] == 3
                assert rec["embedding"] == pytest.approx(source_vectors[src_id])
            elif evolution_on:
                assert rec["context"] == evolved_now[d].context
                assert rec["embedding"] == pytest.approx(source_vectors[src_id])
            else:  # back to the values before the first evolution, embedded from them
                assert (rec["context"], rec["tags"]) == (originals[d].context, originals[d].tags)
                own = len(originals[d].keywords)
                assert rec["keywords"][:own] == originals[d].keywords
                # word-evolution: the keywords of the notes whose LLM links point to it follow its own
                assert rec["keywords"][own:] == (lent_words.get(d, []) if link_words else []), arm
                if not link_words:  # lent words never reach the search vector (checked below)
                    note = await svc.get(rec["id"], scope)
                    (fresh,) = embedder.embed_documents([embed_text(note, svc.settings.embed_text_variant)])
                    assert float(np.dot(fresh, rec["embedding"])) > 0.999
                # evolution kept the search vector (evolution_reembed off): the source's is the same
                assert float(np.dot(source_vectors[src_id], rec["embedding"])) > 0.999
        unevolved = records["D2:5"]
        if enrichment_on and not ARMS[arm].embed_variant:
            assert unevolved["embedding"] == pytest.approx(source_vectors[note_id(tag, "tiny-1", "D2:5")])

    # The ablation table: every arm, the same questions, per category; the full arm is a faithful copy.
    ab = result["ablation"]
    k = svc.settings.answer_k  # the ablation measures what ask searches and packs
    assert list(ab["arms"]) == list(ARMS) and ab["metric"] == f"budget_recall@{k}" and ab["questions"] == 11
    for data in ab["arms"].values():
        assert data["overall"]["count"] == 11 and set(data["by_category"]) == {"1", "2", "3", "4"}
        assert 0.0 <= data["overall"][f"budget_recall@{k}"] <= 1.0
        assert 0.0 <= data["overall"][f"budget_hit@{k}"] <= data["overall"][f"budget_recall@{k}"]
    assert set(ab["deltas"]) == set(ARMS) - {"full"}
    # the cheaper evolution against none, paired over the same questions
    pair = ab["pairs"]["strongest-evolution - no-evolution"]["arm_minus_other"]
    gap = (
        ab["arms"]["strongest-evolution"]["overall"][f"budget_recall@{k}"]
        - ab["arms"]["no-evolution"]["overall"][f"budget_recall@{k}"]
    )
    assert pair["mean"] == pytest.approx(gap) and pair["ci95_low"] <= pair["mean"] <= pair["ci95_high"]
    assert "word-evolution - no-evolution" in ab["pairs"]
    # with-context: the same notes found, each written with its context, so the budget holds fewer of them
    bare, wordy = ab["arms"]["full"]["overall"], ab["arms"]["with-context"]["overall"]
    assert wordy[f"recall@{k}"] == bare[f"recall@{k}"] and wordy[f"tokens@{k}"] > bare[f"tokens@{k}"]
    assert wordy[f"budget_recall@{k}"] <= bare[f"budget_recall@{k}"]
    plain = await run_retrieval_eval(svc, convs, RetrievalConfig(ks=(k,), modes=("hybrid",), reuse_tag=tag))
    assert ab["arms"]["full"]["overall"] == plain["modes"]["hybrid"]["overall"]
    # budgeted recall is the evidence in the context ask gives the answer model, question by question
    full_scope = scope_for(arm_tag(tag, "full"), "tiny-1")
    shown_recall = []
    for q in convs[0].questions(categories=(1, 2, 3, 4)):
        if q.evidence:
            got = await svc.ask_context(q.question, full_scope)
            kept = {h.note.source_id for h in got.hits}
            shown_recall.append(len(set(q.evidence) & kept) / len(set(q.evidence)))
    assert ab["arms"]["full"]["overall"][f"budget_recall@{k}"] == pytest.approx(float(np.mean(shown_recall)))

    written = write_outputs(result, tmp_path)
    md = written["markdown"].read_text()
    assert "Evidence connectivity" in md and "| overall | 11 |" in md and "no-evolution" in md
    assert "full - no-enrichment" in md and "every evidence turn inside the budget" in md
    assert "`strongest-evolution - no-evolution` (paired" in md
    assert written["plot"].stat().st_size > 1000
    assert json.loads(written["json"].read_text())["kind"] == "links"

    again = await run_links_eval(svc, convs, cfg)  # rebuilt from the source: the same numbers
    assert again["connectivity"] == conn and again["ablation"]["arms"] == ab["arms"]


@aio
async def test_ablation_arms_answer_questions_from_their_scopes(
    ingested: tuple[AsyncMemoryService, str], make_service: Any, tmp_path: Path
) -> None:
    # The ablation as QA (issue 26, deliverable 5): `eval locomo --baseline memory-no-evolution,...`
    # answers from the arm scopes `eval links` derived from the same ingest; contexts shown here so that
    # the prompts tell the arms apart (the evolved contexts are in the memory's, never in no-evolution's).
    svc, tag = ingested
    convs = load_locomo(FIXTURE)[:1]
    shown, model = await make_service(scripted_responder(), neighbour_k=20, answer_shows_context=True)
    systems = ("memory", "memory-full", "memory-no-evolution", "memory-no-links")
    cfg = QAConfig(tag=tag, systems=systems, bootstrap=100)
    with pytest.raises(InvalidInputError, match=f"eval links --reuse-tag {tag}"):
        await run_qa_eval(shown, convs, cfg, tmp_path / "before-arms")
    assert not [m for m in model.calls if step_of(m) == "answer"]  # refused before any answer

    await run_links_eval(svc, convs, LinksConfig(reuse_tag=tag, samples=2, connectivity=False))
    result = await run_qa_eval(shown, convs, cfg, tmp_path / "qa")
    n = result["questions"]
    prompts = [str(m[-1].content) for m in model.calls if step_of(m) == "answer"]
    assert len(prompts) == 4 * n  # in order: the memory's, then each arm's
    memory, full, no_evolution, no_links = (prompts[i * n : (i + 1) * n] for i in range(4))
    evolved = [c for cs in EVOLUTIONS.values() for _, c in cs]
    assert any(c in p for p in memory for c in evolved)
    assert any(c in p for p in full for c in evolved)  # the arms' copy of the whole memory
    assert any(c in p for p in no_links for c in evolved)  # evolution kept, links dropped
    assert not any(c in p for p in no_evolution for c in evolved)
    arms = result["config"]["arms"]
    assert arms["memory-no-evolution"]["kind"] == "memory-arm"
    assert len({a["key"] for a in arms.values()}) == 4
    for system in systems:
        cost = result["systems"][system]["cost"]["overall"]
        assert cost["answered"] == n and cost["failed"] == 0
    assert {(c["a"], c["b"]) for c in result["comparisons"]} >= {("memory", "memory-no-evolution")}


@aio
async def test_refuses_a_configuration_that_embeds_differently(
    ingested: tuple[AsyncMemoryService, str], make_service: Any
) -> None:
    _, tag = ingested
    other, _ = await make_service(embed_text_variant="content")
    with pytest.raises(InvalidInputError, match="differ from what this configuration makes"):
        await run_links_eval(other, load_locomo(FIXTURE), LinksConfig(reuse_tag=tag, samples=2))
    with pytest.raises(InvalidInputError, match="no notes in any scope"):
        await run_links_eval(other, load_locomo(FIXTURE), LinksConfig(reuse_tag=_tag(), samples=2))


def test_cli_links(settings: Settings, embedder: Embeddings, tmp_path: Path) -> None:
    from graphmem.interfaces.cli import app

    tag = _tag()

    async def ingest() -> None:
        model = ScriptedChatModel(scripted_responder())
        s = settings.model_copy(update={"neighbour_k": 20})
        async with await AsyncMemoryService.create(s, chat_model=model, embedder=embedder) as svc:
            await run_qa_eval(svc, load_locomo(FIXTURE)[:1], QAConfig(tag=tag, ingest_only=True), tmp_path / "qa")

    async def cleanup() -> None:
        async with await AsyncMemoryService.create(settings, embedder=embedder) as svc:
            for sc in _all_scopes(tag):
                await BenchQueries(svc.store).delete_scope(sc)

    asyncio.run(ingest())
    try:
        out = tmp_path / "links"
        args = ["eval", "links", "--data", str(FIXTURE), "--reuse-tag", tag, "--samples", "5", "--out", str(out)]
        res = CliRunner().invoke(app, [*args, "--drop-arms", "--json"])
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout[res.stdout.index("{\n") :])
        assert data["connectivity"]["subsets"]["all"]["llm"] == {"hop1": 0.5, "hop2": 1.0}
        assert data["conversations"]["tiny-2"]["skipped"] == "no notes in this scope"
        assert {"links.json", "links.md", "links.png"} <= {p.name for p in out.iterdir()}
        res = CliRunner().invoke(app, [*args, "--no-connectivity", "--no-ablation"])
        assert res.exit_code != 0
    finally:
        asyncio.run(cleanup())


@aio
async def test_rejudging_the_updates_before_the_arms(ingested: tuple[AsyncMemoryService, str], tmp_path: Path) -> None:
    """--rejudge-updates: the ingest's supersession step runs again over every note of the source scope
    (a gate change measured on a kept ingest), reported per conversation; no note changes."""
    svc, tag = ingested
    convs = load_locomo(FIXTURE)[:1]
    source = scope_for(tag, "tiny-1")
    before = {r["id"]: (r["content"], r["version"]) for r in await svc.export_notes(source)}
    cfg = LinksConfig(reuse_tag=tag, samples=2, connectivity=False, rejudge_updates=True)
    result = await run_links_eval(svc, convs, cfg)
    rejudged = result["conversations"]["tiny-1"]["rejudged_updates"]
    assert rejudged["notes_judged"] == len(before) == 11
    assert rejudged["supersessions"] + rejudged["conflicts"] <= rejudged["llm_calls"]
    assert {r["id"]: (r["content"], r["version"]) for r in await svc.export_notes(source)} == before
    md = write_outputs(result, tmp_path)["markdown"].read_text()
    assert "judged again before the arms were built" in md and "| tiny-1 | 11 |" in md
    plain = await run_links_eval(svc, convs, LinksConfig(reuse_tag=tag, samples=2, connectivity=False))
    assert "rejudged_updates" not in plain["conversations"]["tiny-1"]
