"""The agentic bulk ingest against the real Neo4j with scripted models: A-MEM's order rule with notes
in flight, two notes evolving one neighbour, resume without duplicates, per-item errors, scopes in
parallel. Timing is forced with gates (asyncio barriers) in the model, never measured."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import AIMessage, BaseMessage

from graphmem.errors import InvalidInputError, StaleWriteError
from graphmem.evaluation.ingest_bench import order_violations
from graphmem.models import (
    EnrichmentStatus,
    EvolutionPlan,
    IngestItem,
    IngestStatus,
    Link,
    LinkType,
    NeighbourEvolution,
    Note,
    NoteInput,
    Scope,
)
from graphmem.service.text import cosine, embed_text
from tests.fakes import (
    EVOLVED_CONTEXT,
    Gate,
    GatedModel,
    Responder,
    amem_responder,
    barrier_gate,
    content_of,
    evolving_responder,
    shown_ids,
    step_of,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

PETS = [
    "Maya adopted a grey kitten called Pixel from the shelter.",
    "Pixel, Maya's kitten, sleeps on the warm laptop keyboard.",
    "Maya bought a scratching post because Pixel ruined the sofa.",
    "The vet said Pixel is healthy and should get her vaccines in May.",
    "Maya's kitten Pixel chased a moth around the kitchen all night.",
    "Pixel the kitten learned to open the cupboard with the cat food.",
]


async def gated_service(make_service: Any, responder: Responder, gate: Gate | None, **overrides: Any) -> Any:
    model = GatedModel(responder, gate=gate)
    svc, _ = await make_service(chat_model=model, **overrides)
    return svc, model


async def test_order_rule_candidates_are_every_earlier_note_including_those_in_flight(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    # Every decision waits until all of them run at once: no note is written before the later
    # notes decide, so the earlier notes they must see are in flight, not in the store.
    svc, model = await gated_service(
        make_service, amem_responder(evolve=False), barrier_gate("evolve", len(PETS) - 1), neighbour_k=10
    )
    items = [NoteInput(content=c, note_id=f"{scope.user_id}-p{i}") for i, c in enumerate(PETS)]
    report = await svc.ingest(items, scope, concurrency=len(PETS))

    assert [x.status for x in report.items] == [IngestStatus.ADDED] * len(PETS)
    ids = [x.note_id for x in report.items]
    shown = {content_of(m): shown_ids(m) for m in model.calls if step_of(m) == "evolve"}
    for i, item in enumerate(report.items):
        earlier = set(ids[:i])
        assert set(item.candidates) == earlier  # all earlier notes (k=10 > 5 notes), none later
        if i:
            assert set(shown[PETS[i]]) == earlier  # ...and that is what the model was shown
    # Written in order, each linking to the nearest earlier note it was shown.
    created = graph.q("MATCH (n:Note {user_id: $u}) RETURN n.id AS id ORDER BY n.created_at", u=scope.user_id)
    assert len(created) == len(PETS)
    links = graph.q("MATCH (a:Note {user_id: $u})-[r:SUPPORTS]->(b:Note) RETURN a.id AS a, b.id AS b", u=scope.user_id)
    assert {(r["a"], r["b"]) for r in links} == {(x.note_id, x.candidates[0]) for x in report.items[1:]}
    assert all(ids.index(r["b"]) < ids.index(r["a"]) for r in links)


async def test_candidates_are_the_nearest_earlier_notes(make_service: Any, scope: Scope) -> None:
    """With k below the number of earlier notes, the candidates are the k nearest of them, in-flight
    or stored: the same set a sequential add would have offered (embeddings of content only)."""
    svc, _ = await gated_service(
        make_service,
        amem_responder(evolve=False),
        None,
        neighbour_k=2,
        embed_text_variant="content",
        link_word_candidates=0,  # the nearest only (word candidates: tests/unit/test_word_candidates.py)
    )
    items = [NoteInput(content=c, note_id=f"{scope.user_id}-n{i}") for i, c in enumerate(PETS)]
    report = await svc.ingest(items, scope, concurrency=4)
    vectors = np.asarray(await svc.embedder.aembed_documents(PETS))
    ids = [x.note_id or "" for x in items]
    # the benchmark's check: no later note, the right number, no nearer earlier note left out
    # (beyond the vector index's quantization noise)
    assert order_violations(report, ids, vectors, 2) == (0, 0, [])
    assert all(len(x.candidates) == min(i, 2) for i, x in enumerate(report.items))


async def test_two_in_flight_notes_evolving_one_neighbour_apply_in_order_and_keep_both_versions(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    plain, _ = await make_service()
    neighbour = (await plain.add("Maya's kitten Pixel is grey and very playful.", scope)).note
    # Both decisions are made at once, on the neighbour as stored (version 1).
    svc, _ = await gated_service(make_service, evolving_responder(neighbour.id), barrier_gate("evolve", 2))
    items = [
        NoteInput(content="A: Pixel the grey kitten now weighs two kilos.", note_id=f"{scope.user_id}-a"),
        NoteInput(content="B: Pixel the playful kitten broke a vase.", note_id=f"{scope.user_id}-b"),
    ]
    report = await svc.ingest(items, scope, concurrency=2)
    a, b = report.items
    assert a.status == b.status == IngestStatus.ADDED
    assert (a.rebased, b.rebased) == (0, 1)  # B was decided on version 1 but applied on A's result

    node = graph.q("MATCH (n:Note {id: $id}) RETURN n", id=neighbour.id)[0]["n"]
    assert node["version"] == 3
    assert node["context"] == EVOLVED_CONTEXT["B"]  # the later note's context
    assert node["tags"] == ["conversation", "personal", "tag-a", "tag-b"]  # both notes' additions
    versions = graph.q("MATCH (:Note {id: $id})-[:PREVIOUS_VERSION]->(v) RETURN v ORDER BY v.version", id=neighbour.id)
    # Neither version is lost: the original (replaced by A) and A's result (replaced by B).
    assert [(v["v"]["version"], v["v"]["changed_by"]) for v in versions] == [(1, a.note_id), (2, b.note_id)]
    assert versions[0]["v"]["context"] == neighbour.context
    assert versions[1]["v"]["context"] == EVOLVED_CONTEXT["A"]
    assert versions[1]["v"]["tags"] == ["conversation", "personal", "tag-a"]
    # Each add reports what it replaced: B the state A left.
    assert a.evolved[0].before["version"] == 1 and b.evolved[0].before["version"] == 2
    assert b.evolved[0].before["context"] == EVOLVED_CONTEXT["A"]
    # Evolution changes what the neighbour is read as, not where search finds it: its vector stays.
    stored = await svc.store.get(neighbour.id, scope, with_embedding=True)
    assert stored is not None and stored.embedding is not None
    original = await svc.embedder.aembed_query(embed_text(neighbour, "full"))
    assert cosine(stored.embedding, original) > 0.9999


async def test_with_evolution_reembed_an_evolved_neighbour_is_embedded_from_its_final_values(
    make_service: Any, scope: Scope
) -> None:
    plain, _ = await make_service()
    neighbour = (await plain.add("Maya's kitten Pixel is grey and very playful.", scope)).note
    svc, _ = await gated_service(
        make_service, evolving_responder(neighbour.id), barrier_gate("evolve", 2), evolution_reembed=True
    )
    items = [
        NoteInput(content="A: Pixel the grey kitten now weighs two kilos.", note_id=f"{scope.user_id}-a"),
        NoteInput(content="B: Pixel the playful kitten broke a vase.", note_id=f"{scope.user_id}-b"),
    ]
    assert [x.status for x in (await svc.ingest(items, scope, concurrency=2)).items] == [IngestStatus.ADDED] * 2
    stored = await svc.store.get(neighbour.id, scope, with_embedding=True)
    assert stored is not None and stored.embedding is not None and stored.context == EVOLVED_CONTEXT["B"]
    expected = await svc.embedder.aembed_query(embed_text(stored, "full"))
    original = await svc.embedder.aembed_query(embed_text(neighbour, "full"))
    assert cosine(stored.embedding, expected) > 0.9999 and cosine(stored.embedding, original) < 0.9999


async def test_an_interrupted_ingest_resumes_without_duplicates(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await gated_service(make_service, amem_responder(), None)
    # No note ids: ids come from the source id, or the content (the repeated content twice over).
    turns = [*PETS, PETS[0]]
    items = [NoteInput(content=c, source_id=f"t{i}" if i % 2 else None, follows=None) for i, c in enumerate(turns)]
    acked: list[IngestItem] = []
    task: asyncio.Task[Any] | None = None

    def interrupt(item: IngestItem) -> None:
        acked.append(item)
        if len(acked) == 3 and task is not None:
            task.cancel()  # Ctrl-C after three acknowledged notes, others in flight

    task = asyncio.ensure_future(svc.ingest(items, scope, concurrency=3, on_item=interrupt))
    with pytest.raises(asyncio.CancelledError):
        await task
    stored_ids = {r["id"] for r in graph.q("MATCH (n:Note {user_id: $u}) RETURN n.id AS id", u=scope.user_id)}
    assert {x.note_id for x in acked} <= stored_ids  # nothing acknowledged is lost

    report = await svc.ingest(items, scope, concurrency=3)
    statuses = [x.status for x in report.items]
    assert statuses.count(IngestStatus.EXISTING) == len(stored_ids) >= 3
    assert statuses.count(IngestStatus.ADDED) == len(items) - len(stored_ids)
    rows = graph.q("MATCH (n:Note {user_id: $u}) RETURN n.id AS id, n.content AS c", u=scope.user_id)
    assert len(rows) == len(items) == len({r["id"] for r in rows})  # each item once, the repeat too
    assert sorted(r["c"] for r in rows) == sorted(turns)
    again = await svc.ingest(items, scope, concurrency=3)
    assert [x.status for x in again.items] == [IngestStatus.EXISTING] * len(items)
    assert [x.note_id for x in again.items] == [x.note_id for x in report.items]


async def test_follows_chain_is_complete_after_a_resume(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await gated_service(make_service, amem_responder(), None, enable_enrichment=False)
    prefix = scope.user_id
    items = [
        NoteInput(content=c, note_id=f"{prefix}-f{i}", follows=f"{prefix}-f{i - 1}" if i else None)
        for i, c in enumerate(PETS)
    ]
    # A turn may name one later in the batch: written after its target.
    items.append(NoteInput(content="Maya: (an aside)", note_id=f"{prefix}-x", follows=f"{prefix}-f5"))
    items.insert(0, items.pop())
    first = await svc.ingest(items[1:5], scope, concurrency=2)  # a run cut short: some items only
    assert [x.status for x in first.items] == [IngestStatus.ADDED] * 4
    report = await svc.ingest(items, scope, concurrency=3)
    assert [x.status for x in report.items].count(IngestStatus.EXISTING) == 4
    chain = graph.q(
        "MATCH (a:Note {user_id: $u})-[:FOLLOWS]->(b:Note) RETURN a.id AS a, b.id AS b ORDER BY a", u=prefix
    )
    want = [{"a": f"{prefix}-f{i}", "b": f"{prefix}-f{i - 1}"} for i in range(1, 6)]
    assert chain == sorted([*want, {"a": f"{prefix}-x", "b": f"{prefix}-f5"}], key=lambda r: r["a"])


async def test_per_item_errors_do_not_stop_the_batch(make_service: Any, scope: Scope, graph: Any) -> None:
    base = amem_responder()

    def flaky(messages: list[BaseMessage]) -> AIMessage:
        if step_of(messages) == "enrich" and any("unlucky" in str(m.content) for m in messages):
            return AIMessage(content="this is not JSON")  # unusable twice: stored raw, PENDING
        return base(messages)

    svc, _ = await gated_service(make_service, flaky, None)
    other = Scope(user_id=scope.user_id + "-other")
    taken = await svc.add("A note of another scope.", other, note_id=f"{scope.user_id}-taken", enrich=False)
    try:
        items = [
            NoteInput(content=PETS[0]),
            NoteInput(content="   "),  # empty
            NoteInput(content="binary \x00 data"),  # control characters
            NoteInput(content=PETS[1], note_id=taken.note.id),  # another scope's id: ids are per scope
            NoteInput(content="An unlucky note the model cannot enrich."),
            NoteInput(content=PETS[2], follows="no-such-note"),
            NoteInput(content=PETS[3], note_id="bad id with spaces"),
            NoteInput(content=PETS[4], note_id=f"{scope.user_id}-dup"),
            NoteInput(content=PETS[5], note_id=f"{scope.user_id}-dup"),  # repeats the item before
            NoteInput(content=PETS[5]),
        ]
        seen: list[int] = []
        report = await svc.ingest(items, scope, concurrency=4, on_item=lambda x: seen.append(x.index))
        status = [x.status.value for x in report.items]
        assert status == [
            "added",
            "failed",
            "failed",
            "added",
            "added",
            "failed",
            "failed",
            "added",
            "failed",
            "added",
        ]
        assert sorted(seen) == list(range(len(items)))  # every item reported once
        errors = {x.index: x.error or "" for x in report.items if x.error}
        assert "empty" in errors[1] and "control characters" in errors[2]
        assert 3 not in errors and "no-such-note" in errors[5]
        assert "note id" in errors[6] and "repeats item 7" in errors[8]
        assert report.items[4].enrichment == EnrichmentStatus.PENDING  # kept, for `graphmem repair`
        stored = graph.q("MATCH (n:Note {user_id: $u}) RETURN n.id AS id", u=scope.user_id)
        assert {r["id"] for r in stored} == {x.note_id for x in report.items if x.status == IngestStatus.ADDED}
        assert report.summary()["failed"] == 5 and report.summary()["pending"] == 1
        theirs = graph.q("MATCH (n:Note {id: $id}) RETURN n.user_id AS u, n.content AS c", id=taken.note.id)
        assert sorted((r["u"], r["c"]) for r in theirs) == sorted(
            [(other.user_id, "A note of another scope."), (scope.user_id, PETS[1])]
        )
    finally:
        graph.q("MATCH (n) WHERE n.user_id = $u DETACH DELETE n", u=other.user_id)


async def test_scopes_run_in_parallel_and_never_share_candidates(make_service: Any, scope: Scope, graph: Any) -> None:
    # The first enrichment of each scope must run at the same time as the other's.
    barrier = asyncio.Barrier(2)
    firsts = {PETS[0], PETS[3]}

    async def gate(messages: list[BaseMessage]) -> None:
        if step_of(messages) == "enrich" and any(f in str(messages[-1].content) for f in firsts):
            await asyncio.wait_for(barrier.wait(), 30)

    svc, _ = await gated_service(make_service, amem_responder(), gate)
    other = Scope(user_id=scope.user_id + "-b")
    try:
        mine = [NoteInput(content=c) for c in PETS[:3]]
        theirs = [NoteInput(content=c) for c in PETS[3:]]
        reports = await svc.ingest_scopes([(scope, mine), (other, theirs)], concurrency=2)
        for report, sc in zip(reports, (scope, other), strict=True):
            assert [x.status for x in report.items] == [IngestStatus.ADDED] * 3
            assert all(x.enrichment == EnrichmentStatus.DONE for x in report.items)
            own = {x.note_id for x in report.items}
            assert all(set(x.candidates) <= own for x in report.items)
            assert all(x.scope == sc for x in report.items)
        with pytest.raises(InvalidInputError):
            await svc.ingest_scopes([(scope, mine), (scope, theirs)])
    finally:
        graph.q("MATCH (n) WHERE n.user_id = $u DETACH DELETE n", u=other.user_id)


class FailingWrites:
    """The real Neo4j store through the port, whose writes fail once ``after`` notes were written
    (Neo4j going away mid-batch)."""

    def __init__(self, store: Any, after: int) -> None:
        self._store, self._left = store, after

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def add(self, write: Any) -> Any:
        if self._left <= 0:
            from graphmem.errors import StoreUnavailableError

            raise StoreUnavailableError("Neo4j went away (test)")
        self._left -= 1
        return await self._store.add(write)

    async def add_group(self, writes: Any) -> Any:
        if self._left <= 0:
            from graphmem.errors import StoreUnavailableError

            raise StoreUnavailableError("Neo4j went away (test)")
        if len(writes) > self._left:  # a group across the outage: refused, so written note by note
            raise RuntimeError("group refused (test)")
        self._left -= len(writes)
        return await self._store.add_group(writes)


async def test_a_store_outage_stops_the_batch_and_reports_the_rest(make_service: Any, scope: Scope, graph: Any) -> None:
    from graphmem.service.memory import AsyncMemoryService

    base, _ = await make_service()
    svc = AsyncMemoryService(base.settings, FailingWrites(base.store, 2), base.embedder, GatedModel(amem_responder()))
    items = [NoteInput(content=c) for c in PETS]
    report = await svc.ingest(items, scope, concurrency=2)
    status = [x.status for x in report.items]
    assert status[:2] == [IngestStatus.ADDED] * 2
    assert status[2] == IngestStatus.FAILED and "went away" in (report.items[2].error or "")
    assert set(status[3:]) <= {IngestStatus.FAILED, IngestStatus.SKIPPED} and IngestStatus.SKIPPED in status
    assert all("not attempted" in (x.error or "") for x in report.items if x.status == IngestStatus.SKIPPED)
    stored = {r["id"] for r in graph.q("MATCH (n:Note {user_id: $u}) RETURN n.id AS id", u=scope.user_id)}
    assert stored == {x.note_id for x in report.items[:2]}
    # Neo4j back: the rerun adds exactly the rest.
    again = await base.ingest(items, scope, concurrency=2)
    assert [x.status for x in again.items] == [IngestStatus.EXISTING] * 2 + [IngestStatus.ADDED] * 4


async def test_a_group_write_is_one_ordered_all_or_nothing_statement(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    """``write_notes``: several notes in one statement, in order (a later one links to and evolves an
    earlier one of the same call, each evolution keeping a version); a stale plan writes nothing."""
    svc, _ = await make_service()
    built = [
        await svc.steps.construct_note(c, scope, note_id=f"{scope.user_id}-g{i}", enrich=False)
        for i, c in enumerate(PETS[:3])
    ]
    first = built[0].note

    def evolve_first(before: Note, tag: str) -> EvolutionPlan:
        return EvolutionPlan(
            links=[Link(source_id="", target_id=first.id, type=LinkType.ELABORATES, reason="Pixel", strength=0.8)],
            updates=[
                NeighbourEvolution(before=before, context=f"Pixel, {tag}.", tags=[*before.tags, tag], keywords=[])
            ],
        )

    second_view = first.model_copy(update={"context": "Pixel, second.", "tags": [*first.tags, "second"], "version": 2})
    results = await svc.steps.write_notes(
        [
            (built[0], EvolutionPlan(), None, None),
            (built[1], evolve_first(first, "second"), first.id, None),
            (built[2], evolve_first(second_view, "third"), None, None),
        ]
    )
    assert [r.created for r in results] == [True, True, True]
    assert [x.type for x in results[1].links] == [LinkType.ELABORATES, LinkType.FOLLOWS]
    assert results[2].evolved[0].before["version"] == 2 and results[2].evolved[0].after["version"] == 3
    node = graph.q("MATCH (n:Note {id: $id}) RETURN n", id=first.id)[0]["n"]
    assert (node["version"], node["context"], node["tags"][-2:]) == (3, "Pixel, third.", ["second", "third"])
    versions = graph.q("MATCH (:Note {id: $id})-[:PREVIOUS_VERSION]->(v) RETURN v ORDER BY v.version", id=first.id)
    assert [(v["v"]["version"], v["v"]["changed_by"]) for v in versions] == [
        (1, built[1].note.id),
        (2, built[2].note.id),
    ]

    # Planned on version 1, which is gone: the whole statement is rolled back.
    late = [
        await svc.steps.construct_note(PETS[k], scope, note_id=f"{scope.user_id}-g{k}", enrich=False) for k in (3, 4)
    ]
    with pytest.raises(StaleWriteError):
        await svc.steps.write_notes(
            [(late[0], EvolutionPlan(), None, None), (late[1], evolve_first(first, "x"), None, None)]
        )
    assert graph.q("MATCH (n:Note {id: $id}) RETURN n", id=late[0].note.id) == []
    assert graph.q("MATCH (n:Note {id: $id}) RETURN n.version AS v", id=first.id)[0]["v"] == 3


async def test_notes_whose_plans_are_ready_are_written_together(make_service: Any, scope: Scope, graph: Any) -> None:
    """The first note's decision is held until the three later ones have theirs: all four are then
    written in one statement, in order, and each is acknowledged after it."""
    returned: list[str] = []
    base = amem_responder(evolve=False)

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if step_of(messages) == "evolve":
            returned.append(content_of(messages))
        return base(messages)

    async def gate(messages: list[BaseMessage]) -> None:
        if step_of(messages) == "evolve" and PETS[1] in content_of(messages):
            for _ in range(600):  # until the later notes' decisions came back (at most 30 s)
                if len(returned) >= 3:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # their tasks finish their plans on the loop meanwhile

    svc, _ = await gated_service(make_service, respond, gate)
    first = await svc.add(PETS[0], scope, note_id=f"{scope.user_id}-w0")
    items = [NoteInput(content=c, note_id=f"{scope.user_id}-w{i}") for i, c in enumerate(PETS[1:5], start=1)]
    report = await svc.ingest(items, scope, concurrency=4)
    assert [x.status for x in report.items] == [IngestStatus.ADDED] * 4
    assert [x.written_with for x in report.items] == [4, 4, 4, 4]
    # every later note was decided with the earlier ones in flight, and links to them
    assert all(set(x.candidates) >= {first.note.id} for x in report.items)
    stored = graph.q("MATCH (n:Note {user_id: $u}) RETURN count(n) AS n", u=scope.user_id)[0]["n"]
    assert stored == 5


async def test_an_evolution_from_outside_the_ingest_is_rebased_not_lost(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    """Between the decision and the write someone else evolves the neighbour: the group statement
    finds its version moved and rolls back; the note is then written alone, rebased on the stored
    state, and every version is kept."""
    plain, _ = await make_service()
    neighbour = (await plain.add("Maya's kitten Pixel is grey and very playful.", scope)).note
    base = evolving_responder(neighbour.id)

    def respond(messages: list[BaseMessage]) -> AIMessage:
        reply = base(messages)
        if step_of(messages) == "evolve":  # decided on version 1; now someone else makes version 2
            graph.q(
                "MATCH (n:Note {id: $id}) SET n.version = n.version + 1, n.tags = n.tags + ['outside']", id=neighbour.id
            )
        return reply

    svc, _ = await gated_service(make_service, respond, None)
    items = [NoteInput(content="A: Pixel the grey kitten now weighs two kilos.", note_id=f"{scope.user_id}-a")]
    report = await svc.ingest(items, scope, concurrency=2)
    (a,) = report.items
    assert a.status == IngestStatus.ADDED and a.rebased == 1 and a.written_with == 1
    node = graph.q("MATCH (n:Note {id: $id}) RETURN n", id=neighbour.id)[0]["n"]
    assert node["version"] == 3
    assert node["tags"] == ["conversation", "personal", "outside", "tag-a"]  # the outside change kept
    assert node["context"] == EVOLVED_CONTEXT["A"]


class RefusedGroups:
    """The real store through the port, refusing every group write (a statement Neo4j rejects)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def add_group(self, writes: Any) -> Any:
        raise RuntimeError("group refused (test)")


