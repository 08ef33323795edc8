"""The QA harness's pure parts: the question sample, the paired bootstrap, resuming from the answers
file, the full-context prompt, the rag selection, failed answers, the systems, the LongMemEval loader."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem.config import Settings
from graphmem.errors import InvalidInputError
from graphmem.evaluation.compare import compare_systems, paired_bootstrap, stratified_sample
from graphmem.evaluation.full_context import conversation_text, fit_conversation, full_context_limit
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.longmemeval import load_longmemeval, normalise_date
from graphmem.evaluation.metrics import score_answer
from graphmem.evaluation.qa import select_questions, summarise_system
from graphmem.evaluation.qa_answers import instructions_for, load_answers, needs_answer, rag_context
from graphmem.evaluation.qa_systems import (
    QAConfig,
    k_for_budget,
    parse_baselines,
    parse_budgets,
    resolve_arms,
    systems_for,
)
from graphmem.llm.prompts import answer_messages
from graphmem.models import Note, Scope
from graphmem.service import answer_prompt_digest
from graphmem.tokens import count_tokens

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOCOMO = FIXTURES / "locomo_tiny.json"
LME = FIXTURES / "longmemeval_tiny.json"
BEAM = FIXTURES / "beam_tiny" / "1"


# --- the sample ---------------------------------------------------------------------------------


def _items() -> list[tuple[str, int]]:
    # (key, category): 60 of category 1, 30 of 2, 10 of 5
    return (
        [(f"q{i}", 1) for i in range(60)]
        + [(f"q{i}", 2) for i in range(60, 90)]
        + [(f"q{i}", 5) for i in range(90, 100)]
    )


def _sample(items: list[tuple[str, int]], n: int, seed: int = 0) -> list[tuple[str, int]]:
    return stratified_sample(items, n, stratum=lambda x: x[1], key=lambda x: x[0], seed=seed)


def test_sample_is_stratified_by_category() -> None:
    got = _sample(_items(), 20)
    assert len(got) == 20
    assert Counter(c for _, c in got) == {1: 12, 2: 6, 5: 2}
    # largest remainder: 7 of (60, 30, 10) -> exact 4.2, 2.1, 0.7 -> 4, 2, 1
    assert Counter(c for _, c in _sample(_items(), 7)) == {1: 4, 2: 2, 5: 1}


def test_sample_is_seeded_stable_and_order_independent() -> None:
    items = _items()
    a = _sample(items, 20, seed=3)
    assert a == _sample(items, 20, seed=3)
    assert sorted(_sample(list(reversed(items)), 20, seed=3)) == sorted(a)
    assert a != _sample(items, 20, seed=4)
    assert a == [x for x in items if x in set(a)]  # input order kept


def test_sample_grows_without_reshuffling_and_caps_at_all() -> None:
    items = _items()
    small, large = set(_sample(items, 10)), set(_sample(items, 40))
    assert small <= large
    assert _sample(items, 500) == items
    assert _sample(items, 0) == []
    with pytest.raises(ValueError):
        _sample(items, -1)


def test_select_questions_applies_the_sample_over_all_conversations() -> None:
    convs = load_locomo(LOCOMO)
    every = select_questions(convs, QAConfig())
    assert sum(len(v) for v in every.values()) == 14
    sampled = select_questions(convs, QAConfig(sample=7, seed=1))
    chosen = [(sid, q.index) for sid, qs in sampled.items() for q in qs]
    assert len(chosen) == 7
    assert chosen == [
        (sid, q.index) for sid, qs in select_questions(convs, QAConfig(sample=7, seed=1)).items() for q in qs
    ]
    cats = Counter(q.category for qs in sampled.values() for q in qs)
    # 14 questions: 6 single-hop, 3 adversarial, 2 multi-hop, 2 temporal, 1 open domain
    assert cats == {4: 3, 5: 2, 1: 1, 2: 1}


# --- the paired bootstrap -------------------------------------------------------------------------


def test_paired_bootstrap_of_a_constant_difference_is_exact() -> None:
    a = [0.5, 0.7, 0.2, 0.9]
    got = paired_bootstrap([x + 0.25 for x in a], a, reps=500, seed=1)
    assert got is not None
    assert got["mean"] == pytest.approx(0.25)
    assert got["ci95_low"] == pytest.approx(0.25) and got["ci95_high"] == pytest.approx(0.25)
    assert got["n"] == 4


def test_paired_bootstrap_interval_is_seeded_and_brackets_the_mean() -> None:
    a = [0.91, 0.12, 0.77, 0.64, 0.05, 0.88, 0.31, 0.72, 0.95, 0.58, 0.23, 0.81]
    b = [0.40, 0.10, 0.70, 0.20, 0.02, 0.85, 0.30, 0.15, 0.90, 0.11, 0.20, 0.79]
    one = paired_bootstrap(a, b, reps=2000, seed=7)
    assert one == paired_bootstrap(a, b, reps=2000, seed=7)
    other_seed = paired_bootstrap(a, b, reps=2000, seed=8)
    assert one is not None and other_seed is not None
    assert (one["ci95_low"], one["ci95_high"]) != (other_seed["ci95_low"], other_seed["ci95_high"])
    assert one["mean"] == pytest.approx(sum(a) / 12 - sum(b) / 12)
    assert 0.0 < one["ci95_low"] < one["mean"] < one["ci95_high"] < 1.0
    # pairing matters: the same values paired otherwise give the same mean and another interval
    swapped = paired_bootstrap(a, list(reversed(b)), reps=2000, seed=7)
    assert swapped is not None and swapped["mean"] == pytest.approx(one["mean"])
    assert swapped["ci95_high"] - swapped["ci95_low"] > one["ci95_high"] - one["ci95_low"]


def test_paired_bootstrap_refuses_unpaired_input() -> None:
    assert paired_bootstrap([], [], reps=10, seed=0) is None
    with pytest.raises(ValueError):
        paired_bootstrap([1.0, 2.0], [1.0], reps=10, seed=0)


def _rec(system: str, idx: int, category: int, prediction: str, gold: str, error: str | None = None) -> dict:
    rec = {
        "system": system,
        "sample_id": "c",
        "qa_index": idx,
        "category": category,
        "prediction": prediction,
        "gold": gold,
        "scores": score_answer(prediction, gold, category),
    }
    if error:
        rec["error"] = error
    return rec


def test_comparisons_pair_questions_and_leave_failed_answers_out() -> None:
    records = [
        _rec("memory", 0, 4, "Pixel", "Pixel"),
        _rec("memory", 1, 4, "Pixel", "Pixel"),
        _rec("memory", 2, 1, "cello", "cello"),
        _rec("full-context", 0, 4, "Rex", "Pixel"),
        _rec("full-context", 1, 4, "", "Pixel", error="LLMError: HTTP 400 exceeds the context size"),
        _rec("full-context", 2, 1, "cello", "cello"),
    ]
    (comp,) = compare_systems(records, ["memory", "full-context"], reps=200, seed=0)
    assert (comp["a"], comp["b"]) == ("memory", "full-context")
    g = comp["groups"]
    assert g["overall"]["n"] == 2  # question 1 failed on one side: not paired
    assert g["overall"]["mean"] == pytest.approx(0.5)
    assert g["4"]["n"] == 1 and g["4"]["mean"] == pytest.approx(1.0)
    assert g["1"]["mean"] == pytest.approx(0.0)
    assert "5-amem" not in g


# --- failed answers -------------------------------------------------------------------------------


def test_failed_answers_are_reported_never_scored_as_zeros() -> None:
    ok = _rec("full-context", 0, 4, "Pixel", "Pixel")
    failed = [_rec("full-context", i, 4, "", "Pixel", error="LLMError: HTTP 400") for i in (1, 2, 3)]
    summary = summarise_system([ok, *failed])
    assert summary["by_category"]["4"]["f1"] == pytest.approx(1.0)
    assert summary["by_category"]["4"]["count"] == 1
    cost = summary["cost"]["overall"]
    assert (cost["count"], cost["answered"], cost["failed"]) == (4, 1, 3)
    assert cost["failure_messages"] == ["LLMError: HTTP 400"]
    every_failed = summarise_system(failed)
    assert every_failed["by_category"] == {}
    assert every_failed["overall"]["excluded"]["f1"] is None  # no score at all, not 0
    assert every_failed["cost"]["overall"]["answered"] == 0


def test_the_tokens_the_server_processed_leave_out_its_prompt_cache() -> None:
    """Full context: the cold answer processes the whole conversation, a warm one only the question;
    an answer recorded before the cache was counted counts whole."""
    from graphmem.evaluation.report import qa_budget_curve, qa_full_context

    cold = {**_rec("full-context", 0, 4, "Pixel", "Pixel"), "input_tokens": 17000, "cached_input_tokens": 0}
    warm = {**_rec("full-context", 1, 4, "Pixel", "Pixel"), "input_tokens": 17040, "cached_input_tokens": 17000}
    old = {**_rec("full-context", 2, 4, "Pixel", "Pixel"), "input_tokens": 17020}
    for rec, state in ((cold, "cold"), (warm, "warm"), (old, "warm")):
        rec.update(cache=state, seconds={"total": 1.0})
    cost = summarise_system([cold, warm, old])["cost"]["overall"]
    assert cost["processed_input_tokens"] == pytest.approx((17000 + 40 + 17020) / 3)
    assert cost["processed_input_tokens_cache_cold"] == 17000
    assert cost["processed_input_tokens_cache_warm"] == pytest.approx((40 + 17020) / 2)
    memory = {**_rec("memory@1000", 0, 4, "Pixel", "Pixel"), "input_tokens": 1200, "cached_input_tokens": 200}
    result = {
        "config": {"arms": {"memory@1000": {"budget": 1000, "k": 20}}, "full_context_server": None},
        "systems": {"memory@1000": summarise_system([memory]), "full-context": summarise_system([cold, warm, old])},
        "full_context": {},
    }
    row = next(line for line in qa_budget_curve(result) if line.startswith("| memory@1000"))
    assert "| 1200 | 1000 |" in row  # sent, then processed
    assert qa_full_context(result) == []  # no conversation fitted: nothing to say


def test_report_shows_failed_answers_as_failed() -> None:
    from graphmem.evaluation.report import qa_side_by_side

    failed = [_rec("full-context", i, 4, "", "Pixel", error="LLMError: HTTP 400") for i in range(3)]
    result = {
        "config": {"category_names": {"4": "single-hop"}},
        "systems": {"full-context": summarise_system(failed)},
        "reference": None,
    }
    row = next(line for line in qa_side_by_side(result) if line.startswith("| full-context"))
    assert "0/3" in row and "3 failed" in row
    assert "0.0" not in row  # no score shown as zero


# --- resuming -------------------------------------------------------------------------------------


def test_resume_skips_answered_questions_and_retries_failed_ones(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    lines = [
        {"key": "k:memory:c:0", "prediction": "Pixel"},
        {"key": "k:memory:c:1", "prediction": "", "error": "LLMError: timeout"},
        {"key": "k:memory:c:2", "prediction": "", "error": "LLMError: timeout"},
        {"key": "k:memory:c:2", "prediction": "Toronto"},  # the retry, appended later, wins
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"key": "k:memory:c:3", "predic', encoding="utf-8")
    done = load_answers(path)
    assert not needs_answer(done, "k:memory:c:0")
    assert needs_answer(done, "k:memory:c:1")  # failed: asked again
    assert not needs_answer(done, "k:memory:c:2")
    assert needs_answer(done, "k:memory:c:3")  # the line a crash cut off
    assert needs_answer(done, "other-config:memory:c:0")
    assert load_answers(tmp_path / "missing.jsonl") == {}


# --- the systems ----------------------------------------------------------------------------------


def test_baselines_budgets_and_systems_parse() -> None:
    assert parse_baselines("full-context,rag") == ("full-context", "rag")
    assert parse_baselines(" rag , rag,memory-no-llm") == ("rag", "memory-no-llm")
    assert parse_baselines("none") == () == parse_baselines(None)
    with pytest.raises(InvalidInputError, match="unknown baseline"):
        parse_baselines("full-context,mem0")
    assert parse_budgets("4000,500,1000,2000,500") == (500, 1000, 2000, 4000)
    with pytest.raises(InvalidInputError):
        parse_budgets("1000,lots")
    assert systems_for(("rag",), (500, 2000)) == ("memory", "memory@500", "memory@2000", "rag")
    assert systems_for(("full-context",), baseline_only=True) == ("full-context",)
    with pytest.raises(InvalidInputError):
        systems_for((), baseline_only=True)


def test_budget_arms_grow_k_and_share_answers_at_the_defaults() -> None:
    assert [k_for_budget(b, 10, 1000) for b in (500, 1000, 2000, 4000)] == [10, 10, 20, 40]
    settings = Settings()
    cfg = QAConfig(systems=("memory", "memory@500", "memory@1000", "memory@4000", "rag", "memory-no-llm"))
    arms = {a.system: a for a in resolve_arms(settings, cfg, "t", "raw")}
    base = arms["memory"]
    assert (base.k, base.budget) == (settings.answer_k, settings.context_token_budget)
    assert arms["memory@1000"].record_key("c", 3) == base.record_key("c", 3)  # the same answers
    assert arms["memory@500"].key != base.key and arms["memory@4000"].k == 4 * settings.answer_k
    assert arms["memory-no-llm"].key != base.key  # other notes, other answers
    assert arms["rag"].budget == base.budget and arms["rag"].k == cfg.rag_k
    # the memory's key is the one earlier answers files were written with
    assert len({a.key for a in arms.values()}) == 5


def test_an_answer_rule_change_gives_every_system_new_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers given under another per-category rule (the temporal rule of 6 December) are asked again."""
    from importlib import resources

    from graphmem.evaluation import qa_systems

    shipped = resources.files("graphmem.evaluation") / "prompts"
    for f in shipped.iterdir():
        (tmp_path / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(qa_systems.resources, "files", lambda package: _Pkg(tmp_path))
    cfg = QAConfig(systems=("memory", "rag", "full-context", "memory-no-llm"))

    def keys() -> dict[str, str]:
        return {a.system: a.key for a in resolve_arms(Settings(), cfg, "t", "raw")}

    before = keys()
    (tmp_path / "judge.txt").write_text("another judge", encoding="utf-8")
    assert keys() == before  # the judge does not answer
    (tmp_path / "answer_temporal.txt").write_text("Answer with a date.", encoding="utf-8")
    after = keys()
    assert all(after[s] != before[s] for s in before), (before, after)


def test_an_answer_prompt_change_gives_every_system_new_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer prompt (system text, template) is in the key too; the shipped one keeps the keys of
    the answers given before it was (they were all given under it)."""
    from graphmem.evaluation import qa_systems
    from graphmem.llm import prompts

    cfg = QAConfig(systems=("memory", "rag", "full-context", "memory-no-llm"))

    def keys() -> dict[str, str]:
        return {a.system: a.key for a in resolve_arms(Settings(), cfg, "t", "raw")}

    assert answer_prompt_digest() == qa_systems.ANSWER_PROMPT_V1
    before = keys()
    monkeypatch.setattr(prompts, "ANSWER_SYSTEM", prompts.ANSWER_SYSTEM + " Infer what is likely.")
    assert answer_prompt_digest() != qa_systems.ANSWER_PROMPT_V1
    after = keys()
    assert all(after[s] != before[s] for s in before), (before, after)


class _Pkg:
    """``resources.files(package)`` for a folder: ``/ "prompts"`` is the folder itself."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __truediv__(self, name: str) -> Path:
        return self.folder


def test_the_context_arms_share_the_memorys_answers_only_when_they_are_the_same() -> None:
    cfg = QAConfig(systems=("memory", "memory-no-context", "memory-with-context", "memory-no-llm"))
    shown = {a.system: a for a in resolve_arms(Settings(answer_shows_context=True), cfg, "t", "raw")}
    hidden = {a.system: a for a in resolve_arms(Settings(answer_shows_context=False), cfg, "t", "raw")}
    assert shown["memory-no-context"].show_context is False and shown["memory"].show_context is None
    assert shown["memory-no-context"].key != shown["memory"].key
    assert shown["memory-with-context"].record_key("c", 1) == shown["memory"].record_key("c", 1)
    assert hidden["memory-no-context"].record_key("c", 1) == hidden["memory"].record_key("c", 1)
    # the setting and the arm: one answer set, whichever way it was asked for
    assert hidden["memory"].key == shown["memory-no-context"].key
    assert shown["memory"].key == hidden["memory-with-context"].key
    # raw turns have no context: their answers do not depend on the setting
    assert shown["memory-no-llm"].key == hidden["memory-no-llm"].key
    assert Settings().answer_shows_context is False  # the default since issue 27


# --- full context ---------------------------------------------------------------------------------


def test_full_context_puts_the_conversation_first_and_the_question_last() -> None:
    conv = load_locomo(LOCOMO)[0]
    fc = fit_conversation(conv, None, None)
    assert fc.fits and fc.cut_turns == 0 and fc.turns == 11
    lines = fc.text.splitlines()
    assert lines[0] == "[1:56 pm on 8 May, 2023]"
    assert lines[1] == "- Ada: Hi Ben! I adopted a grey kitten called Pixel last Sunday."
    assert "[10:04 am on 20 June, 2023]" in lines  # every session under its date
    q = conv.qa[0]
    messages = answer_messages(q.question, fc.text, instructions_for(q, conv.sample_id, QAConfig()))
    prompt = str(messages[-1].content)
    assert prompt.index(lines[1]) < prompt.index(lines[-1]) < prompt.index(q.question)
    assert prompt.rstrip().endswith("Short answer:")
    # two questions share everything up to the question: the server's prompt cache reuses it
    other = str(answer_messages(conv.qa[1].question, fc.text)[-1].content)
    shared = prompt.index(q.question)
    assert other[:shared] == prompt[:shared]


def test_full_context_cuts_the_oldest_turns_and_says_what_was_cut() -> None:
    conv = load_locomo(LOCOMO)[0]
    whole = fit_conversation(conv, None, None)
    session2 = conversation_text(conv.turns([2]))
    fc = fit_conversation(conv, None, count_tokens(session2))
    assert not fc.fits
    assert fc.text == session2 and fc.tokens <= count_tokens(session2)
    assert (fc.cut_turns, fc.cut_sessions, fc.partial_session, fc.first_turn) == (6, (1,), None, "D2:1")
    assert fc.whole_tokens == whole.tokens
    partial = fit_conversation(conv, None, count_tokens(session2) + 25)
    assert 0 < partial.cut_turns < 6 and partial.partial_session == 1 and partial.cut_sessions == ()
    assert partial.text.startswith("[1:56 pm on 8 May, 2023]")  # the cut session keeps its date
    assert partial.info()["fits"] is False
    assert full_context_limit(32768, 512) == int((32768 - 512 - 300) / 1.15)


# --- rag ------------------------------------------------------------------------------------------


def _note(i: int, words: int) -> Note:
    return Note(
        id=f"n{i}",
        content=f"turn {i}: " + " ".join(["word"] * words),
        scope=Scope(user_id="u"),
        event_time=datetime(2023, 5, i + 1, tzinfo=UTC),
        event_time_text=f"{i + 1} May 2023",
    )


def test_rag_keeps_dense_hits_in_rank_order_within_the_budget() -> None:
    ranked = [_note(0, 30), _note(1, 30), _note(2, 200), _note(3, 10), _note(4, 30)]
    ctx = rag_context(ranked, 120)
    assert ctx.tokens <= 120
    assert ctx.used[:2] == [0, 1]  # the top hits first
    assert 2 not in ctx.used  # too long for what is left: skipped, as ask packs
    assert 3 in ctx.used
    assert rag_context(ranked, 5000).used == [0, 1, 2, 3, 4]


# --- LongMemEval ----------------------------------------------------------------------------------


def test_longmemeval_loader_reads_sessions_dates_and_abstention() -> None:
    convs = load_longmemeval(LME)
    assert [c.sample_id for c in convs] == ["tiny0001", "tiny0002", "tiny0003", "tiny0004_abs"]
    first = convs[0]
    assert [s.date_time for s in first.sessions] == ["2023-05-20 02:21", "2023-05-28 09:05"]
    assert first.turns()[2][1].content.startswith("user: I finally bought a teal road bike")
    (q,) = first.qa
    assert (q.category, q.answer, q.evidence, q.question_date) == (4, "teal", ("D2:1",), "2023-06-02 18:10")
    assert "asked on 2023-06-02 18:10" in instructions_for(q, first.sample_id, QAConfig())
    assert convs[1].qa[0].category == 2 and convs[1].qa[0].evidence == ("D1:1", "D2:1")
    assert convs[2].qa[0].category == 1
    assert convs[2].qa[0].evidence == ("D1:1", "D1:2", "D2:1", "D2:2")  # no has_answer: the answer sessions
    abstention = convs[3]
    assert abstention.qa[0].category == 5 and abstention.extra["abstention"] is True
    assert abstention.extra["question_type"] == "single-session-user"


def test_longmemeval_dates_turn_cuts_and_bad_files(tmp_path: Path) -> None:
    from graphmem.service.text import parse_event_time

    assert normalise_date("2023/05/20 (Sat) 02:21") == "2023-05-20 02:21"
    parsed, _ = parse_event_time(normalise_date("2023/05/20 (Sat) 02:21"))
    assert parsed is not None and (parsed.month, parsed.day, parsed.hour) == (5, 20, 2)
    assert normalise_date("yesterday") == "yesterday" and normalise_date(None) is None
    raw = json.loads(LME.read_text())[:1]
    raw[0]["haystack_sessions"][0][1]["content"] = "x" * 9000
    long_file = tmp_path / "long.json"
    long_file.write_text(json.dumps(raw))
    (conv,) = load_longmemeval(long_file)
    assert len(conv.turns()[1][1].text) == 7000 and conv.extra["turns_cut"] == 1
    raw[0]["question_type"] = "mystery"
    long_file.write_text(json.dumps(raw))
    with pytest.raises(InvalidInputError, match="unknown question_type"):
        load_longmemeval(long_file)
    bad = tmp_path / "bad.json"
    bad.write_text('[{"question": "?"}]')
    with pytest.raises(InvalidInputError, match="not a LongMemEval"):
        load_longmemeval(bad)
    with pytest.raises(InvalidInputError, match="no such file"):
        load_longmemeval(tmp_path / "missing.json")


# --- BEAM ----------------------------------------------------------------------------------------


def test_beam_chat_becomes_dated_sessions_with_its_scorable_questions() -> None:
    from graphmem.evaluation.beam import load_beam
    from graphmem.service.text import parse_event_time

    (conv,) = load_beam(BEAM)
    assert conv.sample_id == "beam-1"
    assert [s.date_time for s in conv.sessions] == ["2024-03-15", "2024-04-05"]
    parsed, _ = parse_event_time(conv.sessions[1].date_time)
    assert parsed is not None and (parsed.month, parsed.day) == (4, 5)
    first = conv.turns()[0][1]
    assert first.dia_id == "D1:1" and first.content.endswith("about 400ms.")  # the ->-> marker is gone
    assert [t.dia_id for _, t in conv.turns()] == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3", "D2:4"]
    by_category = {q.category: q for q in conv.qa}
    assert set(by_category) == {1, 3, 4, 5}  # event ordering is not scorable here
    assert conv.extra["skipped_types"] == {"event_ordering": 1}
    update = by_category[3]
    assert (update.answer, update.evidence) == ("About 250ms", ("D1:1", "D2:1"))
    clash = by_category[1]
    assert clash.answer.startswith("You said you have never") and clash.evidence == ("D1:3", "D2:3")
    assert by_category[5].answer.startswith("Based on the provided chat") and by_category[5].evidence == ()


def test_beam_user_messages_only_and_bad_input(tmp_path: Path) -> None:
    from graphmem.evaluation.beam import load_beam, load_beam_chat

    (conv,) = load_beam(BEAM.parent, roles=("user",))  # the folder of chats
    assert [t.dia_id for _, t in conv.turns()] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert all(t.speaker == "user" for _, t in conv.turns())
    assert {q.category: q.evidence for q in conv.qa}[1] == ("D1:2", "D2:2")  # ids mapped to the stored turns
    assert load_beam_chat(BEAM / "chat.json").sample_id == "beam-1"
    with pytest.raises(InvalidInputError, match="roles must be among"):
        load_beam(BEAM, roles=("system",))
    with pytest.raises(InvalidInputError, match="no BEAM chat folders"):
        load_beam(tmp_path)
    with pytest.raises(InvalidInputError, match="no such folder"):
        load_beam(tmp_path / "missing")
    broken = tmp_path / "7"
    (broken / "probing_questions").mkdir(parents=True)
    (broken / "chat.json").write_text('[{"batch_number": 1}]')
    (broken / "probing_questions" / "probing_questions.json").write_text("{}")
    with pytest.raises(InvalidInputError, match="lacks batch_number or turns"):
        load_beam(broken)
    (broken / "chat.json").write_text("not json")
    with pytest.raises(InvalidInputError, match="not JSON"):
        load_beam(broken)


# --- the full-context server ------------------------------------------------------------------------


def test_full_context_server_slot_size_is_read_and_a_smaller_one_obeyed() -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from graphmem.interfaces.cli.evaluate import _fit_to_server, full_context_settings, served_slot_context

    class Props(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = json.dumps({"total_slots": 1, "default_generation_settings": {"n_ctx": 8192}}).encode()
            self.send_response(200 if self.path == "/props" else 404)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Props)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        assert served_slot_context(url) == 8192
    finally:
        server.shutdown()
    assert served_slot_context(url, timeout=0.5) is None  # nothing answers: unknown

    settings = Settings()
    fc = full_context_settings(settings, None, 32768)
    assert (fc.local_llm_port, fc.local_llm_ctx, fc.local_llm_parallel) == (settings.local_llm_port + 1, 32768, 1)
    assert fc.llm_timeout >= 1800
    cfg = QAConfig(full_context_limit=full_context_limit(32768, 512))
    _fit_to_server(cfg, fc, 32768, 32768)
    assert cfg.full_context_limit == full_context_limit(32768, 512)
    _fit_to_server(cfg, fc, 32768, 8192)  # a server started earlier with a smaller slot
    assert cfg.full_context_limit == full_context_limit(8192, 512)


def test_eta_line_counts_only_what_this_run_did() -> None:
    from graphmem.interfaces.cli.evaluate import eta_line

    assert eta_line("answer memory", 10, 100, 0.0) == "answer memory: 10/100, 0.000/s, ETA -"
    # 40 found done in the answers file, 20 asked in 100 s: 0.2/s, 40 left -> 200 s
    assert eta_line("answer memory", 60, 100, 100.0, done_at_start=40) == "answer memory: 60/100, 0.200/s, ETA 0:03:20"
    assert eta_line("x", 5, 5, 10.0).endswith("done")


def test_llm_stop_names_the_full_context_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from graphmem.interfaces.cli import app
    from graphmem.interfaces.cli import llm as llm_cli

    monkeypatch.setattr(llm_cli, "_settings", lambda model: Settings(home=tmp_path))
    state = tmp_path / "llm"
    state.mkdir()
    # a record naming a process that is not a llama.cpp server: nothing is killed, the record goes
    (state / "server-full-context.json").write_text(json.dumps({"pid": 1, "port": 8012, "model": "x"}))
    res = CliRunner().invoke(app, ["llm", "stop", "--name", "server-full-context", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"stopped": False}
    assert not (state / "server-full-context.json").exists()
    assert CliRunner().invoke(app, ["llm", "stop", "--name", "other"]).exit_code != 0


def test_answers_from_a_context_without_links_have_keys_of_their_own() -> None:
    cfg = QAConfig(systems=("memory",))

    def key(**kw: object) -> str:
        return resolve_arms(Settings(**kw), cfg, "t", "raw")[0].key  # type: ignore[arg-type]

    old = key(answer_links_per_hit=None, answer_fill_links_per_hit=0)  # answers given before both settings
    fill = key(answer_links_per_hit=None)
    assert (
        len({old, fill, key(), key(answer_links_per_hit=3), key(links_per_hit=0), key(answer_fill_links_per_hit=0)})
        == 6
    )
    assert resolve_arms(Settings(), cfg, "t", "raw")[0].k == Settings().answer_k  # the hits ask packs


def test_answers_from_a_search_of_other_fields_have_keys_of_their_own() -> None:
    cfg = QAConfig(systems=("memory",))

    def key(**kw: object) -> str:
        return resolve_arms(Settings(**kw), cfg, "t", "raw")[0].key  # type: ignore[arg-type]

    every = key(search_text_fields="content,context,keywords,tags")  # the key answers before 7 December keep
    assert key(search_text_fields="tags,context,content,keywords") == every  # the same fields, any order
    assert len({every, key(), key(search_text_fields="content")}) == 3
