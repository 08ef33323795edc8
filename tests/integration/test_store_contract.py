"""What a LangGraph user relies on from a store, checked on LangGraph's InMemoryStore and on
GraphmemStore (real Neo4j, real MiniLM embeddings) in one parametrised suite.

Written in graphmem's own words after reading what langgraph's store tests cover (Postgres, SQLite,
InMemoryStore); nothing copied. Where the two stores differ on purpose, the test says so with
``differs(...)`` and docs/interfaces.md lists the difference.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from graphmem.errors import InvalidInputError
from graphmem.integrations.langgraph import GraphmemStore
from graphmem.models import Scope
from graphmem.service.items import item_matches

pytestmark = pytest.mark.asyncio(loop_scope="session")

KINDS = ["memory", "graphmem"]


@dataclass
class Subject:
    kind: str
    store: BaseStore
    root: str  # a label no other test uses: every namespace of a test starts with it

    def ns(self, *labels: str) -> tuple[str, ...]:
        return (self.root, *labels)


class FailingEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("embedder down")

    def embed_query(self, text: str) -> list[float]:
        raise RuntimeError("embedder down")


@pytest.fixture
def users() -> str:
    """A prefix for user labels no other test uses."""
    return f"lgu-{uuid.uuid4().hex[:10]}"


@pytest_asyncio.fixture(loop_scope="session", params=KINDS)
async def make(
    request: pytest.FixtureRequest, make_service: Any, scope: Scope, embedder: Embeddings, graph: Any
) -> AsyncIterator[Callable[..., Any]]:
    """Factory of the store under test; every graphmem item of the test's roots is removed after it."""
    kind: str = request.param
    roots: list[str] = []

    async def factory(embed: Embeddings | None = None, **graphmem: Any) -> Subject:
        root = f"t{uuid.uuid4().hex[:8]}"
        roots.append(root)
        if kind == "memory":
            return Subject(kind, InMemoryStore(index={"dims": 384, "embed": embed or embedder}), root)
        svc, _ = await make_service()
        if embed is not None:  # the item service embeds with the service's embedder
            svc.embedder = embed
            svc.items._embed_query = embed.aembed_query
        return Subject(kind, GraphmemStore(svc, scope=scope, **graphmem), root)

    yield factory
    if roots:
        graph.q("MATCH (i:StoreItem) WHERE i.ns[0] IN $roots DETACH DELETE i", roots=roots)


def differs(subject: Subject, **expected: Any) -> Any:
    """The expectation for this store where the stores differ on purpose (listed in the docs)."""
    return expected[subject.kind]


# --- get / put / delete ---------------------------------------------------------------------------


async def test_put_then_get_returns_the_value_exactly(make: Any) -> None:
    s = await make()
    value = {
        "text": "Alice prefers green tea in the morning.",
        "nested": {"list": [1, 2.5, None, True, "  padded  "], "empty": {}, "deep": {"a": {"b": {"c": [[]]}}}},
        "unicode": "Ünïcödé ✓ 你好 \t tab \n newline \x7f del \x00 nul",
        "number": 10**18,
        "neg": -0.5,
        "flag": False,
    }
    ns = s.ns("memories", "alice")
    await s.store.aput(ns, "pref 1 / tea", value)
    item = await s.store.aget(ns, "pref 1 / tea")
    assert item is not None and item.value == value
    assert item.key == "pref 1 / tea" and tuple(item.namespace) == ns
    assert item.created_at <= item.updated_at
    assert await s.store.aget(ns, "missing") is None
    assert await s.store.aget(s.ns("memories"), "pref 1 / tea") is None  # a parent namespace is another one


async def test_replacing_keeps_one_item_and_its_creation_time(make: Any) -> None:
    s = await make()
    ns = s.ns("profile")
    await s.store.aput(ns, "k", {"v": 1})
    first = await s.store.aget(ns, "k")
    await asyncio.sleep(0.01)
    await s.store.aput(ns, "k", {"v": 2})
    second = await s.store.aget(ns, "k")
    assert first is not None and second is not None and second.value == {"v": 2}
    assert second.updated_at > first.updated_at
    # PostgresStore keeps created_at on replacement (ON CONFLICT UPDATE); InMemoryStore rebuilds the item.
    assert (second.created_at == first.created_at) is differs(s, graphmem=True, memory=False)
    assert [i.key for i in await s.store.asearch(ns)] == ["k"]


