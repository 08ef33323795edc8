"""GraphmemStore (LangGraph BaseStore) against the real Neo4j."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from graphmem.errors import InvalidInputError
from graphmem.integrations.langgraph import MAX_VALUE_JSON, GraphmemStore
from graphmem.models import Scope
from graphmem.service.sync import MemoryService
from tests.fakes import ScriptedChatModel, amem_responder

# Async tests run on the session loop (asyncio_mode=auto, loop scopes set in pyproject.toml); the
# last test is blocking on purpose, so no module-wide asyncio mark.


@pytest.fixture
def user(scope: Scope, graph: Any) -> Iterator[str]:
    """The test's user id; every scope of that user (all agents and runs) is removed afterwards."""
    yield scope.user_id
    graph.q("MATCH (n) WHERE n.user_id STARTS WITH $u DETACH DELETE n", u=scope.user_id)


async def test_put_get_roundtrip_exact(user: str, make_service: Any) -> None:
    svc, model = await make_service()
    store = GraphmemStore(svc)
    ns = ("graphmem", user)
    value = {
        "text": "Alice prefers green tea in the morning.",
        "nested": {"list": [1, 2.5, None, True, "  padded  "], "empty": {}},
        "unicode": "Ünïcödé ✓ 你好 \t tab \n newline \x7f del",
        "spaces": " " * 2500,  # runs of spaces across piece boundaries
        "big": "y" * 20_000,
        "number": 10**18,
    }
    await store.aput(ns, "pref 1 / tea", value)
    item = await store.aget(ns, "pref 1 / tea")
    assert item is not None and item.value == value and item.key == "pref 1 / tea" and item.namespace == ns
    assert model.calls == []  # enrich=False: no LLM call for a store put
    note = await svc.get(GraphmemStore.note_id_for(Scope(user_id=user), "pref 1 / tea"), Scope(user_id=user))
    assert note.content.startswith("Alice prefers green tea")  # the value's text is what gets embedded

    created = item.created_at
    await asyncio.sleep(0.01)
    await store.aput(ns, "pref 1 / tea", {"text": "Alice now prefers coffee."})
    updated = await store.aget(ns, "pref 1 / tea")
    assert updated is not None and updated.value == {"text": "Alice now prefers coffee."}
    assert updated.created_at == created and updated.updated_at > created
    assert await svc.count(Scope(user_id=user)) == 1

    assert await store.aget(ns, "missing") is None
    await store.adelete(ns, "pref 1 / tea")
    assert await store.aget(ns, "pref 1 / tea") is None
    await store.adelete(ns, "pref 1 / tea")  # deleting twice is fine


async def test_same_key_in_two_namespaces_and_scope_mapping(user: str, make_service: Any) -> None:
    svc, _ = await make_service()
    store = GraphmemStore(svc)
    await store.aput(("graphmem", user), "profile", {"name": "default agent"})
    await store.aput(("graphmem", user, "coach"), "profile", {"name": "coach agent"})
    await store.aput(("graphmem", user, "coach", "run7"), "profile", {"name": "coach run 7"})
    await store.aput(("graphmem", user + "-b"), "profile", {"name": "other user"})
    assert (await store.aget(("graphmem", user), "profile")).value == {"name": "default agent"}
    assert (await store.aget(("graphmem", user, "default", "default"), "profile")).value == {"name": "default agent"}
    assert (await store.aget(("graphmem", user, "coach"), "profile")).value == {"name": "coach agent"}
    item = await store.aget(("graphmem", user, "coach", "run7"), "profile")
    assert item.value == {"name": "coach run 7"} and item.namespace == ("graphmem", user, "coach", "run7")
    assert (await store.aget(("graphmem", user + "-b"), "profile")).value == {"name": "other user"}
    assert await svc.count(Scope(user_id=user, agent_id="coach")) == 1

    names = await store.alist_namespaces(prefix=("graphmem", user))
    assert names == [("graphmem", user), ("graphmem", user, "coach"), ("graphmem", user, "coach", "run7")]
    assert await store.alist_namespaces(prefix=("graphmem", user), max_depth=2) == [("graphmem", user)]
    assert await store.alist_namespaces(prefix=("graphmem", user, "*"), suffix=("run7",)) == [
        ("graphmem", user, "coach", "run7")
    ]
    assert await store.alist_namespaces(prefix=("graphmem", user), limit=1, offset=1) == [("graphmem", user, "coach")]

    for bad in [("other", user), ("graphmem",), ("graphmem", "bad user"), ("graphmem", user, "a", "b", "c")]:
        with pytest.raises(InvalidNamespaceError):
            await store.aget(bad, "profile")
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("graphmem", "a.b"), "k", {"x": 1})  # LangGraph's own label rule


