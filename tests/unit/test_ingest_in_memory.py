"""The agentic ingest's order and rebase rules on the in-memory note store (``tests/memory_store.py``,
held to Neo4j's rules by ``tests/integration/test_note_store_contract.py``): no database, so they
run with the unit tests. Timing is forced with gates in the scripted model, never measured."""

from __future__ import annotations

from graphmem.config import Settings
from graphmem.models import IngestStatus, NoteInput, Scope
from graphmem.service.memory import AsyncMemoryService
from tests.fakes import (
    EVOLVED_CONTEXT,
    GatedModel,
    Responder,
    amem_responder,
    barrier_gate,
    content_of,
    evolving_responder,
    shown_ids,
    step_of,
)
from tests.memory_store import MemoryNoteStore, WordEmbeddings

SCOPE = Scope(user_id="mem")
PETS = [
    "Maya adopted a grey kitten called Pixel from the shelter.",
    "Pixel, Maya's kitten, sleeps on the warm laptop keyboard.",
    "Maya bought a scratching post because Pixel ruined the sofa.",
    "The vet said Pixel is healthy and should get her vaccines in May.",
    "Maya's kitten Pixel chased a moth around the kitchen all night.",
]


def service(
    responder: Responder, gate: object = None, store: MemoryNoteStore | None = None, **overrides: object
) -> tuple[AsyncMemoryService, GatedModel]:
    model = GatedModel(responder, gate=gate)
    # supersession (issue 28) is the Neo4j store's (cypher/updates/): tests/integration/test_updates.py
    settings = Settings(link_decision="joint", enable_evolution=True, enable_supersession=False, **overrides)  # type: ignore[arg-type]
    return AsyncMemoryService(settings, store or MemoryNoteStore(), WordEmbeddings(), model), model


async def test_candidates_are_every_earlier_note_including_those_in_flight() -> None:
    # Every decision waits until all of them run at once: no note is written before the later ones
    # decide, so the earlier notes they must see are in flight, not in the store.
    svc, model = service(amem_responder(evolve=False), barrier_gate("evolve", len(PETS) - 1), neighbour_k=10)
    items = [NoteInput(content=c, note_id=f"p{i}") for i, c in enumerate(PETS)]
    report = await svc.ingest(items, SCOPE, concurrency=len(PETS))

    assert [x.status for x in report.items] == [IngestStatus.ADDED] * len(PETS)
    ids = [x.note_id for x in report.items]
    shown = {content_of(m): shown_ids(m) for m in model.calls if step_of(m) == "evolve"}
    for i, item in enumerate(report.items):
        assert set(item.candidates) == set(ids[:i])  # all earlier notes, none later
        if i:
            assert set(shown[PETS[i]]) == set(ids[:i])
    # written in input order, in groups (the ready notes behind the first write join it)
    assert sum(x.written_with or 0 for x in report.items) >= len(PETS)
    for x in report.items[1:]:
        assert [lk.target_id for lk in x.links] == [x.candidates[0]]  # links only to earlier notes


async def test_two_in_flight_notes_evolving_one_neighbour_are_rebased_in_order() -> None:
    store = MemoryNoteStore()
    plain, _ = service(amem_responder(evolve=False), store=store)
    neighbour = (await plain.add("Maya's kitten Pixel is grey and very playful.", SCOPE)).note
    svc, _ = service(evolving_responder(neighbour.id), barrier_gate("evolve", 2), store=store)
    items = [
        NoteInput(content="A: Pixel the grey kitten now weighs two kilos.", note_id="a"),
        NoteInput(content="B: Pixel the playful kitten broke a vase.", note_id="b"),
    ]
    a, b = (await svc.ingest(items, SCOPE, concurrency=2)).items
    assert a.status == b.status == IngestStatus.ADDED
    assert (a.rebased, b.rebased) == (0, 1)  # B was decided on version 1, applied on A's result
    stored = await svc.store.get(neighbour.id, SCOPE)
    assert stored is not None and stored.version == 3
    assert stored.context == EVOLVED_CONTEXT["B"]  # the later note's context
    assert stored.tags == ["conversation", "personal", "tag-a", "tag-b"]  # both notes' additions
    history = await svc.store.history(neighbour.id, SCOPE, limit=10)
    assert [(v.version, v.changed_by) for v in history] == [(1, "a"), (2, "b")]  # no version lost
    assert history[1].context == EVOLVED_CONTEXT["A"]


async def test_a_rerun_skips_what_is_stored_and_adds_the_rest() -> None:
    svc, _ = service(amem_responder(evolve=False))
    items = [NoteInput(content=c, source_id=f"turn-{i}") for i, c in enumerate(PETS)]
    first = await svc.ingest(items[:3], SCOPE)
    again = await svc.ingest(items, SCOPE)
    assert [x.status for x in first.items] == [IngestStatus.ADDED] * 3
    assert [x.status for x in again.items] == [IngestStatus.EXISTING] * 3 + [IngestStatus.ADDED] * 2
    assert [x.note_id for x in again.items[:3]] == [x.note_id for x in first.items]
    assert await svc.count(SCOPE) == len(PETS)