async def test_delete_and_put_none(make: Any) -> None:
    s = await make()
    ns = s.ns("d")
    await s.store.aput(ns, "a", {"x": 1})
    await s.store.aput(ns, "b", {"x": 2})
    await s.store.adelete(ns, "a")
    await s.store.adelete(ns, "a")  # twice is fine
    await s.store.abatch([PutOp(ns, "b", None)])
    await s.store.adelete(s.ns("never"), "x")  # a namespace that never existed is fine too
    assert await s.store.aget(ns, "a") is None and await s.store.aget(ns, "b") is None
    assert await s.store.asearch(ns) == []


async def test_keys_are_any_text(make: Any) -> None:
    s = await make()
    ns = s.ns("keys")
    keys = ["", " ", "a/b", "a.b", "ключ", "🙂", "x" * 5000, "'; DROP", "$eq", "\n"]
    for k in keys:
        await s.store.aput(ns, k, {"k": k})
    for k in keys:
        item = await s.store.aget(ns, k)
        assert item is not None and item.value == {"k": k}, k


# --- namespaces -----------------------------------------------------------------------------------


async def test_any_namespace_langgraph_allows(make: Any) -> None:
    s = await make()
    shapes = [
        s.ns(),
        s.ns("memories", "u1"),
        s.ns("users", "u1", "prefs"),
        s.ns("a", "b", "c", "d", "e", "f", "g"),
        s.ns("Zoë Ångström", "名前", "_private", "with space", "slash/inside", "new\nline", "@", "*x", "é" * 300),
    ]
    for i, ns in enumerate(shapes):
        await s.store.aput(ns, "k", {"i": i})
    for i, ns in enumerate(shapes):
        item = await s.store.aget(ns, "k")
        assert item is not None and item.value == {"i": i} and tuple(item.namespace) == ns


async def test_no_label_is_an_alias_of_another(make: Any) -> None:
    s = await make()
    forms = [s.ns("u"), s.ns("u", "default"), s.ns("u", "default", "default")]
    for i, ns in enumerate(forms):
        await s.store.aput(ns, "k", {"i": i})
    assert [(await s.store.aget(ns, "k")).value for ns in forms] == [{"i": 0}, {"i": 1}, {"i": 2}]  # type: ignore[union-attr]
    assert len(await s.store.asearch(s.ns("u"), limit=10)) == 3


async def test_invalid_namespaces_are_refused(make: Any) -> None:
    s = await make()
    for bad in [(), ("a.b",), (s.root, ""), ("langgraph", "x"), (s.root, "nul\x00")]:
        with pytest.raises(InvalidNamespaceError):
            await s.store.aput(bad, "k", {"x": 1})


async def test_prefix_matches_whole_labels_only(make: Any) -> None:
    s = await make()
    await s.store.aput(s.ns("foo"), "a", {"x": 1})
    await s.store.aput(s.ns("foobar"), "b", {"x": 1})
    await s.store.aput(s.ns("foo", "bar"), "c", {"x": 1})
    await s.store.aput(s.ns("user_1"), "d", {"x": 1})
    await s.store.aput(s.ns("userX1"), "e", {"x": 1})
    assert {i.key for i in await s.store.asearch(s.ns("foo"))} == {"a", "c"}
    assert {i.key for i in await s.store.asearch(s.ns("user_1"))} == {"d"}
    assert {i.key for i in await s.store.asearch(s.ns("fo"))} == set()
    assert {i.key for i in await s.store.asearch(s.ns(), limit=10)} == {"a", "b", "c", "d", "e"}


