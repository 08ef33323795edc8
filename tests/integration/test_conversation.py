"""Conversation turns (FOLLOWS), the dated answer context, and batched retrieval statistics, on the real Neo4j."""

from __future__ import annotations

from typing import Any

import pytest

from graphmem.errors import InvalidInputError, NoteNotFoundError
from graphmem.models import FOLLOWS_REASON, LinkType, Scope
from graphmem.service import stats as retrieval_stats
from graphmem.service.memory import NoteInput
from tests.fakes import amem_responder, step_of

pytestmark = pytest.mark.asyncio(loop_scope="session")

TURNS = [
    ("Ada: I adopted a grey kitten called Pixel last Sunday.", "1:56 pm on 8 May, 2023"),
    ("Ben: Lovely! What does Pixel like to eat?", "1:56 pm on 8 May, 2023"),
    ("Ada: Only salmon, she refuses everything else.", "1:56 pm on 8 May, 2023"),
]


async def test_add_with_follows_links_turn_to_previous_turn(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service(enable_enrichment=False)
    first = await svc.add(TURNS[0][0], scope, event_time=TURNS[0][1])
    second = await svc.add(TURNS[1][0], scope, event_time=TURNS[1][1], follows=first.note.id)
    assert [(x.type, x.target_id) for x in second.links] == [(LinkType.FOLLOWS, first.note.id)]
    rows = graph.q(
        "MATCH (a:Note {id: $a})-[r:FOLLOWS]->(b:Note {id: $b}) RETURN r.reason AS reason, r.strength AS strength, "
        "r.user_id AS user_id, r.caused_by AS caused_by",
        a=second.note.id,
        b=first.note.id,
    )
    assert rows == [{"reason": FOLLOWS_REASON, "strength": 1.0, "user_id": scope.user_id, "caused_by": second.note.id}]


async def test_follows_must_name_a_note_of_the_same_scope(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service(enable_enrichment=False)
    other = Scope(user_id=scope.user_id, agent_id="someone-else")
    theirs = await svc.add("a note of another scope", other)
    try:
        before = graph.q("MATCH (n:Note {user_id: $u}) RETURN count(n) AS c", u=scope.user_id)[0]["c"]
        with pytest.raises(NoteNotFoundError):
            await svc.add("Ben: hello", scope, follows=theirs.note.id)
        with pytest.raises(NoteNotFoundError):
            await svc.add("Ben: hello", scope, follows="no-such-note")
        with pytest.raises(InvalidInputError):
            await svc.add("Ben: hello", scope, follows="bad id with spaces")
        with pytest.raises(NoteNotFoundError):
            await svc.add_many([NoteInput(content="x", follows=theirs.note.id)], scope)
        with pytest.raises(InvalidInputError):
            await svc.add_many([NoteInput(content="x", note_id="n1", follows="n1")], scope)
        after = graph.q("MATCH (n:Note {user_id: $u}) RETURN count(n) AS c", u=scope.user_id)[0]["c"]
        assert after == before  # nothing half-written
    finally:
        await svc.delete(theirs.note.id, other)


async def test_bulk_turns_follow_in_order_and_a_rerun_repairs_nothing_twice(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    svc, _ = await make_service()
    items = [
        NoteInput(content=t, note_id=f"turn-{i}", event_time=w, follows=f"turn-{i - 1}" if i else None)
        for i, (t, w) in enumerate(TURNS)
    ]
    # A turn may name one later in the batch: the links are written after every note.
    items.append(NoteInput(content="Ada: (an aside about the weather)", note_id="turn-x", follows="turn-2"))
    for _ in range(2):
        assert await svc.add_many(items[::-1], scope, batch_size=2) == [i.note_id for i in items[::-1]]
    chain = graph.q(
        "MATCH (a:Note {user_id: $u})-[r:FOLLOWS]->(b:Note) RETURN a.id AS a, b.id AS b ORDER BY a",
        u=scope.user_id,
    )
    assert chain == [{"a": "turn-1", "b": "turn-0"}, {"a": "turn-2", "b": "turn-1"}, {"a": "turn-x", "b": "turn-2"}]


async def test_search_brings_the_turns_around_a_hit_and_ask_writes_them_dated(make_service: Any, scope: Scope) -> None:
    # ask packs the search's links here (answer_links_per_hit unset), to see the linked turns written
    svc, model = await make_service(
        amem_responder(answer="salmon"), enable_enrichment=False, search_mode="hybrid", answer_links_per_hit=None
    )
    ids = await svc.add_many(
        [
            NoteInput(content=t, note_id=f"t{i}", event_time=w, follows=f"t{i - 1}" if i else None)
            for i, (t, w) in enumerate(TURNS)
        ]
        + [
            NoteInput(content=f"Ben: filler remark number {i} about football.", event_time="9 June, 2023")
            for i in range(12)
        ],
        scope,
    )
    assert len(ids) == 15
    hits = await svc.search("What does Pixel eat?", scope, k=1)
    found = [h.note.id for h in hits]
    # The question's words are in t1; the answer is in the next turn, reached through FOLLOWS.
    assert found[0] == "t1" and "t2" in found
    assert any("link" in h.found_by and h.linked_via[0].type == LinkType.FOLLOWS for h in hits)

    res = await svc.ask("What does Pixel eat?", scope, k=1)
    prompt = str([m for m in model.calls if step_of(m) == "answer"][-1][-1].content)
    block = prompt.split("Memory notes:\n", 1)[1].split("\n\nQuestion:", 1)[0]
    lines = block.splitlines()
    assert lines[0] == "[1:56 pm on 8 May, 2023]"  # one header per date, then the turns in time order
    assert lines.count("[1:56 pm on 8 May, 2023]") == 1
    assert [x for x in lines if x.startswith("- ")] == [f"- {TURNS[i][0]}" for i in range(3) if f"t{i}" in found]
    assert res.answer == "salmon" and {h.note.id for h in res.notes} == set(found)


async def test_ask_fills_what_the_budget_leaves_with_the_hits_linked_turns(make_service: Any, scope: Scope) -> None:
    # The default: ask's hits first, in rank order; the turns linked to them only after every hit, and only
    # as far as the budget holds (answer_fill_links_per_hit).
    svc, _ = await make_service(amem_responder(answer="salmon"), enable_enrichment=False, search_mode="hybrid")
    assert svc.settings.answer_fill_links_per_hit == 2 and svc.settings.answer_links_per_hit == 0
    await svc.add_many(
        [
            NoteInput(content=t, note_id=f"t{i}", event_time=w, follows=f"t{i - 1}" if i else None)
            for i, (t, w) in enumerate(TURNS)
        ]
        + [NoteInput(content=f"Ben: filler remark number {i} about football.", note_id=f"f{i}") for i in range(12)]
        # a second hit that is not a turn of Pixel's: the turns around t1 rank below it, found by the vector too
        + [NoteInput(content="Cara: what do kittens eat?", note_id="c")],
        scope,
    )
    hits = await svc.search("What does Pixel eat?", scope, k=2, links_per_hit=0)
    assert [h.note.id for h in hits] == ["t1", "c"]
    lower = await svc.search("What does Pixel eat?", scope, k=10, links_per_hit=0)
    assert {"t0", "t2"} <= {h.note.id for h in lower[2:]}  # the linked turns are search hits further down
    roomy = await svc.ask_context("What does Pixel eat?", scope, k=2, token_budget=1000)
    got = [h.note.id for h in roomy.hits]
    assert got[:2] == [h.note.id for h in hits]  # the two hits first, as the search ranked them
    assert "t2" in got[2:] and all("link" in h.found_by for h in roomy.hits[2:])  # then their linked turns
    # under any budget a linked turn only follows every hit: it never takes a hit's place
    for budget in range(50, roomy.tokens + 1, 5):
        packed = await svc.ask_context("What does Pixel eat?", scope, k=2, token_budget=budget)
        ids = [h.note.id for h in packed.hits]
        assert ids == [i for i in got if i in ids], (budget, ids)  # the roomy context's order
        if any(h.found_by == ["link"] for h in packed.hits):
            assert ids[:2] == got[:2], (budget, ids)
    off, _ = await make_service(amem_responder(answer="salmon"), enable_enrichment=False, answer_fill_links_per_hit=0)
    assert [h.note.id for h in (await off.ask_context("What does Pixel eat?", scope, k=2)).hits] == got[:2]


async def test_ask_keeps_the_context_within_the_budget(make_service: Any, scope: Scope) -> None:
    svc, _ = await make_service(amem_responder(answer="ok"), enable_enrichment=False)
    await svc.add_many(
        [NoteInput(content=f"Note {i}: " + "word " * 30, event_time=f"{i + 1} May, 2023") for i in range(20)], scope
    )
    for budget in (60, 200, 500):
        res = await svc.ask("word", scope, k=20, token_budget=budget)
        assert 0 < res.context_tokens <= budget
        assert len(res.notes) < 20


async def test_retrieval_statistics_are_batched_and_counted(
    make_service: Any, scope: Scope, graph: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval_stats, "TOUCH_DELAY", 3600.0)
    svc, _ = await make_service(enable_enrichment=False, search_mode="vector")
    await svc.add_many(
        [NoteInput(content=f"fact number {i} about gardening", note_id=f"g{i}") for i in range(5)], scope
    )
    for _ in range(7):
        assert len(await svc.search("gardening", scope, k=2)) == 2

    def stats() -> dict[str, Any]:
        return graph.q(
            "MATCH (n:Note {user_id: $u}) RETURN sum(n.retrieval_count) AS c, count(n.last_accessed) AS touched",
            u=scope.user_id,
        )[0]

    assert stats() == {"c": 0, "touched": 0}  # nothing written per search
    await svc.flush()
    assert stats() == {"c": 14, "touched": 2}  # 7 searches x 2 hits, in one write
    await svc.search("gardening", scope, k=2)
    await svc.close()  # close writes what is pending
    assert stats() == {"c": 16, "touched": 2}


async def test_full_text_finds_this_scope_when_other_scopes_flood_the_index(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    """The full-text index spans all scopes; 2,000 better-matching notes elsewhere must not hide ours."""
    svc, _ = await make_service(enable_enrichment=False)
    crowd = Scope(user_id=scope.user_id, agent_id="crowd")
    try:
        await svc.add_many([NoteInput(content=f"kitten kitten kitten salmon number {i}") for i in range(2000)], crowd)
        await svc.add_many(
            [NoteInput(content=f"Ada's kitten likes salmon, fact {i}.", note_id=f"mine-{i}") for i in range(3)]
            + [NoteInput(content="Ben repairs sailboats.")],
            scope,
        )
        hits = await svc.store.fulltext_search("kitten salmon", scope, k=5)
        assert sorted(m.note.id for m in hits) == ["mine-0", "mine-1", "mine-2"]
        assert all(m.note.scope == scope for m in hits)
    finally:
        graph.q("MATCH (n:Note {user_id: $u, agent_id: 'crowd'}) DETACH DELETE n", u=scope.user_id)
