"""LoCoMo loader, turns as notes and the QA prompts, on a tiny synthetic fixture in LoCoMo's format."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.config import Settings
from graphmem.errors import InvalidInputError
from graphmem.evaluation.full_context import full_context
from graphmem.evaluation.locomo import (
    load_locomo,
    note_id,
    parse_evidence,
    parse_sessions,
    select,
    turn_inputs,
)
from graphmem.evaluation.qa_answers import NOT_MENTIONED, instructions_for
from graphmem.evaluation.qa_systems import QAConfig, derive_tag
from graphmem.service.text import parse_event_time

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "locomo_tiny.json"


@pytest.fixture(scope="module")
def convs() -> list:
    return load_locomo(FIXTURE)


def test_loads_samples_sessions_turns_and_questions(convs: list) -> None:
    assert [c.sample_id for c in convs] == ["tiny-1", "tiny-2"]
    c = convs[0]
    assert (c.speaker_a, c.speaker_b) == ("Ada", "Ben")
    assert [s.number for s in c.sessions] == [1, 2]
    assert c.sessions[0].date_time == "1:56 pm on 8 May, 2023"
    assert len(c.turns()) == 11 and len(c.turns([2])) == 5
    assert len(c.qa) == 9


def test_answers_evidence_and_categories(convs: list) -> None:
    qa = convs[0].qa
    assert qa[6].category == 5 and qa[6].answer == "yellow"  # the adversarial answer
    assert qa[7].answer == "2023"  # int answers become text
    assert qa[5].evidence == ("D1:2", "D2:2")  # "D1:2; D2:2" in the data
    assert qa[7].evidence == ("D1:1",)  # "D:1:1" in the data
    assert parse_evidence(["D", "D10:19"]) == ("D10:19",)


def test_questions_filtered_by_category_and_sessions(convs: list) -> None:
    c = convs[0]
    assert len(c.questions(categories=[1, 2, 3, 4])) == 7
    only_first = c.questions(sessions=[1])
    # only questions whose every evidence turn is in session 1 (and that have evidence)
    assert [q.index for q in only_first] == [0, 3, 4, 7]


def test_turn_inputs_one_note_per_turn(convs: list) -> None:
    items = turn_inputs(convs[0])
    assert len(items) == 11
    first, image = items[0], items[2]
    assert first.content == "Ada: Hi Ben! I adopted a grey kitten called Pixel last Sunday."
    assert image.content == "Ada: Pixel loves chasing the laser pointer. [image: a photo of a grey kitten on a sofa]"
    assert first.event_time == "1:56 pm on 8 May, 2023"
    assert items[6].event_time == "10:04 am on 20 June, 2023"
    assert first.source_id == "D1:1" and first.category is None
    parsed, _text = parse_event_time(first.event_time)
    assert parsed is not None and (parsed.year, parsed.month, parsed.day, parsed.hour) == (2023, 5, 8, 13)


def test_note_ids_deterministic_and_unique_per_tag_sample_turn(convs: list) -> None:
    a = [i.note_id for i in turn_inputs(convs[0], tag="x")]
    assert a == [i.note_id for i in turn_inputs(convs[0], tag="x")]
    assert len(set(a)) == len(a)
    assert not set(a) & {i.note_id for i in turn_inputs(convs[0], tag="y")}
    assert not set(a) & {i.note_id for i in turn_inputs(convs[1], tag="x")}
    assert note_id("t", "conv-26", "D1:3") == "lm-t-conv-26-D1:3"
    assert turn_inputs(convs[0], [2], tag="x")[0].source_id == "D2:1"


def test_select_and_parse_sessions(convs: list) -> None:
    assert [c.sample_id for c in select(convs, ["tiny-2"])] == ["tiny-2"]
    assert [c.sample_id for c in select(convs, ["1"])] == ["tiny-1"]
    assert select(convs, None) == convs
    with pytest.raises(InvalidInputError):
        select(convs, ["nope"])
    assert parse_sessions("1-3,5") == [1, 2, 3, 5]
    assert parse_sessions("") is None


def test_bad_files_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no such file"):
        load_locomo(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"qa": []}]')
    with pytest.raises(InvalidInputError, match="not a LoCoMo sample"):
        load_locomo(bad)


def test_answer_instructions_per_category(convs: list) -> None:
    c = convs[0]
    cfg = QAConfig()
    assert "date" in instructions_for(c.qa[1], c.sample_id, cfg)  # temporal
    assert "exact words" in instructions_for(c.qa[0], c.sample_id, cfg)
    options = instructions_for(c.qa[6], c.sample_id, cfg)
    assert NOT_MENTIONED in options and "yellow" in options
    assert options == instructions_for(c.qa[6], c.sample_id, cfg)  # seeded order
    texts = [instructions_for(c.qa[6], c.sample_id, QAConfig(seed=s)) for s in range(20)]
    assert {t.index("yellow") < t.index(NOT_MENTIONED) for t in texts} == {True, False}  # both orders occur
    assert "yellow" not in instructions_for(c.qa[6], c.sample_id, QAConfig(cat5_prompt="open"))


def test_tag_names_the_configuration() -> None:
    base = Settings()
    assert derive_tag(base) == derive_tag(Settings())
    assert derive_tag(base) != derive_tag(base.model_copy(update={"enable_evolution": False}))
    assert derive_tag(base) != derive_tag(base.model_copy(update={"local_model": "qwen2.5-coder-0.5b"}))
    for write_path in (
        {"enable_supersession": False},
        {"link_word_candidates": 0},
        {"ground_enrichment": False},
        {"link_decision": "pairwise" if base.link_decision != "pairwise" else "joint"},
    ):
        assert derive_tag(base) != derive_tag(base.model_copy(update=write_path)), write_path
    assert "-elv-" in derive_tag(base)
    # how many neighbours an add evolves names the ingest only where evolution is on
    evolving = base.model_copy(update={"enable_evolution": True})
    assert derive_tag(evolving) != derive_tag(evolving.model_copy(update={"evolution_neighbours": 1}))
    still = base.model_copy(update={"enable_evolution": False})
    assert derive_tag(still) == derive_tag(still.model_copy(update={"evolution_neighbours": 1}))


def test_full_context_renders_every_turn_under_its_session_date(convs: list) -> None:
    text = full_context(convs[1], None)
    lines = text.splitlines()
    assert len([x for x in lines if x.startswith("- ")]) == 7
    assert lines[:2] == ["[7:31 pm on 21 January, 2022]", "- Cleo: I just moved to Lisbon for a new job at a bakery."]
    assert len([x for x in lines if x.startswith("[")]) == 2  # one header per session
    assert len([x for x in full_context(convs[1], [2]).splitlines() if x.startswith("- ")]) == 3


def test_scope_tag_gives_each_scope_its_own_ids(convs: list) -> None:
    from graphmem.evaluation.locomo import scope_tag
    from graphmem.models import Scope

    a, b = Scope(user_id="alice"), Scope(user_id="bob")
    assert scope_tag(a) == scope_tag(Scope(user_id="alice")) != scope_tag(b)
    ids_a = {i.note_id for i in turn_inputs(convs[0], tag=scope_tag(a))}
    ids_b = {i.note_id for i in turn_inputs(convs[0], tag=scope_tag(b))}
    assert not ids_a & ids_b


def test_a_letter_reply_to_the_two_options_is_scored_as_the_option_it_chose() -> None:
    from graphmem.evaluation.qa_answers import NOT_MENTIONED, cat5_options, chosen_option

    options = cat5_options(0, "conv-26", 7, "Running")
    assert sorted(options) == sorted([NOT_MENTIONED, "Running"])
    assert options == cat5_options(0, "conv-26", 7, "Running")  # the order the prompt showed, again
    a, b = options
    assert chosen_option("(a)", options) == a and chosen_option("B", options) == b
    assert chosen_option("(b) Her mental health", options) == "Her mental health"  # the text it wrote
    assert chosen_option("Running", options) == "Running"
    assert chosen_option("a walk in the park", options) == "a walk in the park"  # not a letter reply


def test_a_report_names_why_turns_failed_to_store() -> None:
    from graphmem.evaluation.qa import _first_error

    stats = {"errors": 2, "error_messages": ["lm-x-D1:1: LocalServiceError: weights missing", "lm-x-D1:2: other"]}
    assert _first_error(stats) == "LocalServiceError: weights missing"
    assert _first_error({"errors": 1}) == "no error message recorded"