async def test_list_namespaces(make: Any) -> None:
    s = await make()
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"), ("x",)]:
        await s.store.aput(s.ns(*ns), "k", {"v": 1})
    r = s.root
    assert await s.store.alist_namespaces(prefix=(r, "a", "b"), max_depth=4) == [
        (r, "a", "b", "c"),
        (r, "a", "b", "d"),
        (r, "a", "b", "f"),
    ]
    assert await s.store.alist_namespaces(prefix=(r,), max_depth=2) == [(r, "a"), (r, "x")]
    assert await s.store.alist_namespaces(prefix=(r, "*", "b", "d")) == [
        (r, "a", "b", "d", "e"),
        (r, "a", "b", "d", "i"),
    ]
    assert await s.store.alist_namespaces(prefix=(r,), suffix=("f",)) == [(r, "a", "b", "f"), (r, "a", "c", "f")]
    assert await s.store.alist_namespaces(prefix=(r,), suffix=("*", "f")) == [(r, "a", "b", "f"), (r, "a", "c", "f")]
    everything = await s.store.alist_namespaces(prefix=(r,))
    assert len(everything) == 6 and everything == sorted(everything)
    assert await s.store.alist_namespaces(prefix=(r,), limit=2, offset=1) == everything[1:3]
    raw = await s.store.abatch([ListNamespacesOp(match_conditions=(MatchCondition("prefix", (r, "a", "c")),))])
    assert raw == [[(r, "a", "c", "f")]]


# --- batch ----------------------------------------------------------------------------------------


async def test_batch_results_in_order_and_reads_see_the_store_before_the_batch(make: Any) -> None:
    s = await make()
    ns = s.ns("batch")
    await s.store.aput(ns, "old", {"v": "old"})
    results = await s.store.abatch(
        [
            PutOp(ns, "new", {"v": 1}),
            GetOp(ns, "old"),
            GetOp(ns, "new"),
            SearchOp(ns, limit=10),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ns),)),
            PutOp(ns, "new", {"v": 2}),
            PutOp(ns, "old", None),
        ]
    )
    assert results[0] is None and results[5] is None and results[6] is None
    assert results[1].value == {"v": "old"} and results[2] is None  # type: ignore[union-attr]
    assert [i.key for i in results[3]] == ["old"]  # type: ignore[union-attr]
    assert results[4] == [ns]
    assert (await s.store.aget(ns, "new")).value == {"v": 2}  # type: ignore[union-attr]  # the last put wins
    assert await s.store.aget(ns, "old") is None


# --- search ---------------------------------------------------------------------------------------

FACTS = {
    "tea": {"text": "Alice drinks green tea every morning.", "kind": "preference", "weight": 3, "meta": {"lang": "en"}},
    "bike": {"text": "Alice commutes to work by bicycle.", "kind": "habit", "weight": 10, "meta": {"lang": "de"}},
    "cat": {"text": "Alice has a black cat named Pixel.", "kind": "fact", "weight": 1, "tags": ["pet", "cat"]},
    "coffee": {"text": "Alice dislikes coffee.", "kind": "preference", "weight": 2.5, "flag": True},
}


async def _facts(s: Subject) -> tuple[str, ...]:
    ns = s.ns("facts")
    await s.store.abatch([PutOp(ns, k, v) for k, v in FACTS.items()])
    return ns


async def test_query_search_ranks_by_meaning_with_scores(make: Any) -> None:
    s = await make()
    ns = await _facts(s)
    hits = await s.store.asearch(s.ns(), query="What does Alice like to drink?", limit=2)
    assert len(hits) == 2 and hits[0].key in ("tea", "coffee")
    assert all(h.score is not None for h in hits) and hits[0].score >= hits[1].score  # type: ignore[operator]
    assert tuple(hits[0].namespace) == ns and hits[0].value == FACTS[hits[0].key]
    page2 = await s.store.asearch(s.ns(), query="What does Alice like to drink?", limit=2, offset=2)
    assert len(page2) == 2 and not {h.key for h in hits} & {h.key for h in page2}


