"""Memory that changes over time (issue 28) through the real service and Neo4j, with a scripted model
whose yes/no answers are known: supersession, conflicts, knock-on checks, what search and ask make of
them, and the store refusing what crosses scopes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from graphmem.llm.update_prompts import (
    BEFORE_RULE,
    COEXIST_SYSTEM,
    KNOCK_ON_SYSTEM,
    NOW_RULE,
    SUPERSEDE_SYSTEM,
    TIMELINE_RULE,
)
from graphmem.models import Scope
from graphmem.service.wording import content_words
from graphmem.store import BenchQueries
from tests.fakes import judged_reply, noted, pairwise_responder, text_reply


def updates_responder(
    supersedes: Callable[[str, str], float],
    *,
    knock_on: Callable[[str, str], float] = lambda a, b: 0.0,
    coexist: Callable[[str, str], float] = lambda a, b: 0.1,
    answer: str = "Berlin",
) -> Callable[[list[BaseMessage]], AIMessage]:
    """Links notes that share a content word (not the speakers'); answers the supersession question
    with ``supersedes(earlier, later)`` and "can both be true at once?" with ``coexist`` (no, by
    default); answers questions with ``answer``."""

    def related(a: str, b: str) -> float:
        return 0.9 if (content_words(a) & content_words(b)) - {"ann", "bo"} else 0.05

    base = pairwise_responder(related, reason=lambda a, b: "Ann's home in Lyon")

    def respond(messages: list[BaseMessage]) -> AIMessage:
        system = str(messages[0].content)
        if system == SUPERSEDE_SYSTEM:
            a, b = noted(messages)
            return judged_reply(supersedes(a, b))
        if system == COEXIST_SYSTEM:
            a, b = noted(messages)
            return judged_reply(coexist(a, b))
        if system == KNOCK_ON_SYSTEM:
            a, b = noted(messages)
            return judged_reply(knock_on(a, b))
        if "answer questions" in system:
            return text_reply(answer)
        return base(messages)

    return respond


def moves(a: str, b: str) -> float:
    """Home notes state the same fact; nothing else does."""
    homes = ("live in", "moved to")
    return 0.92 if any(h in a for h in homes) and any(h in b for h in homes) else 0.04


def commutes(a: str, b: str) -> float:
    """A commute is out of date after a move."""
    return 0.81 if "commute" in a and "moved to" in b else 0.03


async def _service(make_service: Any, responder: Any, **overrides: Any) -> tuple[Any, Any]:
    return await make_service(  # type: ignore[no-any-return]
        responder,
        link_decision="pairwise",
        enable_evolution=False,
        evolution_words=False,
        link_candidates=3,
        **overrides,
    )


def _state(graph: Any, note_id: str) -> dict[str, Any]:
    return graph.q(  # type: ignore[no-any-return]
        "MATCH (n:Note {id: $id}) RETURN n.content AS content, n.context AS context, n.tags AS tags, "
        "n.keywords AS keywords, n.version AS version, n.embedding AS embedding",
        id=note_id,
    )[0]


async def test_a_pair_whose_notes_can_both_hold_is_refused_and_reported(make_service: Any, scope: Scope) -> None:
    """The first question's yes is not enough: when the model says both notes can be true at once, the
    pair is neither a supersession nor a conflict, and the refusal is reported."""
    both_hold = {"Ann: I moved to Berlin in June.": 0.85}
    svc, model = await _service(make_service, updates_responder(moves, coexist=lambda a, b: both_hold.get(b, 0.1)))
    await svc.add("Ann: I live in Lyon with my cat.", scope, event_time="2021-03-01")
    berlin = await svc.add("Ann: I moved to Berlin in June.", scope, event_time="2024-06-01")
    assert berlin.superseded == [] and berlin.conflicts == []
    assert any("refused: both notes can be true at once (P(yes) 0.85)" in r for r in berlin.rejected)
    asked = [noted(m) for m in model.calls if str(m[0].content) == COEXIST_SYSTEM]
    assert asked == [["Ann: I live in Lyon with my cat.", "Ann: I moved to Berlin in June."]]  # the earlier first
    munich = await svc.add("Ann: I moved to Munich in May.", scope, event_time="2025-05-01")
    assert {s.older_id for s in munich.superseded} >= {berlin.note.id}  # "no" to the second question: written


async def test_a_move_supersedes_the_old_home_and_changes_no_note(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, model = await _service(make_service, updates_responder(moves, knock_on=commutes))
    lyon = await svc.add("Ann: I live in Lyon with my cat.", scope, event_time="2021-03-01")
    commute = await svc.add("Ann: My commute in Lyon takes ten minutes by bike.", scope, event_time="2021-04-01")
    cello = await svc.add("Bo: I play the cello on Sundays.", scope, event_time="2021-05-01")
    assert [lk.target_id for lk in commute.links] == [lyon.note.id]
    before = {n: _state(graph, n) for n in (lyon.note.id, commute.note.id, cello.note.id)}

    berlin = await svc.add("Ann: I moved to Berlin in June.", scope, event_time="2024-06-01")

    assert [(s.newer_id, s.older_id) for s in berlin.superseded] == [(berlin.note.id, lyon.note.id)]
    assert berlin.superseded[0].at == datetime(2024, 6, 1, tzinfo=UTC) and berlin.superseded[0].p_yes == 0.92
    assert berlin.conflicts == []
    rel = graph.q(
        "MATCH (n:Note {id: $new})-[r:SUPERSEDES]->(o:Note) RETURN o.id AS old, r.at AS at, r.reason AS reason, "
        "r.caused_by AS caused_by, r.user_id AS user_id, o.valid_to AS valid_to",
        new=berlin.note.id,
    )
    assert len(rel) == 1 and rel[0]["old"] == lyon.note.id and rel[0]["user_id"] == scope.user_id
    assert rel[0]["caused_by"] == berlin.note.id and "2024-06-01" in rel[0]["reason"]
    assert rel[0]["valid_to"].to_native() == datetime(2024, 6, 1, tzinfo=UTC)
    # The knock-on check: the commute note linked to the old home is reported, never changed.
    assert [(k.note_id, k.superseded_id, k.outdated) for k in berlin.knock_on] == [
        (commute.note.id, lyon.note.id, True)
    ]
    # No note's content, context, tags, keywords, version or embedding changed.
    assert {n: _state(graph, n) for n in before} == before
    assert not graph.q("MATCH (v:NoteVersion {note_id: $id}) RETURN v", id=lyon.note.id)
    supersede_calls = [m for m in model.calls if str(m[0].content) == SUPERSEDE_SYSTEM]
    assert supersede_calls  # one question per candidate pair, asked through the model

    # search: the old home gives its place to the current note, which carries the dated history.
    hits = await svc.search("Where does Ann live?", scope, k=2)
    ids = [h.note.id for h in hits]
    assert berlin.note.id in ids and lyon.note.id not in ids
    now = next(h for h in hits if h.note.id == berlin.note.id)
    assert now.timeline is not None and now.timeline.status == "current"
    assert [e.note_id for e in now.timeline.history] == [lyon.note.id]
    # history=True: every hit kept, the old home marked superseded.
    full = {h.note.id: h for h in await svc.search("Where does Ann live?", scope, k=4, history=True)}
    assert full[lyon.note.id].timeline.status == "superseded"  # type: ignore[union-attr]
    assert full[lyon.note.id].timeline.superseded_by == [berlin.note.id]  # type: ignore[union-attr]
    # as_of: the state at a date, when Berlin was not yet true.
    then = [h.note.id for h in await svc.search("Where does Ann live?", scope, k=4, as_of="2022-01-01")]
    assert lyon.note.id in then and berlin.note.id not in then

    # ask: the answer prompt hears which note is current and what it replaced.
    answered = await svc.ask("Where does Ann live?", scope, k=2)
    assert answered.answer == "Berlin"
    prompt = str(model.calls[-1][-1].content)
    assert TIMELINE_RULE in prompt and '[CURRENT | before: until 1 June 2024: "Ann: I live in Lyon' in prompt
    assert NOW_RULE not in prompt and BEFORE_RULE not in prompt  # the question says neither
    # The superseded note stays in ask's context, marked, with the current note after it.
    assert "- Ann: I live in Lyon with my cat." in prompt and "[SUPERSEDED since 1 June 2024" in prompt
    kept = [h.note.id for h in answered.notes]
    assert lyon.note.id in kept and berlin.note.id in kept
    # right after it, before the linked notes that fill the budget (the commute note, linked to Lyon)
    assert kept.index(berlin.note.id) == kept.index(lyon.note.id) + 1 and commute.note.id in kept[2:]
    # A question about the past is told so, and reads both.
    before_q = await svc.ask("Where did Ann live before?", scope, k=2)
    prompt = str(model.calls[-1][-1].content)
    assert BEFORE_RULE in prompt and "[SUPERSEDED since 1 June 2024" in prompt
    assert {lyon.note.id, berlin.note.id} <= {h.note.id for h in before_q.notes}
    # A question about now reads the current note only, without the value it replaced.
    now_q = await svc.ask("Where does Ann live now?", scope, k=2)
    prompt = str(model.calls[-1][-1].content)
    assert NOW_RULE in prompt and "[CURRENT]" in prompt and "I live in Lyon" not in prompt
    assert [h.note.id for h in now_q.notes if h.note.id in (lyon.note.id, berlin.note.id)] == [berlin.note.id]


async def test_the_same_time_makes_a_conflict_and_ask_sees_the_clash(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    def diets(a: str, b: str) -> float:
        return 0.88 if {"vegan", "steak"} <= content_words(a + " " + b) else 0.02

    svc, model = await _service(make_service, updates_responder(diets, answer="vegan, and steak"))
    vegan = await svc.add("Ann: I am vegan.", scope, event_time="2024-05-01T10:00:00")
    steak = await svc.add("Ann: I eat steak every day.", scope, event_time="2024-05-01T10:00:00")
    assert steak.superseded == []
    assert [(c.note_id, c.other_id) for c in steak.conflicts] == [(steak.note.id, vegan.note.id)]
    assert graph.q("MATCH (n:Note {id: $id}) RETURN n.valid_to AS v", id=vegan.note.id)[0]["v"] is None
    hits = {h.note.id: h for h in await svc.search("What does Ann eat?", scope, k=2)}
    assert [e.note_id for e in hits[vegan.note.id].timeline.conflicts] == [steak.note.id]  # type: ignore[union-attr]
    answered = await svc.ask("What does Ann eat?", scope, k=2)
    assert "CLASH with" in str(model.calls[-1][-1].content)
    # Whatever the model said, the service says the clash: both statements, with their date.
    assert answered.answer.startswith("vegan, and steak (The memory holds conflicting statements: ")
    assert '"Ann: I am vegan." (2024-05-01T10:00:00)' in answered.answer and "I eat steak every day." in answered.answer


async def test_the_store_refuses_supersession_across_scopes(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await _service(make_service, updates_responder(moves))
    other = Scope(user_id=scope.user_id, run_id="elsewhere")
    mine = await svc.add("Ann: I moved to Berlin.", scope, event_time="2024-06-01", enrich=False)
    theirs = await svc.add("Ann: I live in Lyon.", other, event_time="2021-03-01", enrich=False)
    try:
        at = datetime(2024, 6, 1, tzinfo=UTC)
        # Behind the service, with the scope of either note: the Cypher writes nothing.
        for sc in (scope, other):
            assert not await svc.store.supersede(
                mine.note.id, theirs.note.id, sc, at=at, reason="x", p_yes=1.0, caused_by="test"
            )
            assert not await svc.store.conflict(
                mine.note.id, theirs.note.id, sc, at=at, reason="x", p_yes=1.0, caused_by="test"
            )
        assert not graph.q("MATCH (:Note {id: $id})-[r:SUPERSEDES|CONFLICTS_WITH]-() RETURN r", id=mine.note.id)
        assert graph.q("MATCH (n:Note {id: $id}) RETURN n.valid_to AS v", id=theirs.note.id)[0]["v"] is None
        # A relationship only raw Cypher could write across scopes is never read.
        graph.q(
            "MATCH (a:Note {id: $a, run_id: 'default'}), (b:Note {id: $b, run_id: 'elsewhere'}) "
            "CREATE (a)-[:SUPERSEDES {user_id: a.user_id, agent_id: a.agent_id, run_id: a.run_id}]->(b)",
            a=mine.note.id,
            b=theirs.note.id,
        )
        (row,) = await svc.store.timeline([mine.note.id], scope)
        assert row.older == [] and row.superseded_by == []
        assert await svc.store.timeline([theirs.note.id], scope) == []
    finally:
        graph.q("MATCH (n:Note {run_id: 'elsewhere', user_id: $u}) DETACH DELETE n", u=scope.user_id)


async def test_the_setting_turns_it_off(make_service: Any, scope: Scope) -> None:
    svc, model = await _service(make_service, updates_responder(moves), enable_supersession=False)
    await svc.add("Ann: I live in Lyon.", scope, event_time="2021-03-01")
    berlin = await svc.add("Ann: I moved to Berlin.", scope, event_time="2024-06-01")
    assert berlin.superseded == [] and berlin.knock_on == []
    assert not [m for m in model.calls if str(m[0].content) == SUPERSEDE_SYSTEM]


async def test_small_talk_is_not_asked_about_unless_the_gate_is_off(make_service: Any, scope: Scope) -> None:
    """The gate: a note naming no changeable fact and no change gets no supersession question."""

    def asked(model: Any) -> list[str]:
        return [str(m[-1].content) for m in model.calls if str(m[0].content) == SUPERSEDE_SYSTEM]

    for gate in (True, False):
        svc, model = await _service(make_service, updates_responder(moves), supersession_gate=gate)
        sc = Scope(user_id=f"{scope.user_id}-{gate}")
        try:
            await svc.add("Ann: I live in Lyon.", sc, event_time="2021-03-01")
            chat = await svc.add("Ann: Haha, that sounds lovely, thanks for sharing!", sc, event_time="2022-01-01")
            assert chat.superseded == []
            berlin = await svc.add("Ann: I moved to Berlin.", sc, event_time="2024-06-01")
            assert [s.older_id for s in berlin.superseded] != []  # a note with a change is asked about either way
            about_chat = [q for q in asked(model) if "sounds lovely" in q.split("Note B:")[1]]
            assert bool(about_chat) is (not gate), gate
        finally:
            await BenchQueries(svc.store).delete_scope(sc)


async def test_a_note_is_not_judged_against_one_that_names_another_kind_of_fact(
    make_service: Any, scope: Scope
) -> None:
    """The model's yes is not asked for when the two notes name different kinds of fact (a flat, a manager)."""

    def asked(model: Any) -> list[str]:
        return [str(m[-1].content) for m in model.calls if str(m[0].content) == SUPERSEDE_SYSTEM]

    svc, model = await _service(make_service, updates_responder(lambda a, b: 0.9))
    manager = await svc.add("Omar: My manager at Brightwave is Priya.", scope, event_time="2022-05-03")
    flat = await svc.add("Omar: Sam moved out of the flat, so I live alone now.", scope, event_time="2023-02-20")
    assert flat.superseded == [] and not [q for q in asked(model) if "Priya" in q]
    new_boss = await svc.add("Omar: Priya left; my new manager is Daniel.", scope, event_time="2023-02-21")
    assert [s.older_id for s in new_boss.superseded] == [manager.note.id]


async def test_a_two_fact_note_superseded_for_one_fact_is_judged_again_for_the_other(
    make_service: Any, scope: Scope
) -> None:
    """A job and a manager in one note: the manager's change supersedes it first; the job's change
    later is still asked about it (and supersedes it too), while a home's chain is never judged twice."""

    def asked_about(model: Any, text: str) -> list[str]:
        return [
            str(m[-1].content)
            for m in model.calls
            if str(m[0].content) == SUPERSEDE_SYSTEM and text in str(m[-1].content)
        ]

    svc, model = await _service(make_service, updates_responder(lambda a, b: 0.9))
    both = await svc.add(
        "Omar: I'm a junior developer at Brightwave and my manager there is Priya.", scope, event_time="2022-05-03"
    )
    boss = await svc.add("Omar: Priya left Brightwave; my new manager is Daniel.", scope, event_time="2023-02-20")
    assert [s.older_id for s in boss.superseded] == [both.note.id]
    job = await svc.add(
        "Omar: I left Brightwave and started as a senior developer at Nordlight.", scope, event_time="2023-11-08"
    )
    assert both.note.id in {s.older_id for s in job.superseded}
    assert boss.note.id not in {s.older_id for s in job.superseded}  # a job is not a manager
    (row,) = await svc.store.timeline([both.note.id], scope)
    assert row.valid_to == datetime(2023, 2, 20, tzinfo=UTC)  # the earliest change ends it
    await svc.add("Omar: I live in Lyon.", scope, event_time="2024-01-01")
    await svc.add("Omar: I moved to Paris.", scope, event_time="2024-06-01")
    await svc.add("Omar: I moved to Berlin.", scope, event_time="2025-06-01")
    assert len([q for q in asked_about(model, "Lyon") if "Berlin" in q]) == 0  # Paris speaks for Lyon


async def test_a_note_minutes_after_another_in_the_same_sitting_is_not_judged_against_it(
    make_service: Any, scope: Scope
) -> None:
    """A value changes between sittings: a line a minute later elaborates (a new job, then which one)."""
    svc, model = await _service(make_service, updates_responder(lambda a, b: 0.9))
    job = await svc.add("Maya: I moved to Berlin for a new job.", scope, event_time="2023-09-02T19:00:00")
    which = await svc.add("Maya: I work as a nurse at the Charite now.", scope, event_time="2023-09-02T19:01:00")
    asked = [str(m[-1].content) for m in model.calls if str(m[0].content) == SUPERSEDE_SYSTEM]
    assert which.superseded == [] and which.conflicts == [] and not asked
    later = await svc.add("Maya: I work at the Vivantes clinic now.", scope, event_time="2024-04-15T20:00:00")
    assert {s.older_id for s in later.superseded} >= {which.note.id}  # the next sitting may change it
    assert job.note.id not in {s.newer_id for s in later.superseded}


async def test_the_updates_eval_scores_the_shipped_gold_with_a_scripted_model(make_service: Any, tmp_path: Any) -> None:
    from graphmem.evaluation.updates import UpdatesConfig, load_gold, run_updates_eval, updates_markdown

    (maya,) = load_gold(None, ["maya-moves"])
    right = {(maya.turns[a - 1].text, maya.turns[b - 1].text) for a, b in maya.supersedes}

    def gold_says(a: str, b: str) -> float:  # a: earlier, b: later
        return 0.9 if any(a.endswith(old) and b.endswith(new) for new, old in right) else 0.02

    first_new, first_old = maya.supersedes[0]  # the second question says this gold pair can both hold

    def both_hold(a: str, b: str) -> float:
        return 0.9 if (a, b) == (maya.turns[first_old - 1].content, maya.turns[first_new - 1].content) else 0.1

    responder = updates_responder(gold_says, coexist=both_hold, answer="Berlin, before Lyon")
    svc, _ = await _service(make_service, responder)
    result = await run_updates_eval(svc, UpdatesConfig(conversations=("maya-moves",), run_id="test-updates-eval"))
    on = result["supersession_on"]["overall"]
    assert on["supersession"]["precision"] == 1.0
    assert on["supersession"]["recall"] == (len(maya.supersedes) - 1) / len(maya.supersedes)
    assert on["refused"] == {"gold": 1, "other": 0}  # the recall it cost, reported as such
    assert on["answers"]["now"]["asked"] == 4 and on["answers"]["before"]["asked"] == 3
    assert on["per_note"]["llm_calls"] > 0
    md = updates_markdown(result)
    assert "supersession_on" in md and f"refused as both true: gold [[{first_new}, {first_old}]], other 0" in md


async def test_deleting_the_newer_note_makes_the_older_current_again(make_service: Any, scope: Scope) -> None:
    svc, _ = await _service(make_service, updates_responder(moves))
    lyon = await svc.add("Ann: I live in Lyon.", scope, event_time="2021-03-01")
    berlin = await svc.add("Ann: I moved to Berlin.", scope, event_time="2024-06-01")
    assert [s.older_id for s in berlin.superseded] == [lyon.note.id]
    (row,) = await svc.store.timeline([lyon.note.id], scope)
    assert row.valid_to == datetime(2024, 6, 1, tzinfo=UTC) and row.superseded_by == [berlin.note.id]
    await svc.delete(berlin.note.id, scope)
    (row,) = await svc.store.timeline([lyon.note.id], scope)
    assert row.valid_to is None and row.superseded_by == []
    hits = await svc.search("Where does Ann live?", scope, k=2)
    assert [h.note.id for h in hits] == [lyon.note.id] and hits[0].timeline.status == "current"  # type: ignore[union-attr]


async def test_the_probe_scores_each_threshold(make_service: Any) -> None:
    from graphmem.evaluation.updates import UpdatesConfig, run_probe

    svc, _ = await _service(make_service, updates_responder(moves, knock_on=commutes))
    result = await run_probe(svc, UpdatesConfig(conversations=("maya-moves",)))
    (conv,) = result["conversations"]
    assert {(r["earlier"], r["later"]) for r in conv["supersede"]} >= {(1, 6), (3, 7), (5, 8), (4, 10)}
    assert all(r["earlier"] < r["later"] for r in conv["supersede"])
    at_half = next(r for r in result["supersede_thresholds"] if r["threshold"] == 0.5)
    assert at_half["right"] >= 1 and at_half["precision"] is not None
    assert conv["calls"] == len(conv["supersede"]) + len(conv["knock_on"])


async def test_undoing_the_add_removes_its_supersession(make_service: Any, scope: Scope) -> None:
    svc, _ = await _service(make_service, updates_responder(moves))
    lyon = await svc.add("Ann: I live in Lyon.", scope, event_time="2021-03-01")
    berlin = await svc.add("Ann: I moved to Berlin.", scope, event_time="2024-06-01")
    assert len(berlin.superseded) == 1
    preview = await svc.undo_add(berlin.note.id, scope, dry_run=True)
    assert preview.updates_removed == 1
    (row,) = await svc.store.timeline([lyon.note.id], scope)
    assert row.superseded_by == [berlin.note.id]  # a dry run writes nothing
    undone = await svc.undo_add(berlin.note.id, scope)
    assert undone.updates_removed == 1
    (row,) = await svc.store.timeline([lyon.note.id], scope)
    assert row.superseded_by == [] and row.valid_to is None


async def test_an_agentic_ingest_records_each_supersession_once(make_service: Any, scope: Scope) -> None:
    from graphmem.models import NoteInput

    svc, model = await _service(make_service, updates_responder(moves))
    report = await svc.ingest(
        [
            NoteInput(content="Ann: I moved to Berlin.", event_time="2024-06-01"),
            NoteInput(content="Ann: I live in Lyon.", event_time="2021-03-01"),  # an older fact, later in the batch
            NoteInput(content="Bo: I play the cello.", event_time="2021-03-02"),
        ],
        scope,
        concurrency=2,
    )
    berlin, lyon, _ = report.items
    recorded = [(s.newer_id, s.older_id) for it in report.items for s in it.superseded]
    assert recorded == [(berlin.note_id, lyon.note_id)]  # judged once, from the later item's side
    assert lyon.superseded and not berlin.superseded
    asked = [m for m in model.calls if str(m[0].content) == SUPERSEDE_SYSTEM]
    assert len([m for m in asked if "Berlin" in str(m[-1].content) and "Lyon" in str(m[-1].content)]) == 1


async def test_consolidation_only_adds_previews_first_and_is_undone_like_an_add(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    svc, model = await _service(make_service, updates_responder(moves))
    lyon = await svc.add("Ann: I live in Lyon.", scope, event_time="2021-03-01")
    paris = await svc.add("Ann: I moved to Paris.", scope, event_time="2022-05-01")
    before = {n: _state(graph, n) for n in (lyon.note.id, paris.note.id)}
    count = await svc.count(scope)

    preview = await svc.consolidate(scope)  # a dry run by default: proposes, writes nothing
    (p,) = preview.syntheses
    assert preview.dry_run and p.status == "proposed" and p.sources == [paris.note.id, lyon.note.id]
    assert "since 1 May 2022" in p.content and "1 March 2021 to 1 May 2022" in p.content and "Lyon" in p.content
    assert await svc.count(scope) == count

    done = await svc.consolidate(scope, dry_run=False)
    assert [s.status for s in done.syntheses] == ["written"]
    derived = graph.q(
        "MATCH (s:Note {id: $id})-[r:DERIVED_FROM]->(n:Note) RETURN n.id AS id, r.user_id AS u", id=p.note_id
    )
    assert {r["id"] for r in derived} == {lyon.note.id, paris.note.id} and {r["u"] for r in derived} == {scope.user_id}
    assert (await svc.get(p.note_id, scope)).category == "synthesis"
    assert {n: _state(graph, n) for n in before} == before  # sources never change
    assert [s.status for s in (await svc.consolidate(scope, dry_run=False)).syntheses] == ["exists"]

    # The chain grows: the new synthesis supersedes the earlier one (versioned, nothing rewritten).
    berlin = await svc.add("Ann: I moved to Berlin.", scope, event_time="2024-06-01")
    assert {s.older_id for s in berlin.superseded} >= {paris.note.id}
    grown = await svc.consolidate(scope, dry_run=False)
    (g,) = [s for s in grown.syntheses if s.status == "written"]
    assert g.replaces == p.note_id and g.sources[0] == berlin.note.id
    hits = await svc.search("Where has Ann lived?", scope, k=5)
    assert g.note_id in [h.note.id for h in hits] and p.note_id not in [h.note.id for h in hits]
    await svc.ask("Where has Ann lived?", scope, k=5)
    assert "DERIVED: a summary of other notes" in str(model.calls[-1][-1].content)

    undone = await svc.undo_add(g.note_id, scope, delete_note=True)
    assert undone.note_deleted and await svc.store.existing_ids([g.note_id], scope) == set()
    (row,) = await svc.store.timeline([p.note_id], scope)
    assert row.superseded_by == []  # the earlier synthesis is current again


async def test_rest_search_as_of_and_consolidate(make_service: Any, scope: Scope) -> None:
    import httpx
    from pydantic import SecretStr

    from graphmem.interfaces.rest import create_app

    key = "updates-key-0123456789abcdef"
    svc, _ = await _service(make_service, updates_responder(moves), api_keys=SecretStr(key), auth_disabled=False)
    lyon = await svc.add("Ann: I live in Lyon.", scope, event_time="2021-03-01")
    berlin = await svc.add("Ann: I moved to Berlin.", scope, event_time="2024-06-01")
    transport = httpx.ASGITransport(app=create_app(svc.settings, svc))
    headers = {"X-API-Key": key, "X-User-Id": scope.user_id}
    async with httpx.AsyncClient(transport=transport, base_url="http://api", headers=headers) as client:
        now = await client.post("/v1/search", json={"query": "Where does Ann live?", "k": 1})
        assert now.status_code == 200, now.text
        (hit,) = now.json()["hits"]
        assert hit["note"]["id"] == berlin.note.id and hit["timeline"]["history"][0]["note_id"] == lyon.note.id
        then = await client.post("/v1/search", json={"query": "Where does Ann live?", "k": 2, "as_of": "2022-01-01"})
        assert [h["note"]["id"] for h in then.json()["hits"]] == [lyon.note.id]
        dry = await client.post("/v1/consolidate", json={})
        assert dry.status_code == 200 and dry.json()["dry_run"] is True
        assert [s["status"] for s in dry.json()["syntheses"]] == ["proposed"]
        done = await client.post("/v1/consolidate", json={"dry_run": False})
        assert [s["status"] for s in done.json()["syntheses"]] == ["written"]


async def test_the_updates_eval_compares_with_supersession_off(make_service: Any) -> None:
    from graphmem.evaluation.updates import UpdatesConfig, run_updates_eval

    svc, _ = await _service(make_service, updates_responder(moves, answer="Lyon"))
    off, _ = await _service(make_service, updates_responder(moves, answer="Lyon"), enable_supersession=False)
    cfg = UpdatesConfig(conversations=("omar-flatmate",), compare=True, run_id="test-updates-compare")
    result = await run_updates_eval(svc, cfg, baseline=off)
    assert result["supersession_off"]["overall"]["supersession"]["right"] == 0
    alone = await run_updates_eval(off, UpdatesConfig(conversations=("omar-flatmate",), run_id="test-updates-off"))
    assert "supersession_off" in alone and "supersession_on" not in alone


async def test_export_and_import_keep_supersessions_conflicts_and_derivations(make_service: Any, scope: Scope) -> None:
    """Nothing of the timeline is lost on the way through export and import (into another scope)."""

    def moves_or_diets(a: str, b: str) -> float:
        return max(moves(a, b), 0.88 if {"vegan", "steak"} <= content_words(a + " " + b) else 0.02)

    svc, _ = await _service(make_service, updates_responder(moves_or_diets))
    lyon = await svc.add("Ann: I live in Lyon with my cat.", scope, event_time="2021-03-01")
    berlin = await svc.add("Ann: I moved to Berlin in June.", scope, event_time="2024-06-01")
    await svc.add("Ann: I am vegan.", scope, event_time="2024-05-01T10:00:00")
    steak = await svc.add("Ann: I eat steak every day.", scope, event_time="2024-05-01T10:00:00")
    assert berlin.superseded and steak.conflicts
    consolidated = await svc.consolidate(scope, dry_run=False)
    assert consolidated.syntheses

    records = await svc.export_notes(scope)
    by_id = {r["id"]: r for r in records}
    assert [(u["type"], u["target_id"]) for u in by_id[berlin.note.id]["updates"]] == [("SUPERSEDES", lyon.note.id)]
    assert by_id[berlin.note.id]["updates"][0]["at"].startswith("2024-06-01")
    assert [u["type"] for u in by_id[steak.note.id]["updates"]] == ["CONFLICTS_WITH"]
    assert any(u["type"] == "DERIVED_FROM" for r in records for u in r["updates"])

    other = Scope(user_id=scope.user_id + "-copy")
    try:
        assert await svc.import_notes(records, other) == len(records)
        again = await svc.export_notes(other)
        strip = {"created_at"}  # an update's own creation time is the import's (its `at` is kept)

        def updates(recs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
            return {r["id"]: [{k: v for k, v in u.items() if k not in strip} for u in r["updates"]] for r in recs}

        assert updates(again) == updates(records)
        hits = {h.note.id for h in await svc.search("Where does Ann live?", other, k=2)}
        assert berlin.note.id in hits and lyon.note.id not in hits  # the copy knows Lyon is superseded
    finally:
        await BenchQueries(svc.store).delete_scope(other)


async def test_judging_a_scope_again_replaces_what_older_rules_recorded(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    """rejudge_updates: a supersession recorded without the gate (a thank-you "superseded" by a move)
    goes, the real one is judged again and recorded, and no note changes."""
    import pytest

    from graphmem.errors import InvalidInputError

    loose, _ = await _service(make_service, updates_responder(lambda a, b: 0.9), supersession_gate=False)
    lyon = await loose.add("Ann: I live in Lyon.", scope, event_time="2021-03-01")
    thanks = await loose.add("Ann: Thanks for the tea, Bo, it was lovely!", scope, event_time="2022-01-01")
    berlin = await loose.add("Ann: I moved to Berlin.", scope, event_time="2024-06-01")
    assert {s.older_id for s in berlin.superseded} == {lyon.note.id, thanks.note.id}
    before = {n.note.id: _state(graph, n.note.id) for n in (lyon, thanks, berlin)}

    svc, _ = await _service(make_service, updates_responder(moves))
    report = await svc.rejudge_updates(scope)
    assert [it.note_id for it in report.items] == [lyon.note.id, thanks.note.id, berlin.note.id]
    assert [(s.newer_id, s.older_id) for it in report.items for s in it.superseded] == [(berlin.note.id, lyon.note.id)]
    (row,) = await svc.store.timeline([thanks.note.id], scope)
    assert row.valid_to is None and row.superseded_by == []  # current again
    (row,) = await svc.store.timeline([lyon.note.id], scope)
    assert row.superseded_by == [berlin.note.id]
    assert {n: _state(graph, n) for n in before} == before

    off, _ = await _service(make_service, updates_responder(moves), enable_supersession=False)
    with pytest.raises(InvalidInputError, match="supersession is off"):
        await off.rejudge_updates(scope)
    (row,) = await svc.store.timeline([lyon.note.id], scope)
    assert row.superseded_by == [berlin.note.id]  # refused before anything was deleted


async def test_a_resumed_ingest_judges_the_notes_its_interrupted_run_stored(make_service: Any, scope: Scope) -> None:
    """The supersession pass runs once an ingest's notes are stored; a run stopped before it leaves
    notes never judged, which the resumed run judges (and a later run does not judge again)."""
    from graphmem.models import NoteInput

    def asked_about_both(model: Any) -> int:
        return len(
            [
                m
                for m in model.calls
                if str(m[0].content) == SUPERSEDE_SYSTEM
                and "Berlin" in str(m[-1].content)
                and "Lyon" in str(m[-1].content)
            ]
        )

    first = [NoteInput(content="Ann: I live in Lyon.", event_time="2021-03-01")]
    first.append(NoteInput(content="Ann: I moved to Berlin.", event_time="2024-06-01"))
    # the interrupted run, as it stands when stopped before its pass: the notes stored, none judged
    stopped, _ = await _service(make_service, updates_responder(moves), enable_supersession=False)
    await stopped.ingest(first, scope)

    svc, model = await _service(make_service, updates_responder(moves))
    cello = NoteInput(content="Bo: I play the cello.", event_time="2024-07-01")
    report = await svc.ingest([*first, cello], scope)
    lyon, berlin, _ = report.items
    assert (lyon.status, berlin.status) == ("existing", "existing")
    assert [(s.newer_id, s.older_id) for s in berlin.superseded] == [(berlin.note_id, lyon.note_id)]
    assert asked_about_both(model) == 1

    again, model2 = await _service(make_service, updates_responder(moves))
    flute = NoteInput(content="Bo: I switched to the flute.", event_time="2024-08-01")
    await again.ingest([*first, cello, flute], scope)
    assert asked_about_both(model2) == 0  # judged once: the resumed run marked them


async def test_a_rerun_that_adds_nothing_still_judges_what_a_stopped_run_left(make_service: Any, scope: Scope) -> None:
    """A run stopped during its supersession pass (every note stored, some never judged), rerun as it
    was: nothing is added, and the pass still judges those notes, with its progress heard
    (7 December: conv-41's rerun skipped the pass and left 41 notes unjudged)."""
    from graphmem.models import NoteInput

    notes = [
        NoteInput(content="Ann: I live in Lyon.", event_time="2021-03-01"),
        NoteInput(content="Ann: I moved to Berlin.", event_time="2024-06-01"),
    ]
    stopped, _ = await _service(make_service, updates_responder(moves), enable_supersession=False)
    await stopped.ingest(notes, scope)
    raw = NoteInput(content="Ann: The tram was late again.", event_time="2024-06-02")
    await stopped.ingest([raw], scope, enrich=False)  # stored raw: nothing for the pass to judge, ever
    notes.append(raw)

    svc, _ = await _service(make_service, updates_responder(moves))
    heard: list[tuple[int, int]] = []
    report = await svc.ingest(notes, scope, on_judged=lambda done, total: heard.append((done, total)))
    lyon, berlin, _ = report.items
    assert (lyon.status, berlin.status) == ("existing", "existing")
    assert [(s.newer_id, s.older_id) for s in berlin.superseded] == [(berlin.note_id, lyon.note_id)]
    assert heard[0] == (0, 2) and heard[-1] == (2, 2)

    again, model = await _service(make_service, updates_responder(moves))
    heard.clear()
    await again.ingest(notes, scope, on_judged=lambda done, total: heard.append((done, total)))
    assert heard == [] and model.calls == []  # all judged: no pass, no model started


def test_cli_updates_answers_without_the_prompt_cache(settings: Any, tmp_path: Any, monkeypatch: Any) -> None:
    """`eval updates` asks its questions as `eval locomo` does: on the local model without llama-server's
    prompt cache (answers that repeat); the ingest and the decisions keep the cached model."""
    import json

    from typer.testing import CliRunner

    import graphmem.local
    from graphmem.interfaces.cli import app
    from graphmem.interfaces.cli import evaluate as cli
    from tests.fakes import ScriptedChatModel

    main = ScriptedChatModel(updates_responder(moves))
    answering = ScriptedChatModel(updates_responder(moves))
    monkeypatch.setattr(graphmem.local, "chat_model", lambda s: main if s.local_llm_cache_prompt else answering)
    local = settings.model_copy(
        update={"local_llm_port": 18011, "link_decision": "pairwise", "enable_evolution": False}
    )
    monkeypatch.setattr(cli, "_settings", lambda **kw: local)
    res = CliRunner().invoke(app, ["eval", "updates", "-c", "maya-moves", "--out", str(tmp_path / "u"), "--json"])
    assert res.exit_code == 0, res.output
    asked = json.loads((tmp_path / "u" / "updates.json").read_text())["supersession_on"]["overall"]["answers"]
    questions = sum(v["asked"] for v in asked.values())
    is_answer = ["answer questions" in str(c[0].content) for c in answering.calls]
    assert questions > 0 and is_answer == [True] * questions
    assert not any("answer questions" in str(c[0].content) for c in main.calls)
    assert main.calls  # the ingest's steps