async def test_search_query_filter_and_paging(user: str, make_service: Any) -> None:
    svc, _ = await make_service()
    store = GraphmemStore(svc)
    ns = ("graphmem", user, "memories")
    facts = {
        "tea": {"text": "Alice drinks green tea every morning.", "kind": "preference", "weight": 3},
        "bike": {"text": "Alice commutes to work by bicycle.", "kind": "habit", "weight": 5},
        "cat": {"text": "Alice has a black cat named Pixel.", "kind": "fact", "weight": 1},
        "coffee": {"text": "Alice dislikes coffee.", "kind": "preference", "weight": 2},
    }
    await store.abatch([PutOp(ns, k, v) for k, v in facts.items()])

    hits = await store.asearch(("graphmem", user), query="What does Alice like to drink?", limit=2)
    assert len(hits) == 2 and hits[0].key in ("tea", "coffee")
    assert all(h.score is not None for h in hits) and hits[0].score >= hits[1].score
    assert hits[0].namespace == ns and hits[0].value == facts[hits[0].key]

    prefs = await store.asearch(ns, query="drink", filter={"kind": "preference"}, limit=10)
    assert {h.key for h in prefs} == {"tea", "coffee"}
    heavy = await store.asearch(ns, filter={"weight": {"$gte": 3}}, limit=10)
    assert {h.key for h in heavy} == {"tea", "bike"} and all(h.score is None for h in heavy)
    page1 = await store.asearch(ns, limit=2)
    page2 = await store.asearch(ns, limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2 and not {h.key for h in page1} & {h.key for h in page2}

    assert await store.asearch(("graphmem", user + "-nobody"), query="tea") == []
    assert await store.asearch(("elsewhere",), query="tea") == []
    with pytest.raises(InvalidInputError, match="operator"):
        await store.asearch(ns, filter={"weight": {"$regex": "x"}})


async def test_notes_added_elsewhere_and_batch(user: str, make_service: Any) -> None:
    svc, _ = await make_service()
    store = GraphmemStore(svc)
    scope = Scope(user_id=user)
    added = await svc.add("Jon opened a dance studio downtown.", scope, event_time="2023-01-20")
    ns = ("graphmem", user)
    results = await store.abatch(
        [
            GetOp(ns, added.note.id),
            PutOp(ns, "k1", {"text": "Jon teaches salsa on Fridays."}),
            SearchOp(ns, query="dance studio", limit=5),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ns),)),
            PutOp(ns, added.note.id, None),
            GetOp(ns, added.note.id),
        ]
    )
    plain = results[0]
    assert plain.key == added.note.id and plain.value["content"] == "Jon opened a dance studio downtown."
    assert plain.value["keywords"] == added.note.keywords and plain.value["event_time"].startswith("2023-01-20")
    assert results[1] is None
    assert {h.key for h in results[2]} == {added.note.id, "k1"}
    assert results[3] == [ns]
    assert results[4] is None and results[5] is None  # a plain note can be deleted by its id
    assert [n.content for n in await svc.list(scope)] == ["Jon teaches salsa on Fridays."]


async def test_limits_and_enrich(user: str, make_service: Any) -> None:
    svc, model = await make_service()
    store = GraphmemStore(svc, enrich=True, index_fields=["summary"])
    ns = ("graphmem", user)
    with pytest.raises(InvalidInputError, match="over the store's limit"):
        await store.aput(ns, "huge", {"text": "z" * MAX_VALUE_JSON})
    with pytest.raises(InvalidInputError, match="JSON"):
        await store.aput(ns, "bad", {"when": object()})
    await store.aput(ns, "e1", {"summary": "Alice plays chess on weekends.", "raw": "ignored for search"})
    note = await svc.get(GraphmemStore.note_id_for(Scope(user_id=user), "e1"), Scope(user_id=user))
    assert note.content == "Alice plays chess on weekends." and note.keywords  # enriched by the LLM
    assert len(model.calls) == 1


def test_blocking_store(user: str, settings: Any, embedder: Any) -> None:
    with MemoryService(settings, chat_model=ScriptedChatModel(amem_responder()), embedder=embedder) as svc:
        store = GraphmemStore(svc)
        ns = ("graphmem", user, "sync")
        store.put(ns, "a", {"text": "Blocking API works."})
        assert store.get(ns, "a").value == {"text": "Blocking API works."}
        assert [h.key for h in store.search(ns, query="blocking")] == ["a"]
        assert store.list_namespaces(prefix=("graphmem", user)) == [ns]
        store.delete(ns, "a")
        assert store.get(ns, "a") is None