@pytest.mark.parametrize(
    ("filter_", "keys"),
    [
        ({"kind": "preference"}, {"tea", "coffee"}),
        ({"kind": {"$eq": "habit"}}, {"bike"}),
        ({"kind": {"$ne": "preference"}}, {"bike", "cat"}),
        ({"weight": {"$gt": 2.5}}, {"tea", "bike"}),
        ({"weight": {"$gte": 2.5}}, {"tea", "bike", "coffee"}),
        ({"weight": {"$lt": 3}}, {"cat", "coffee"}),
        ({"weight": {"$lte": 3, "$gt": 1}}, {"tea", "coffee"}),
        ({"weight": 10}, {"bike"}),  # numeric, not textual: 10 > 9 although "10" < "9"
        ({"weight": {"$gt": 9}}, {"bike"}),
        ({"meta": {"lang": "de"}}, {"bike"}),
        ({"meta": {"lang": {"$ne": "de"}}}, {"tea"}),
        ({"tags": ["pet", "cat"]}, {"cat"}),
        ({"tags": ["cat", "pet"]}, set()),
        ({"flag": True}, {"coffee"}),
        ({"kind": "preference", "weight": {"$lt": 3}}, {"coffee"}),
        ({"nothing": "here"}, set()),
    ],
)
async def test_filters(make: Any, filter_: dict[str, Any], keys: set[str]) -> None:
    s = await make()
    ns = await _facts(s)
    assert {i.key for i in await s.store.asearch(ns, filter=filter_, limit=10)} == keys
    with_query = await s.store.asearch(ns, query="bicycle", filter=filter_, limit=10)
    assert {i.key for i in with_query} == keys  # the filter holds with a query too
    assert {i.key for i in with_query} == {k for k, v in FACTS.items() if item_matches(filter_, v)}


async def test_a_filter_finds_items_far_from_the_query(make: Any) -> None:
    s = await make()
    ns = s.ns("far")
    puts = [PutOp(ns, f"tea{i}", {"text": f"Green tea note {i}", "group": "near"}) for i in range(60)]
    puts += [PutOp(ns, f"far{i}", {"text": f"Quarterly tax filing deadline {i}", "group": "far"}) for i in range(3)]
    await s.store.abatch(puts)
    hits = await s.store.asearch(ns, query="green tea", filter={"group": "far"}, limit=5)
    assert {h.key for h in hits} == {"far0", "far1", "far2"}


async def test_paging_without_a_query_covers_everything_once(make: Any) -> None:
    s = await make()
    ns = s.ns("pages")
    await s.store.abatch([PutOp(ns, f"k{i:02d}", {"i": i}) for i in range(25)])
    seen: list[str] = []
    for offset in range(0, 30, 7):
        seen += [i.key for i in await s.store.asearch(ns, limit=7, offset=offset)]
    assert sorted(seen) == [f"k{i:02d}" for i in range(25)]
    await s.store.aput(ns, "k03", {"i": 3, "touched": True})
    newest = await s.store.asearch(ns, limit=1)
    # PostgresStore orders by updated_at DESC; InMemoryStore keeps insertion order.
    assert newest[0].key == differs(s, graphmem="k03", memory="k00")


async def test_index_false_and_index_fields(make: Any) -> None:
    s = await make()
    ns = s.ns("idx")
    await s.store.aput(ns, "plain", {"text": "The quarterly tax filing deadline is in April."}, index=False)
    await s.store.aput(ns, "title", {"title": "Gardening in spring", "body": "Tax filing deadline"}, index=["title"])
    await s.store.aput(ns, "other", {"text": "Planting tomatoes and roses in the garden."})
    hits = await s.store.asearch(ns, query="tax filing deadline", limit=3)
    # An unindexed item is never ranked: InMemoryStore appends it unscored, graphmem leaves it out.
    assert all(h.score is None for h in hits if h.key == "plain")
    assert ("plain" in {h.key for h in hits}) is differs(s, graphmem=False, memory=True)
    assert (await s.store.aget(ns, "plain")) is not None  # still stored and listed
    assert {i.key for i in await s.store.asearch(ns, limit=10)} == {"plain", "title", "other"}
    garden = await s.store.asearch(ns, query="gardening", limit=2)
    assert {h.key for h in garden} == {"title", "other"}


async def test_values_of_any_size(make: Any) -> None:
    s = await make()
    ns = s.ns("big")
    values = {
        "ascii": {"text": "x" * 1_000_000},
        "cjk": {"text": "记忆" * 100_000},
        "many": {f"k{i}": {"n": i, "s": str(i)} for i in range(5_000)},
    }
    for k, v in values.items():
        await s.store.aput(ns, k, v, index=False)
    for k, v in values.items():
        item = await s.store.aget(ns, k)
        assert item is not None and item.value == v, k
    assert {i.key for i in await s.store.asearch(ns, filter={"k4321": {"n": 4321}})} == {"many"}


