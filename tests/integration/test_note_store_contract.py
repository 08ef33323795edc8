"""One contract, two note stores: the rules the service relies on, checked against the Neo4j store
and against the in-memory store the fast tests use (``tests/memory_store.py``), so a unit test on
the in-memory store tells the truth about Neo4j."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from graphmem.config import Settings
from graphmem.errors import StaleWriteError
from graphmem.models import AddWrite, EnrichmentStatus, Link, LinkType, NeighbourUpdate, Note, Scope
from graphmem.ports import NoteStore
from graphmem.store import Neo4jNoteStore
from tests.memory_store import MemoryNoteStore, WordEmbeddings

pytestmark = pytest.mark.asyncio(loop_scope="session")

EMBED = WordEmbeddings()


@pytest_asyncio.fixture(loop_scope="session", params=["neo4j", "memory"])
async def store(request: pytest.FixtureRequest, settings: Settings, scope: Scope) -> AsyncIterator[NoteStore]:
    """The store under test; the Neo4j one writes into the test's scope (removed after the test)."""
    if request.param == "memory":
        yield MemoryNoteStore()
        return
    neo4j = Neo4jNoteStore.from_settings(settings)
    await neo4j.verify()
    try:
        yield neo4j
    finally:  # the test's scope is removed by its fixture; the other agent's notes here
        await neo4j.run_write("admin/delete_scope", **Scope(user_id=scope.user_id, agent_id="other").params())
        await neo4j.close()


def write(scope: Scope, note_id: str, text: str, **kw: Any) -> AddWrite:
    return AddWrite(note=Note(id=note_id, content=text, scope=scope), embedding=EMBED.embed_query(text), **kw)


def evolve(note_id: str, context: str, expected: int | None = None) -> NeighbourUpdate:
    return NeighbourUpdate(
        note_id=note_id,
        context=context,
        tags=["t"],
        keywords=["k"],
        embedding=EMBED.embed_query(context),
        expected_version=expected,
    )


async def test_an_add_is_idempotent_by_id_and_ids_are_unique_per_scope(store: NoteStore, scope: Scope) -> None:
    other = Scope(user_id=scope.user_id, agent_id="other")
    first = await store.add(write(scope, "a", "Ana plays the violin."))
    again = await store.add(write(scope, "a", "Something else entirely."))
    elsewhere = await store.add(write(other, "a", "Bo plays the cello."))
    assert (first.created, again.created, elsewhere.created) == (True, False, True)
    got = await store.get("a", scope)
    assert got is not None and got.content == "Ana plays the violin." and got.version == 1
    assert await store.existing_ids(["a", "b"], scope) == {"a"}
    assert await store.count(scope) == 1
    assert await store.delete("a", other) and await store.get("a", other) is None


async def test_links_and_evolutions_stay_in_the_notes_scope(store: NoteStore, scope: Scope) -> None:
    other = Scope(user_id=scope.user_id, agent_id="other")
    await store.add(write(scope, "a", "Ana plays the violin."))
    await store.add(write(other, "b", "Bo plays the cello."))
    out = await store.add(
        write(
            scope,
            "c",
            "Ana's violin is old.",
            links=[
                Link(source_id="c", target_id="a", type=LinkType.ELABORATES, reason="the violin"),
                Link(source_id="c", target_id="b", type=LinkType.SUPPORTS, reason="elsewhere"),
            ],
            updates=[evolve("a", "Ana plays an old violin."), evolve("b", "Bo plays an old cello.")],
        )
    )
    assert [(x.target_id, x.type, x.caused_by) for x in out.links] == [("a", LinkType.ELABORATES, "c")]
    assert out.versions == {"a": 2}
    other_b = await store.get("b", other)
    assert other_b is not None and other_b.version == 1 and other_b.context == ""
    a = await store.get("a", scope)
    assert a is not None and (a.context, a.version) == ("Ana plays an old violin.", 2)
    [kept] = await store.history("a", scope, limit=10)
    assert (kept.version, kept.context, kept.changed_by) == (1, "", "c")  # the replaced values, and why
    assert [x.target_id for x in await store.links("a", scope, limit=10)] == ["a"]


