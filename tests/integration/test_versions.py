"""Versions against the real Neo4j: history diffs, rollback as a new version (re-embedded), undo of
everything one add caused (links, evolutions), refusals that keep later changes, the store's scope."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage

from graphmem.config import Settings
from graphmem.errors import ConflictError, InvalidInputError, NoteNotFoundError, VersionNotFoundError
from graphmem.models import (
    AddWrite,
    ChangeKind,
    Link,
    LinkType,
    NeighbourUpdate,
    Note,
    NoteInput,
    Restore,
    Scope,
    UndoWrite,
)
from graphmem.service.text import embed_text
from graphmem.store.neo4j_store import Neo4jNoteStore
from tests.fakes import EVOLVED_SUFFIX, Responder, amem_responder, shown_ids, step_of, tool_reply

pytestmark = pytest.mark.asyncio(loop_scope="session")


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def evolving_responder(link_type: str = "SUPPORTS") -> Responder:
    """Links the new note to every shown neighbour and evolves each one, with a context that names
    the evolution's number, so two evolutions of one note never write the same values."""
    enrich = amem_responder()
    count = itertools.count(1)

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if step_of(messages) != "evolve":
            return enrich(messages)
        ids, n = shown_ids(messages), next(count)
        return tool_reply(
            "EvolutionDecision",
            {
                "links": [{"target_id": i, "type": link_type, "reason": "same subject", "strength": 0.8} for i in ids],
                "neighbour_updates": [
                    {"note_id": i, "context": f"Context written by evolution {n}.", "tags": [f"e{n}"], "keywords": None}
                    for i in ids
                ],
            },
        )

    return respond


def node(graph: Any, note_id: str) -> dict[str, Any]:
    rows = graph.q("MATCH (n:Note {id: $id}) RETURN n", id=note_id)
    return dict(rows[0]["n"]) if rows else {}


async def embedding_matches(svc: Any, graph: Any, note_id: str, scope: Scope) -> float:
    """Cosine between the stored embedding and the embedding of the note's stored text."""
    note = await svc.get(note_id, scope)
    expected = await svc.embedder.aembed_query(embed_text(note, svc.settings.embed_text_variant))
    return cosine(list(node(graph, note_id)["embedding"]), expected)