async def test_a_failed_replacement_keeps_the_old_value(make: Any) -> None:
    s = await make(embed=FailingEmbeddings())
    ns = s.ns("atomic")
    await s.store.aput(ns, "k", {"v": "old"}, index=False)
    with pytest.raises(RuntimeError, match="embedder down"):
        await s.store.aput(ns, "k", {"v": "new"})  # the embedder fails
    assert (await s.store.aget(ns, "k")).value == {"v": "old"}  # type: ignore[union-attr]
    if s.kind == "graphmem":  # InMemoryStore stores anything; graphmem refuses what JSON cannot hold
        for bad in [{"v": object()}, {"v": "lone \ud800 surrogate"}, {"v": float("nan")}]:
            with pytest.raises(InvalidInputError):
                await s.store.aput(ns, "k", bad, index=False)
        assert (await s.store.aget(ns, "k")).value == {"v": "old"}  # type: ignore[union-attr]


async def test_non_ascii_search(make: Any) -> None:
    s = await make()
    ns = s.ns("言語", "ñ")
    await s.store.aput(ns, "ключ", {"text": "Ünïcödé ✓ 你好", "名": "値"})
    assert [i.key for i in await s.store.asearch(s.ns("言語"), filter={"名": "値"})] == ["ключ"]
    assert [i.key for i in await s.store.asearch(s.ns("言語"), query="你好")] == ["ключ"]
    assert await s.store.alist_namespaces(prefix=s.ns("言語")) == [ns]


async def test_filter_text_is_only_ever_data(make: Any) -> None:
    s = await make()
    ns = s.ns("inject")
    hostile = "x' OR 1=1 //"
    await s.store.aput(ns, "a", {hostile: "}) MATCH (n) DETACH DELETE n //", "q'\"": 1})
    await s.store.aput(ns, "b", {"other": 1, "q'\"": 0})
    assert [i.key for i in await s.store.asearch(ns, filter={hostile: "}) MATCH (n) DETACH DELETE n //"})] == ["a"]
    assert [i.key for i in await s.store.asearch(ns, filter={"q'\"": {"$gte": 1}})] == ["a"]
    assert await s.store.asearch(ns, filter={"other": "1"}) == []  # a string is not a number
    if s.kind == "graphmem":  # InMemoryStore converts both sides with float(), so it refuses text here
        assert [i.key for i in await s.store.asearch(ns, filter={hostile: {"$gt": "}"}})] == ["a"]


# --- graphmem only: scopes from namespace labels, TTL ---------------------------------------------


@pytest.mark.parametrize("make", ["graphmem"], indirect=True)
async def test_each_user_label_is_a_scope_and_search_spans_scopes_paged(make: Any, users: str) -> None:
    s = await make(user_label=1)
    store: GraphmemStore = s.store  # type: ignore[assignment]
    names = [f"{users}-{i:02d}" for i in range(60)] + [f"{users} not an id é"]
    await store.abatch([PutOp((s.root, u), "profile", {"user": u, "n": i}) for i, u in enumerate(names)])
    assert store.scope_of((s.root, names[0])).user_id == names[0]
    assert store.scope_of((s.root, names[-1])).user_id.startswith("lg:")
    assert {i.value["user"] for i in await store.asearch((s.root,), limit=1000)} == set(names)  # no cap
    pages = [await store.asearch((s.root,), limit=25, offset=o) for o in (0, 25, 50)]
    assert sorted(i.key + i.namespace[1] for p in pages for i in p) == sorted("profile" + u for u in names)
    top = await store.asearch((s.root,), query="profile", filter={"n": {"$gte": 58}}, limit=10)
    assert {i.value["n"] for i in top} == {58, 59, 60}
    assert len(await store.alist_namespaces(prefix=(s.root,))) == 61
    svc = store._bridge.aio
    assert await svc.items.scopes(user_id=names[3]) == [Scope(user_id=names[3], agent_id="default", run_id="default")]