async def test_a_group_is_written_in_order(store: NoteStore, scope: Scope) -> None:
    await store.add(write(scope, "a", "Ana plays the violin."))
    outcomes = await store.add_group(
        [
            write(scope, "b", "Ana's violin is old.", updates=[evolve("a", "Ana's old violin.", expected=1)]),
            write(
                scope,
                "c",
                "Ana sold the old violin.",
                links=[Link(source_id="c", target_id="b", type=LinkType.ELABORATES)],  # b: earlier in the group
                updates=[evolve("a", "Ana sold her old violin.", expected=2)],  # as b left it
            ),
        ]
    )
    assert [o.created for o in outcomes] == [True, True]
    assert [o.versions for o in outcomes] == [{"a": 2}, {"a": 3}]
    assert [x.target_id for x in outcomes[1].links] == ["b"]
    assert [v.changed_by for v in await store.history("a", scope, limit=10)] == ["b", "c"]


async def test_a_stale_group_writes_nothing(store: NoteStore, scope: Scope) -> None:
    await store.add(write(scope, "a", "Ana plays the violin."))
    with pytest.raises(StaleWriteError):
        await store.add_group(
            [
                write(scope, "b", "Ana's violin is old."),
                write(scope, "c", "Ana sold the violin.", updates=[evolve("a", "Ana sold it.", expected=5)]),
            ]
        )
    assert await store.existing_ids(["a", "b", "c"], scope) == {"a"}
    a = await store.get("a", scope)
    assert a is not None and a.version == 1


async def test_vector_search_ranks_the_scopes_notes_by_cosine(store: NoteStore, scope: Scope) -> None:
    other = Scope(user_id=scope.user_id, agent_id="other")
    texts = {"v": "Ana plays the violin.", "c": "Bo repairs his car.", "w": "Ana tunes her violin strings."}
    for note_id, text in texts.items():
        await store.add(write(scope, note_id, text))
    await store.add(write(other, "x", "Ana plays the violin."))
    query = EMBED.embed_query("Ana plays the violin.")
    hits = await store.vector_search(query, scope, 2)
    assert [n.id for n, _ in hits] == ["v", "w"] and hits[0][1] == pytest.approx(1.0, abs=1e-3)
    assert [n.id for n, _ in await store.vector_search(query, scope, 2, exclude_ids=["v"])] == ["w", "c"]


async def test_revise_and_follows(store: NoteStore, scope: Scope) -> None:
    other = Scope(user_id=scope.user_id, agent_id="other")
    await store.add(write(scope, "a", "Ana plays the violin."))
    await store.add(write(scope, "b", "Ana's violin is old."))
    await store.add(write(other, "x", "Bo plays the cello."))
    assert await store.add_follows([("b", "a"), ("b", "x")], scope) == 1
    assert [(x.source_id, x.target_id, x.type) for x in await store.links("b", scope, limit=10)] == [
        ("b", "a", LinkType.FOLLOWS)
    ]
    version = await store.revise(
        "a",
        scope,
        content="Ana plays the viola.",
        context="music",
        tags=[],
        keywords=[],
        enrichment=EnrichmentStatus.DONE,
        embedding=EMBED.embed_query("Ana plays the viola."),
        changed_by="update",
    )
    assert version == 2
    assert (
        await store.revise(
            "x",
            scope,
            content="-",
            context="",
            tags=[],
            keywords=[],
            enrichment=EnrichmentStatus.DONE,
            embedding=EMBED.embed_query("-"),
            changed_by="update",
        )
        is None
    )  # another scope's note
    [old] = await store.history("a", scope, limit=10)
    assert (old.content, old.changed_by) == ("Ana plays the violin.", "update")
