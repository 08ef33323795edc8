"""GraphmemStore beyond the contract suite: what it does with graphmem's scopes and notes, the
defects of issue 16 (3: a note breaks a namespace; 4: a failed put loses the value; 1: guessable
store ids), the blocking API and the sweeper thread."""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from graphmem.errors import InvalidInputError
from graphmem.integrations.langgraph import GraphmemStore, scope_id
from graphmem.models import Scope
from graphmem.service.sync import MemoryService
from tests.fakes import ScriptedChatModel, amem_responder

# Async tests run on the session loop; the blocking test is sync on purpose (no module-wide mark).


@pytest.fixture
def user(scope: Scope, graph: Any) -> Iterator[str]:
    """The test's user id; every node of that user (any agent, run) is removed afterwards."""
    yield scope.user_id
    graph.q("MATCH (n) WHERE n.user_id STARTS WITH $u DETACH DELETE n", u=scope.user_id)


class Boom(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("embedder down")

    def embed_query(self, text: str) -> list[float]:
        raise RuntimeError("embedder down")


async def test_items_live_in_the_users_scope_and_are_not_notes(user: str, make_service: Any) -> None:
    svc, model = await make_service()
    store = GraphmemStore(svc, user_label=1)
    await store.aput(("memories", user), "tea", {"text": "Alice drinks green tea."})
    await store.aput(("memories", user, "work"), "bike", {"text": "Alice cycles to work."})
    assert store.scope_of(("memories", user)) == Scope(user_id=user)
    assert await svc.count(Scope(user_id=user)) == 0  # items are not notes: no A-MEM, no LLM call
    assert model.calls == []
    assert await svc.items.scopes(user_id=user) == [Scope(user_id=user)]
    # A note of the same scope is untouched by the store, and the store's items by notes.
    await svc.add("Alice adopted a beagle.", Scope(user_id=user), enrich=False)
    assert {i.key for i in await store.asearch(("memories", user))} == {"tea", "bike"}
    assert scope_id("a b") == "lg:" + hashlib.sha256(b"a b").hexdigest()[:40]
    assert scope_id("lg:abc") != "lg:abc" and scope_id("alice") == "alice"


async def test_a_note_with_store_like_metadata_breaks_nothing(user: str, make_service: Any) -> None:
    """Issue 16, item 3: a note added over REST with metadata {"lg_key": "not json"} made every
    search of its scope raise JSONDecodeError. Items are their own nodes now; notes are never read."""
    svc, _ = await make_service()
    scope = Scope(user_id=user)
    await svc.add("p", scope, metadata={"lg_key": "not json", "lg_v00": "|{|", "lg_created": "x"}, enrich=False)
    store = GraphmemStore(svc, scope=scope)
    await store.aput(("graphmem", user), "profile", {"name": "bob"})
    assert [i.key for i in await store.asearch(("graphmem",), query="bob")] == ["profile"]
    assert [i.key for i in await store.asearch(("graphmem", user))] == ["profile"]
    assert await store.alist_namespaces() == [("graphmem", user)]


async def test_a_failed_put_keeps_the_old_value(user: str, make_service: Any) -> None:
    """Issue 16, item 4: put deleted the note, then the add failed. Now the replacement is one
    transaction after every check and the embedding: any failure leaves the old value."""
    svc, _ = await make_service()
    store = GraphmemStore(svc, scope=Scope(user_id=user))
    ns = ("graphmem", user)
    await store.aput(ns, "profile", {"name": "old"})
    for bad in [{"name": "\ud800"}, {"when": object()}, {"n": float("inf")}]:
        with pytest.raises(InvalidInputError):
            await store.aput(ns, "profile", bad)
    svc.embedder = Boom()
    with pytest.raises(RuntimeError, match="embedder down"):
        await store.aput(ns, "profile", {"name": "new"})
    item = await store.aget(ns, "profile")
    assert item is not None and item.value == {"name": "old"}


async def test_another_tenant_cannot_squat_store_items(user: str, make_service: Any, graph: Any) -> None:
    """Issue 16, item 1 (the LangGraph side): ids were "lg-" + sha256(scope/key), so a tenant who
    created a note with that id first made the owner's puts fail for ever. Items now have no note
    id at all, and their identity includes the scope, so no other tenant's write can reach them."""
    svc, _ = await make_service()
    bob = Scope(user_id=user)
    mallory = Scope(user_id=user + "-m")
    old_id = "lg-" + hashlib.sha256(f"{bob}\nprofile".encode()).hexdigest()[:40]
    await svc.add("squatted", mallory, note_id=old_id, enrich=False)
    mallory_store = GraphmemStore(svc, scope=mallory)
    await mallory_store.aput(("graphmem", user), "profile", {"name": "mallory"})  # same namespace and key
    store = GraphmemStore(svc, scope=bob)
    await store.aput(("graphmem", user), "profile", {"name": "bob"})
    assert (await store.aget(("graphmem", user), "profile")).value == {"name": "bob"}  # type: ignore[union-attr]
    assert (await mallory_store.aget(("graphmem", user), "profile")).value == {"name": "mallory"}  # type: ignore[union-attr]
    rows = graph.q(
        "MATCH (i:StoreItem {key: 'profile'}) WHERE i.user_id IN $u RETURN i.user_id AS u, i.uid AS uid",
        u=[bob.user_id, mallory.user_id],
    )
    assert len(rows) == 2 and rows[0]["uid"] != rows[1]["uid"]


def test_blocking_store_and_sweeper_thread(user: str, settings: Any, embedder: Any, graph: Any) -> None:
    with MemoryService(settings, chat_model=ScriptedChatModel(amem_responder()), embedder=embedder) as svc:
        root = f"sync-{uuid.uuid4().hex[:6]}"
        store = GraphmemStore(svc, scope=Scope(user_id=user), ttl={"sweep_interval_minutes": 1})
        ns = (root, "a")
        store.put(ns, "a", {"text": "Blocking API works."})
        store.put(ns, "gone", {"text": "short-lived"}, ttl=0.01)
        assert store.get(ns, "a").value == {"text": "Blocking API works."}  # type: ignore[union-attr]
        assert [h.key for h in store.search((root,), query="blocking", limit=1)] == ["a"]
        assert store.list_namespaces(prefix=(root,)) == [ns]
        done = store.start_ttl_sweeper(sweep_interval_minutes=0.01)  # every 0.6 s
        deadline = time.monotonic() + 10
        while store.get(ns, "gone", refresh_ttl=False) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert store.get(ns, "gone") is None
        assert store.stop_ttl_sweeper(timeout=5) and done.result(timeout=1) is None
        store.delete(ns, "a")
        assert store.get(ns, "a") is None


async def test_items_of_the_earlier_store_move_over(user: str, make_service: Any) -> None:
    """The earlier store kept items as notes (lg_* metadata); the migration writes them as items in
    the same scope and namespace and deletes the notes; a note that only looks like one stays."""
    svc, _ = await make_service()
    coach = Scope(user_id=user, agent_id="coach")
    value = '{"name":"bob","likes":["tea"],"pad":"' + "x" * 1500 + '"}'
    pieces = {f"lg_v{i:02d}": f"|{value[j : j + 998]}|" for i, j in enumerate(range(0, len(value), 998))}
    meta = {"lg_key": '"profile"', "lg_created": "2026-01-01T00:00:00+00:00", **pieces}
    old = await svc.add("bob likes tea", coach, note_id=f"lg-{uuid.uuid4().hex}", metadata=meta, enrich=False)
    odd = await svc.add("looks like one", coach, metadata={"lg_key": "not json"}, enrich=False)
    plain = await svc.add("a plain note", coach, enrich=False)
    store = GraphmemStore(svc, user_label=1, agent_label=2, run_label=3)
    assert await store.amigrate_legacy_notes(user_id=user) == (1, 1)
    item = await store.aget(("graphmem", user, "coach"), "profile")
    assert item is not None and item.value == {"name": "bob", "likes": ["tea"], "pad": "x" * 1500}
    assert store.scope_of(("graphmem", user, "coach")) == coach
    assert {n.id for n in await svc.list(coach)} == {odd.note.id, plain.note.id}
    assert old.note.id not in {n.id for n in await svc.list(coach)}
    assert await store.amigrate_legacy_notes(user_id=user) == (0, 1)  # a rerun finds nothing more to move


async def test_any_limit_is_taken_and_read_in_pages(
    user: str, make_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29: LangGraph's stores take any limit (the conformance suite lists namespaces with
    limit=100000 and 1000000); graphmem reads the store in pages of LIMITS.items_page_max rows
    instead of refusing (a page of 7 here, so that the 30 items cross page boundaries)."""
    import graphmem.service.items as items_module
    from graphmem.models import Limits

    svc, _ = await make_service()
    store = GraphmemStore(svc, scope=Scope(user_id=user))
    root = f"lim-{uuid.uuid4().hex[:6]}"
    puts = [PutOp((root, f"n{i:02d}", "deep", "er"), "k", {"i": i}, index=False) for i in range(30)]
    await store.abatch(puts)
    namespaces = sorted(p.namespace for p in puts)
    calls: list[int] = []
    real = svc.items.store.item_namespaces

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["limit"])
        return await real(*args, **kwargs)

    monkeypatch.setattr(items_module, "LIMITS", Limits(items_page_max=7))
    monkeypatch.setattr(svc.items.store, "item_namespaces", counted)
    assert await store.alist_namespaces(prefix=(root,), limit=1_000_000) == namespaces
    assert max(calls) == 7 and len(calls) == 5  # 7 + 7 + 7 + 7 + 2: no store call over the page size
    assert await store.alist_namespaces(max_depth=3, limit=100_000) == sorted({ns[:3] for ns in namespaces})
    assert await store.alist_namespaces(prefix=(root,), limit=5, offset=12) == namespaces[12:17]
    found = await store.asearch((root,), limit=1_000_000)
    assert sorted(i.value["i"] for i in found) == list(range(30))
    assert [i.value["i"] for i in await store.asearch((root,), limit=10**9, offset=25)] == [
        i.value["i"] for i in found[25:]
    ]
    residual = await store.asearch((root,), filter={"i": {"$gte": 3}, "x": None}, limit=10**6)  # checked in Python
    assert len(residual) == 27
    with pytest.raises(InvalidInputError):
        await svc.items.search(Scope(user_id=user), (root,), limit=-1)


async def test_expired_items_are_gone_for_readers_before_the_sweep(user: str, make_service: Any, graph: Any) -> None:
    """Issue 29: an item whose TTL ran out is not returned by get (refresh_ttl=False or not),
    search or list_namespaces, with LangGraph's default TTLConfig (no omit_expired); the node is
    still there until the sweeper deletes it."""
    svc, _ = await make_service()
    store = GraphmemStore(svc, scope=Scope(user_id=user))
    root = f"ttl-{uuid.uuid4().hex[:6]}"
    # 3 s: long enough for the first read to come before expiry on a loaded runner, short for a test
    await store.aput((root, "short"), "gone", {"text": "short-lived"}, ttl=0.05)
    await store.aput((root, "long"), "kept", {"text": "long-lived"}, ttl=60)
    assert (await store.aget((root, "short"), "gone", refresh_ttl=False)) is not None
    await asyncio.sleep(3.2)
    assert await store.aget((root, "short"), "gone", refresh_ttl=False) is None
    assert await store.aget((root, "short"), "gone") is None  # and a refreshing read does not revive it
    assert [i.key for i in await store.asearch((root,))] == ["kept"]
    assert [i.key for i in await store.asearch((root,), query="short-lived text")] == ["kept"]
    assert await store.alist_namespaces(prefix=(root,)) == [(root, "long")]
    stored = graph.q("MATCH (i:StoreItem {key: 'gone'}) WHERE i.ns[0] = $r RETURN count(i) AS n", r=root)
    assert stored == [{"n": 1}]  # not swept yet: hidden by the reads themselves
    assert await store.asweep_ttl() >= 1
    assert graph.q("MATCH (i:StoreItem {key: 'gone'}) WHERE i.ns[0] = $r RETURN count(i) AS n", r=root) == [{"n": 0}]