@pytest.mark.parametrize("make", ["graphmem"], indirect=True)
async def test_ttl_expiry_refresh_and_sweep(make: Any, graph: Any) -> None:
    s = await make(ttl={"omit_expired": True, "refresh_on_read": True})
    store: GraphmemStore = s.store  # type: ignore[assignment]
    ns = s.ns("ttl")
    await store.aput(ns, "short", {"v": 1}, ttl=0.02)  # 1.2 s
    await store.aput(ns, "long", {"v": 2}, ttl=60)
    await store.aput(ns, "forever", {"v": 3})
    assert store.supports_ttl

    def expires(key: str) -> Any:
        rows = graph.q("MATCH (i:StoreItem {key: $k}) WHERE i.ns[0] = $r RETURN i.expires_at AS e", k=key, r=s.root)
        return rows[0]["e"]

    before = expires("long")
    await asyncio.sleep(0.05)
    await store.aget(ns, "long")  # refresh_ttl defaults to True
    assert expires("long") > before
    after_read = expires("long")
    await store.aget(ns, "long", refresh_ttl=False)
    assert expires("long") == after_read
    assert expires("forever") is None
    await asyncio.sleep(1.5)
    assert await store.aget(ns, "short") is None  # omit_expired hides it before the sweep
    assert {i.key for i in await store.asearch(ns)} == {"long", "forever"}
    assert await store.asweep_ttl() >= 1
    assert graph.q("MATCH (i:StoreItem {key: 'short'}) WHERE i.ns[0] = $r RETURN i", r=s.root) == []
    await store.aput(ns, "long", {"v": 2})  # a put without ttl clears the TTL, as in PostgresStore
    assert expires("long") is None


@pytest.mark.parametrize("make", ["memory"], indirect=True)
async def test_in_memory_store_has_no_ttl(make: Any) -> None:
    s = await make()
    with pytest.raises(NotImplementedError):
        await s.store.aput(s.ns("x"), "k", {"v": 1}, ttl=1)


# --- the filter pushed into Cypher agrees with its definition -------------------------------------


@pytest.mark.parametrize("make", ["graphmem"], indirect=True)
async def test_pushed_filters_agree_with_the_definition(make: Any) -> None:
    """150 random values, 400 random filters: the store's answer is exactly what item_matches says."""
    s = await make()
    ns = s.ns("prop")
    pool: list[Any] = [None, True, False, -3, -1, 0, 1, 2, 3, 0.5, -0.0, 2.0, 1e300, 2**60]
    pool += ["", "a", "b", "B", "ab", "é", "10", "9", "😀", "\uffff"]
    rnd = random.Random(15)

    def leaf() -> Any:
        kind = rnd.random()
        if kind < 0.15:
            return {k: rnd.choice(pool) for k in ("x", "y") if rnd.random() < 0.7}
        if kind < 0.25:
            return [rnd.choice(pool) for _ in range(rnd.randint(0, 2))]
        return rnd.choice(pool)

    values: list[dict[str, Any]] = [{k: leaf() for k in ("a", "b", "c") if rnd.random() < 0.8} for _ in range(150)]
    ops = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]

    def condition() -> Any:
        kind = rnd.random()
        if kind < 0.5:
            return {op: rnd.choice(pool) for op in rnd.sample(ops, rnd.randint(1, 2))}
        if kind < 0.65:
            nested = ("x", "y")[: rnd.randint(1, 2)]
            return {k: rnd.choice([rnd.choice(pool), {rnd.choice(ops): rnd.choice(pool)}]) for k in nested}
        if kind < 0.75:
            return [rnd.choice(pool) for _ in range(rnd.randint(0, 2))]
        return rnd.choice(pool)

    filters = [{k: condition() for k in rnd.sample(["a", "b", "c"], rnd.randint(1, 2))} for _ in range(400)]
    await s.store.abatch([PutOp(ns, str(i), v, index=False) for i, v in enumerate(values)])
    for filter_ in filters:
        got = {i.key for i in await s.store.asearch(ns, filter=filter_, limit=1000)}
        want = {str(i) for i, v in enumerate(values) if item_matches(filter_, v)}
        assert got == want, filter_