async def test_a_failed_group_write_falls_back_to_one_note_at_a_time(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    from graphmem.service.memory import AsyncMemoryService

    base, _ = await make_service()
    svc = AsyncMemoryService(base.settings, RefusedGroups(base.store), base.embedder, GatedModel(amem_responder()))
    items = [
        NoteInput(content=c, note_id=f"{scope.user_id}-r{i}", follows=f"{scope.user_id}-r{i - 1}" if i else None)
        for i, c in enumerate(PETS)
    ]
    report = await svc.ingest(items, scope, concurrency=4)
    assert [x.status for x in report.items] == [IngestStatus.ADDED] * len(PETS)
    assert {x.written_with for x in report.items} == {1}
    chain = graph.q("MATCH (a:Note {user_id: $u})-[:FOLLOWS]->(b:Note) RETURN count(*) AS n", u=scope.user_id)
    assert chain[0]["n"] == len(PETS) - 1


async def test_a_local_model_that_cannot_start_stops_the_batch_once(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    """Missing weights failed every turn of a 369-turn ingest with the same error; the batch now
    stops at the first and says why for the rest."""
    from graphmem.errors import LocalServiceError
    from graphmem.service import OnFirstUse
    from graphmem.service.memory import AsyncMemoryService

    starts = 0

    async def start() -> Any:
        nonlocal starts
        starts += 1
        raise LocalServiceError("model.gguf: 22 of 22 weight packages are missing (test)")

    base, _ = await make_service()
    svc = AsyncMemoryService(base.settings, base.store, base.embedder, OnFirstUse(start))
    report = await svc.ingest([NoteInput(content=c) for c in PETS], scope, concurrency=1)
    status = [x.status for x in report.items]
    assert status[0] == IngestStatus.FAILED and "weight packages" in (report.items[0].error or "")
    assert set(status[1:]) == {IngestStatus.SKIPPED}
    assert all("a local service failed" in (x.error or "") for x in report.items[1:])
    assert starts == 1
    assert not graph.q("MATCH (n:Note {user_id: $u}) RETURN n.id AS id", u=scope.user_id)