async def test_rollback_is_a_new_version_and_search_follows(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service(amem_responder(link_type="SUPPORTS"))
    p = scope.user_id
    a = await svc.add("Melanie runs a pottery studio in Portland.", scope, note_id=f"{p}-a")
    b = await svc.add("Melanie's pottery studio sells bowls at the Portland market.", scope, note_id=f"{p}-b")
    assert [x.note_id for x in b.evolved] == [a.note.id]  # v2: evolved by b
    await svc.update(a.note.id, scope, "Melanie teaches violin lessons in Seattle.")  # v3
    v1 = (await svc.history(a.note.id, scope))[0]
    assert v1.version == 1 and v1.content == a.note.content

    result = await svc.rollback(a.note.id, scope, 1)
    assert result.restored_version == 1 and result.note.version == 4
    stored = node(graph, a.note.id)
    assert (stored["content"], stored["context"], list(stored["tags"]), list(stored["keywords"])) == (
        v1.content,
        v1.context,
        v1.tags,
        v1.keywords,
    )
    assert stored["version"] == 4
    history = await svc.history(a.note.id, scope)
    assert [(h.version, h.changed_by) for h in history] == [(1, b.note.id), (2, "update"), (3, "rollback:1")]
    assert history[2].content == "Melanie teaches violin lessons in Seattle."  # nothing lost: append-only
    # Re-embedded from the restored values, and found by them again.
    assert await embedding_matches(svc, graph, a.note.id, scope) > 0.9999
    hits = await svc.search("pottery studio in Portland", scope, k=1, mode="vector")
    assert hits[0].note.id == a.note.id and hits[0].note.content == v1.content
    # The content hash follows too: dedupe by content finds the restored note.
    again = await svc.add(v1.content, scope, dedupe_content=True, enrich=False)
    assert again.created is False and again.note.id == a.note.id

    diff = result.diff
    assert (diff.from_version, diff.to_version, diff.change, diff.restored_version) == (3, 4, ChangeKind.ROLLBACK, 1)
    content = next(f for f in diff.fields if f.field == "content")
    assert "".join(o.text for o in content.ops if o.op != "insert") == "Melanie teaches violin lessons in Seattle."
    assert "".join(o.text for o in content.ops if o.op != "delete") == v1.content

    # Optimistic: a restore planned on version 3 writes nothing once the note moved on.
    stale = Restore(note_id=a.note.id, version=v1, expected_version=3, embedding=[0.1] * 384, changed_by="rollback:1")
    assert await svc.store.restore(stale, scope) is None

    with pytest.raises(InvalidInputError, match="at version 4 already"):
        await svc.rollback(a.note.id, scope, 4)
    with pytest.raises(VersionNotFoundError):
        await svc.rollback(a.note.id, scope, 9)
    with pytest.raises(InvalidInputError):
        await svc.rollback(a.note.id, scope, 0)
    with pytest.raises(NoteNotFoundError):
        await svc.rollback(a.note.id, Scope(user_id=p, agent_id="elsewhere"), 1)
    assert node(graph, a.note.id)["version"] == 4


async def test_concurrent_rollbacks_lose_no_version(make_service: Any, scope: Scope, graph: Any) -> None:
    """Rollbacks racing on one note: each either writes its own version or is refused (409), never
    both writing over the same version."""
    svc, _ = await make_service(enable_enrichment=False)
    note = await svc.add("Ana plays the violin.", scope)
    for text in ("Ana plays the cello.", "Ana plays the viola.", "Ana plays the harp."):
        await svc.update(note.note.id, scope, text)  # versions 1..3 kept, the note at 4
    outcomes = await asyncio.gather(
        *(svc.rollback(note.note.id, scope, v) for v in (1, 2, 3, 1, 2, 3)), return_exceptions=True
    )
    written = [o for o in outcomes if not isinstance(o, BaseException)]
    assert all(isinstance(o, ConflictError) for o in outcomes if isinstance(o, BaseException)), outcomes
    assert written, outcomes
    final = node(graph, note.note.id)
    assert final["version"] == 4 + len(written)
    history = await svc.history(note.note.id, scope)
    assert [h.version for h in history] == list(range(1, 4 + len(written)))  # one version per write
    assert sorted(o.note.version for o in written) == list(range(5, 5 + len(written)))


async def test_history_diff_steps_causes_and_pages(make_service: Any, scope: Scope) -> None:
    svc, _ = await make_service(amem_responder(link_type="SUPPORTS"), evolution_words=False)
    p = scope.user_id
    a = await svc.add("Melanie runs a pottery studio in Portland.", scope, note_id=f"{p}-a")
    b = await svc.add("Melanie's pottery studio sells bowls at the Portland market.", scope, note_id=f"{p}-b")
    await svc.update(a.note.id, scope, "Melanie runs a ceramics studio in Portland.")
    await svc.rollback(a.note.id, scope, 2)

    steps = await svc.history_diff(a.note.id, scope)
    assert [(s.from_version, s.to_version, s.change) for s in steps] == [
        (1, 2, ChangeKind.EVOLUTION),
        (2, 3, ChangeKind.UPDATE),
        (3, 4, ChangeKind.ROLLBACK),
    ]
    assert steps[0].cause_note_id == b.note.id and steps[2].restored_version == 2
    evolved = {f.field: f for f in steps[0].fields}
    assert set(evolved) == {"context", "tags"}  # content never evolves
    assert evolved["tags"].added == ["evolved"] and evolved["tags"].removed == []  # the guards: tags only grow
    assert evolved["context"].after == a.note.content + EVOLVED_SUFFIX
    updated = {f.field: f for f in steps[1].fields}
    assert [(o.op, o.text) for o in updated["content"].ops] == [
        ("equal", "Melanie runs a "),
        ("delete", "pottery "),
        ("insert", "ceramics "),
        ("equal", "studio in Portland."),
    ]

    assert [(s.from_version, s.to_version) for s in await svc.history_diff(a.note.id, scope, limit=1, offset=1)] == [
        (2, 3)
    ]
    assert [(s.from_version, s.to_version) for s in await svc.history_diff(a.note.id, scope, limit=2, offset=1)] == [
        (2, 3),
        (3, 4),
    ]
    assert await svc.history_diff(a.note.id, scope, offset=3) == []
    assert [h.version for h in await svc.history(a.note.id, scope, limit=2, offset=1)] == [2, 3]
    assert await svc.history_diff(b.note.id, scope) == []  # never changed
    with pytest.raises(InvalidInputError):
        await svc.history_diff(a.note.id, scope, limit=0)
    with pytest.raises(NoteNotFoundError):
        await svc.history_diff("no-such-note", scope)


async def test_undo_add_removes_its_links_and_reverts_its_evolutions(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    svc, _ = await make_service(evolving_responder())
    p = scope.user_id
    a = await svc.add("Melanie runs a pottery studio in Portland.", scope, note_id=f"{p}-a")
    before_a = node(graph, a.note.id)
    b = await svc.add("Melanie's pottery studio sells bowls at the Portland market.", scope, note_id=f"{p}-b")
    assert [x.target_id for x in b.links] == [a.note.id] and [x.note_id for x in b.evolved] == [a.note.id]
    manual = await svc.link(b.note.id, a.note.id, scope, LinkType.ELABORATES, "by hand")
    assert manual.caused_by == "manual"

    planned = await svc.undo_add(b.note.id, scope, dry_run=True)
    assert node(graph, a.note.id)["version"] == 2  # a dry run writes nothing
    done = await svc.undo_add(b.note.id, scope)
    assert planned.dry_run and not done.dry_run
    assert [(x.source_id, x.target_id, x.type) for x in done.links_removed] == [
        (b.note.id, a.note.id, LinkType.SUPPORTS)
    ]
    assert [(x.source_id, x.type) for x in planned.links_removed] == [(b.note.id, LinkType.SUPPORTS)]
    [revert] = done.neighbours
    assert (revert.note_id, revert.status, revert.restored_version, revert.evolved_version, revert.new_version) == (
        a.note.id,
        "reverted",
        1,
        2,
        3,
    )
    assert [(n.note_id, n.status, n.new_version) for n in planned.neighbours] == [(a.note.id, "reverted", None)]

    after_a = node(graph, a.note.id)
    for key in ("content", "context", "tags", "keywords"):
        assert after_a[key] == before_a[key], key
    assert after_a["version"] == 3
    assert await embedding_matches(svc, graph, a.note.id, scope) > 0.9999
    assert cosine(list(after_a["embedding"]), list(before_a["embedding"])) > 0.9999
    history = await svc.history(a.note.id, scope)
    assert [(h.version, h.changed_by) for h in history] == [(1, b.note.id), (2, f"undo:{b.note.id}")]
    # The note stays; the link made by hand stays (no add made it).
    assert (await svc.get(b.note.id, scope)).version == 1
    assert [(x.type, x.caused_by) for x in await svc.links(b.note.id, scope)] == [(LinkType.ELABORATES, "manual")]

    again = await svc.undo_add(b.note.id, scope)  # idempotent: nothing left to undo
    assert again.links_removed == [] and [n.status for n in again.neighbours] == ["already_undone"]
    assert node(graph, a.note.id)["version"] == 3


async def test_a_neighbour_changed_since_is_refused_not_reverted(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service(evolving_responder())
    p = scope.user_id
    a = await svc.add("Jon lost his job as a banker.", scope, note_id=f"{p}-a")
    b = await svc.add("Jon opened a dance studio after losing his banking job.", scope, note_id=f"{p}-b")
    c = await svc.add("Jon's dance studio had its grand opening in June.", scope, note_id=f"{p}-c")
    # c evolved a (v2 -> v3) and b (v1 -> v2) after b had evolved a (v1 -> v2).
    assert {x.note_id for x in c.evolved} == {a.note.id, b.note.id}
    a_now = node(graph, a.note.id)

    undo_b = await svc.undo_add(b.note.id, scope)
    [refused] = undo_b.neighbours
    assert refused.note_id == a.note.id and refused.status == "refused" and refused.new_version is None
    assert refused.later_changes == [c.note.id] and c.note.id in refused.reason and "version 1" in refused.reason
    assert node(graph, a.note.id) == a_now  # c's later evolution is kept
    assert [x.target_id for x in undo_b.links_removed] == [a.note.id]  # the links still go

    # Undo c: a goes back to what b wrote, b back to its own first version.
    undo_c = await svc.undo_add(c.note.id, scope)
    assert {(n.note_id, n.status, n.restored_version) for n in undo_c.neighbours} == {
        (a.note.id, "reverted", 2),
        (b.note.id, "reverted", 1),
    }
    # Now a holds exactly what b's evolution wrote again: undoing b reverts it (no change is lost).
    undo_b_again = await svc.undo_add(b.note.id, scope)
    [reverted] = undo_b_again.neighbours
    assert reverted.status == "reverted" and reverted.later_changes == [c.note.id, f"undo:{c.note.id}"]
    assert node(graph, a.note.id)["context"] == a.note.context and node(graph, a.note.id)["version"] == 5

    # An update since an evolution is a later change too.
    d = await svc.add("Jon hired two dance teachers.", scope, note_id=f"{p}-d")
    evolved_by_d = [x.note_id for x in d.evolved]
    await svc.update(evolved_by_d[0], scope, "Jon changed his mind and went back to banking.")
    undo_d = await svc.undo_add(d.note.id, scope)
    status = {n.note_id: (n.status, n.later_changes) for n in undo_d.neighbours}
    assert status[evolved_by_d[0]] == ("refused", ["update"])
    assert all(s == "reverted" for i, (s, _) in status.items() if i != evolved_by_d[0])


async def test_undo_with_delete_note_and_kept_follows(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service(evolving_responder(link_type="ELABORATES"))
    p = scope.user_id
    a = await svc.add("Caroline adopted a dog named Max.", scope, note_id=f"{p}-a")
    b = await svc.add("Max the dog loves the beach.", scope, note_id=f"{p}-b", follows=a.note.id)
    assert {(x.target_id, x.type) for x in b.links} == {(a.note.id, LinkType.ELABORATES), (a.note.id, LinkType.FOLLOWS)}

    kept = await svc.undo_add(b.note.id, scope, keep_follows=True)
    assert [x.type for x in kept.links_removed] == [LinkType.ELABORATES]
    assert [(x.type, x.caused_by) for x in await svc.links(b.note.id, scope)] == [(LinkType.FOLLOWS, b.note.id)]

    c = await svc.add("Caroline walks Max every morning.", scope, note_id=f"{p}-c")  # links to b (and a)
    assert b.note.id in {x.target_id for x in c.links}
    gone = await svc.undo_add(b.note.id, scope, delete_note=True)
    assert gone.note_deleted and [x.type for x in gone.links_removed] == [LinkType.FOLLOWS]
    assert gone.links_removed_with_note == 1  # c's link to b went with b
    assert node(graph, b.note.id) == {}
    assert graph.q("MATCH (v:NoteVersion {note_id: $id}) RETURN count(v) AS n", id=b.note.id)[0]["n"] == 0

    # The note is gone, but its evolutions are still recorded on its neighbours: undo finds them.
    d = await svc.add("Max sleeps on Caroline's bed.", scope, note_id=f"{p}-d")
    await svc.delete(d.note.id, scope)
    late = await svc.undo_add(d.note.id, scope, delete_note=True)
    assert not late.note_deleted and late.links_removed == []
    assert {n.note_id for n in late.neighbours} == {x.note_id for x in d.evolved}
    assert all(n.status == "reverted" for n in late.neighbours)

    with pytest.raises(NoteNotFoundError):
        await svc.undo_add("never-added", scope)
    with pytest.raises(InvalidInputError, match="change label"):
        await svc.undo_add("update", scope)


# --- the store keeps to the scope by itself ------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def other_scope_note(
    settings: Settings, scope: Scope, make_service: Any, embedder: Embeddings
) -> AsyncIterator[tuple[Neo4jNoteStore, Any, Scope, str, str]]:
    """In another scope: b1 at version 2 (an update), evolved by x, which links to b1. In `scope`: a1."""
    svc, _ = await make_service(enable_enrichment=False)
    other = Scope(user_id=scope.user_id, agent_id="other")
    p = scope.user_id
    await svc.add_many([NoteInput(content="Ana plays the violin.", note_id=f"{p}-a1")], scope)
    await svc.add_many([NoteInput(content="Bo plays the cello.", note_id=f"{p}-b1")], other)
    await svc.update(f"{p}-b1", other, "Bo plays the cello and the piano.")
    store = Neo4jNoteStore.from_settings(settings)
    vec = await embedder.aembed_query("Bo")
    x = Note(id=f"{p}-x", content="Bo practises daily.", scope=other)
    await store.add(
        AddWrite(
            note=x,
            embedding=vec,
            links=[Link(source_id=x.id, target_id=f"{p}-b1", type=LinkType.SUPPORTS)],
            updates=[NeighbourUpdate(note_id=f"{p}-b1", context="evolved", tags=["t"], keywords=["k"], embedding=vec)],
        )
    )
    try:
        yield store, vec, other, f"{p}-b1", x.id
    finally:
        await store.run_write("admin/delete_scope", **other.params())
        await store.close()


async def test_the_store_refuses_rollback_and_undo_across_scopes(
    other_scope_note: Any, scope: Scope, graph: Any
) -> None:
    store, vec, other, b1, x = other_scope_note
    before = node(graph, b1)
    assert before["version"] == 3
    v1 = await store.version(b1, other, 1)
    assert v1 is not None and v1.content == "Bo plays the cello."

    # Reads: nothing of the other scope is visible.
    assert await store.version(b1, scope, 1) is None
    assert await store.version_states(b1, scope, limit=10, offset=0) is None
    effects = await store.add_effects(x, scope)
    assert not effects.note_exists and effects.links == [] and effects.evolutions == []
    theirs = await store.add_effects(x, other)  # the same call in the right scope sees them
    assert theirs.note_exists and [e.note_id for e in theirs.evolutions] == [b1] and len(theirs.links) == 1

    # Writes: a restore, an undo naming the other scope's notes, with the service bypassed.
    restore = Restore(note_id=b1, version=v1, expected_version=3, embedding=vec, changed_by="rollback:1")
    assert await store.restore(restore, scope) is None
    outcome = await store.undo(UndoWrite(note_id=x, scope=scope, restores=[restore], delete_note=True))
    assert outcome.links_removed == [] and outcome.restored == {} and not outcome.note_deleted
    a1 = scope.user_id + "-a1"
    mixed = await store.undo(UndoWrite(note_id=a1, scope=scope, restores=[restore]))
    assert mixed.restored == {}
    assert node(graph, b1) == before and node(graph, x) != {}
    assert graph.q("MATCH (:Note {id: $x})-[r:SUPPORTS]->(:Note {id: $b}) RETURN count(r) AS n", x=x, b=b1)[0]["n"] == 1

    # And in its own scope the same calls work (the test can fail).
    assert await store.restore(restore, other) == 4
    assert node(graph, b1)["content"] == "Bo plays the cello."
