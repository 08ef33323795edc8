"""The store enforces scopes by itself: with the service's checks bypassed, no write crosses a scope.
And every query that returns notes projects the same keys (one note projection)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
import pytest_asyncio
from langchain_core.embeddings import Embeddings

from graphmem import queries
from graphmem.config import Settings
from graphmem.models import AddWrite, EnrichmentStatus, Link, LinkType, NeighbourUpdate, Note, NoteInput, Scope
from graphmem.queries import cypher_dir
from graphmem.store.neo4j_store import Neo4jNoteStore
from graphmem.store.records import NOTE_KEYS, filter_params

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(loop_scope="session")
async def two_scopes(
    settings: Settings, scope: Scope, make_service: Any
) -> AsyncIterator[tuple[Neo4jNoteStore, dict[str, str], Scope]]:
    """The store, and notes a1, a2 in `scope` and b1 in another scope of the same user."""
    svc, _ = await make_service(enable_enrichment=False)
    other = Scope(user_id=scope.user_id, agent_id="other")
    p = scope.user_id
    await svc.add_many(
        [
            NoteInput(content="Ana plays the violin.", note_id=f"{p}-a1"),
            NoteInput(content="Ana's violin is old.", note_id=f"{p}-a2"),
        ],
        scope,
    )
    await svc.add_many([NoteInput(content="Bo plays the cello.", note_id=f"{p}-b1")], other)
    store = Neo4jNoteStore.from_settings(settings)
    try:
        yield store, {"a1": f"{p}-a1", "a2": f"{p}-a2", "b1": f"{p}-b1"}, other
    finally:
        await store.run_write("admin/delete_scope", **other.params())
        await store.close()


def relationships(graph: Any, a: str, b: str) -> int:
    return int(graph.q("MATCH (x:Note {id: $a})-[r]-(y:Note {id: $b}) RETURN count(r) AS n", a=a, b=b)[0]["n"])


async def test_a_link_to_another_scopes_note_is_refused_by_the_store(two_scopes: Any, scope: Scope, graph: Any) -> None:
    store, ids, other = two_scopes
    out = await store.create_links(
        ids["a1"], scope, [Link(source_id=ids["a1"], target_id=ids["b1"], type=LinkType.SUPPORTS)], caused_by=ids["a1"]
    )
    assert out == []
    back = await store.create_links(
        ids["b1"], scope, [Link(source_id=ids["b1"], target_id=ids["a1"], type=LinkType.SUPPORTS)], caused_by=ids["b1"]
    )
    assert back == []
    named_by_target = await store.create_links(
        ids["b1"], other, [Link(source_id=ids["b1"], target_id=ids["a1"], type=LinkType.SUPPORTS)], caused_by=ids["b1"]
    )
    assert named_by_target == []
    assert relationships(graph, ids["a1"], ids["b1"]) == 0
    inside = await store.create_links(
        ids["a1"], scope, [Link(source_id=ids["a1"], target_id=ids["a2"], type=LinkType.SUPPORTS)], caused_by=ids["a1"]
    )
    assert [(x.target_id, x.type) for x in inside] == [(ids["a2"], LinkType.SUPPORTS)]  # the same call works in scope


async def test_an_add_writes_no_link_or_evolution_into_another_scope(
    two_scopes: Any, scope: Scope, graph: Any, embedder: Embeddings
) -> None:
    store, ids, other = two_scopes
    vec = await embedder.aembed_query("Ana tunes the violin.")
    note = Note(id=f"{scope.user_id}-a3", content="Ana tunes the violin.", scope=scope)
    outcome = await store.add(
        AddWrite(
            note=note,
            embedding=vec,
            links=[
                Link(source_id=note.id, target_id=ids["b1"], type=LinkType.RELATED_TO),
                Link(source_id=note.id, target_id=ids["a1"], type=LinkType.ELABORATES),
            ],
            updates=[NeighbourUpdate(note_id=ids["b1"], context="hijacked", tags=["x"], keywords=["x"], embedding=vec)],
        )
    )
    assert outcome.created and [x.target_id for x in outcome.links] == [ids["a1"]] and outcome.versions == {}
    b1 = await store.get(ids["b1"], other)
    assert (
        b1 is not None
        and b1.context == ""
        and b1.version == 1
        and await store.history(ids["b1"], other, limit=10) == []
    )
    assert relationships(graph, note.id, ids["b1"]) == 0


async def test_a_cross_scope_relationship_written_behind_the_store_is_never_followed(
    two_scopes: Any, scope: Scope, graph: Any, embedder: Embeddings
) -> None:
    """The hop's scope check holds on its own: a relationship to another scope's note that only raw
    Cypher could write (every graphmem write refuses it) is not followed by either one-hop query."""
    store, ids, _ = two_scopes
    graph.q(
        "MATCH (a:Note {id: $a}), (b:Note {id: $b}) CREATE (a)-[:SUPPORTS {strength: 1.0, reason: 'planted'}]->(b)",
        a=ids["a1"],
        b=ids["b1"],
    )
    vec = await embedder.aembed_query("Ana plays the violin.")
    found, linked = await store.vector_search_linked(vec, scope, 2, per_hit=5)
    assert ids["a1"] in {n.id for n, _ in found}
    assert all(ln.note.scope == scope for ln in linked) and ids["b1"] not in {ln.note.id for ln in linked}
    expanded = await store.expand_links([ids["a1"], ids["a2"]], scope, per_hit=5, exclude_ids=[])
    assert ids["b1"] not in {ln.note.id for ln in expanded}
    assert all(ln.note.scope == scope for ln in expanded)


async def test_follows_pairs_across_scopes_write_nothing(two_scopes: Any, scope: Scope, graph: Any) -> None:
    store, ids, _ = two_scopes
    assert await store.add_follows([(ids["a1"], ids["b1"]), (ids["b1"], ids["a1"])], scope) == 0
    assert relationships(graph, ids["a1"], ids["b1"]) == 0


async def test_reads_and_changes_need_the_notes_own_scope(two_scopes: Any, scope: Scope, embedder: Embeddings) -> None:
    store, ids, other = two_scopes
    b1 = ids["b1"]
    assert (
        await store.get(b1, scope) is None
        and await store.links(b1, scope, limit=10) == []
        and await store.history(b1, scope, limit=10) == []
    )
    vec = await embedder.aembed_query("x")
    assert (
        await store.revise(
            b1,
            scope,
            content="x",
            context="",
            tags=[],
            keywords=[],
            enrichment=EnrichmentStatus.RAW,
            embedding=vec,
            changed_by="test",
        )
        is None
    )
    assert await store.delete(b1, scope) is False
    assert await store.expand_links([b1], scope, 3, exclude_ids=[]) == []
    await store.touch({b1: 5}, scope)
    kept = await store.get(b1, other)
    assert kept is not None and kept.content == "Bo plays the cello." and kept.retrieval_count == 0


async def test_import_does_not_link_into_another_scope(
    two_scopes: Any, scope: Scope, make_service: Any, graph: Any
) -> None:
    """An export record may name any target id; the import writes only links inside the scope."""
    _, ids, _ = two_scopes
    svc, _ = await make_service(enable_enrichment=False)
    record = {
        "id": f"{scope.user_id}-imp",
        "content": "Ana's violin came from her grandfather.",
        "links": [
            {"target_id": ids["b1"], "type": "SUPPORTS", "reason": "smuggled"},
            {"target_id": ids["a2"], "type": "ELABORATES", "reason": "same violin"},
        ],
    }
    assert await svc.import_notes([record], scope) == 1
    exported = {r["id"]: r for r in await svc.export_notes(scope)}
    assert [x["target_id"] for x in exported[record["id"]]["links"]] == [ids["a2"]]
    assert relationships(graph, record["id"], ids["b1"]) == 0


async def test_one_id_in_two_scopes_is_two_notes_and_every_write_stays_in_its_scope(
    two_scopes: Any, scope: Scope, graph: Any, embedder: Embeddings
) -> None:
    """Ids are unique per scope (issue 16): the same id in another scope is another note, and a link,
    an evolution, a revision, a touch or a delete through one scope never reaches the other's note."""
    store, ids, other = two_scopes
    vec = await embedder.aembed_query("Ana's bow.")
    twin = f"{scope.user_id}-twin"
    mine = await store.add(AddWrite(note=Note(id=twin, content="Ana's bow is new.", scope=scope), embedding=vec))
    theirs = await store.add(AddWrite(note=Note(id=twin, content="Bo's bow is old.", scope=other), embedding=vec))
    assert mine.created and theirs.created
    again = await store.add(AddWrite(note=Note(id=twin, content="ignored", scope=other), embedding=vec))
    assert not again.created  # idempotent inside its scope
    out = await store.create_links(
        ids["a1"], scope, [Link(source_id=ids["a1"], target_id=twin, type=LinkType.SUPPORTS)], caused_by=ids["a1"]
    )
    assert [x.target_id for x in out] == [twin]
    await store.add(
        AddWrite(
            note=Note(id=f"{scope.user_id}-a4", content="Ana tunes her bow.", scope=scope),
            embedding=vec,
            updates=[NeighbourUpdate(note_id=twin, context="evolved", tags=["t"], keywords=["k"], embedding=vec)],
        )
    )
    await store.touch({twin: 3}, scope)
    a_twin, b_twin = await store.get(twin, scope), await store.get(twin, other)
    assert a_twin is not None and b_twin is not None
    assert (a_twin.content, a_twin.context, a_twin.version, a_twin.retrieval_count) == (
        "Ana's bow is new.",
        "evolved",
        2,
        3,
    )
    assert (b_twin.content, b_twin.context, b_twin.version, b_twin.retrieval_count) == ("Bo's bow is old.", "", 1, 0)
    assert await store.links(twin, other, limit=10) == [] and await store.history(twin, other, limit=10) == []
    rows = graph.q("MATCH (a:Note {id: $a})-[r]->(t:Note {id: $t}) RETURN t.agent_id AS agent", a=ids["a1"], t=twin)
    assert rows == [{"agent": scope.agent_id}]
    assert await store.delete(twin, scope) and await store.get(twin, other) is not None
    assert await store.add_many([Note(id=twin, content="Ana's bow, again.", scope=scope)], [vec], "full") == [twin]


# --- one note projection -------------------------------------------------------------------------


def note_returning_queries() -> set[str]:
    """Query files that return note maps (their projection names metadata_json after a RETURN); a
    line's file (``name.2026.cypher``) counts as its name, run through the store on that line."""
    names = set()
    for path in cypher_dir().rglob("*.cypher"):
        if "browse" in path.parts:
            continue
        body = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
        first_return = body.find("RETURN")
        if first_return >= 0 and "metadata_json" in body[first_return:]:
            names.add(str(path.relative_to(cypher_dir()).parent / path.name.split(".")[0]))
    return names


async def test_every_note_query_projects_the_same_keys(
    make_service: Any, scope: Scope, settings: Settings, embedder: Embeddings
) -> None:
    svc, _ = await make_service(enable_enrichment=False)
    p = scope.user_id
    await svc.add_many(
        [
            NoteInput(content="Ana plays the violin.", note_id=f"{p}-v1"),
            NoteInput(content="Ana's violin is old.", note_id=f"{p}-v2", follows=f"{p}-v1"),
        ],
        scope,
    )
    vec = await embedder.aembed_query("violin")
    search = {
        "embedding": vec,
        "k": 5,
        **scope.params(),
        "exclude_ids": [],
        "tags_any": None,
        "category": None,
        "since": None,
        "until": None,
    }
    store = Neo4jNoteStore.from_settings(settings)
    projections: dict[str, list[dict[str, Any]]] = {}
    try:
        await store.verify()  # the server line's files (search/vector.2026.cypher on 2026)
        run = store.run
        projections["notes/get"] = [r["note"] for r in await run("notes/get", id=f"{p}-v1", **scope.params())]
        projections["notes/get_with_embedding"] = [
            r["note"] for r in await run("notes/get_with_embedding", id=f"{p}-v1", **scope.params())
        ]
        projections["notes/list"] = [r["note"] for r in await run("notes/list", **scope.params(), skip=0, limit=10)]
        projections["notes/export"] = [r["note"] for r in await run("notes/export", **scope.params(), skip=0, limit=10)]
        projections["search/vector"] = [h["note"] for h in await run("search/vector", fetch_k=50, **search)]
        projections["search/vector_exact"] = [r["note"] for r in await run("search/vector_exact", **search)]
        rows = await run("search/vector_links", fetch_k=50, per_hit=3, **{**search, "k": 1})  # one hit, one hop
        projections["search/vector_links"] = [h["note"] for h in rows] + [x["note"] for h in rows for x in h["linked"]]
        assert rows[0]["linked"], "the FOLLOWS link gives one hop to project"
        text = {k: v for k, v in search.items() if k not in ("embedding", "exclude_ids")}
        projections["search/fulltext"] = [
            h["note"] for h in await run("search/fulltext", lucene="violin", fetch_k=50, embedding=None, **text)
        ]
        projections["search/expand_links"] = [
            r["note"]
            for r in await run("search/expand_links", ids=[f"{p}-v1"], **scope.params(), per_hit=3, exclude_ids=[])
        ]
    finally:
        await store.close()
    assert set(projections) == note_returning_queries()
    for name, notes in projections.items():
        assert notes, name
        want = NOTE_KEYS | ({"embedding"} if name in ("notes/get_with_embedding", "notes/export") else set())
        for note in notes:
            assert set(note) == want, (name, sorted(set(note) ^ want))


async def test_a_small_scope_crowded_out_of_the_index_gets_its_exact_top_k(
    settings: Settings, scope: Scope, graph: Any
) -> None:
    """A scope of 15 notes pointing away from the query while 600 notes of another scope surround it:
    no note of the small scope is among the index's global top 40. On 5.26 the store counts the
    scope after that short over-fetch and scans it exactly (one ANN query, no growing over-fetch);
    on 2026 the scope is filtered inside the index. Either way: its exact top-10, in order, and none of
    the nearer notes that the same user keeps under another agent or run (the exact scan must hold the
    whole scope, not only the user)."""
    rng = np.random.default_rng(5)
    dims = int(graph.q(VECTOR_DIMS)[0]["d"])
    query = _unit(rng, 1, dims)[0]
    crowd = Scope(user_id=scope.user_id + "-crowd")
    near = query + 0.3 * _unit(rng, 600, dims)
    far = -query + 0.8 * _unit(rng, 15, dims)
    # nearer to the query than the scope's own notes, farther than the crowd: outside the global top 40
    sibling = query + 1.0 * _unit(rng, 10, dims)
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    far /= np.linalg.norm(far, axis=1, keepdims=True)
    sibling /= np.linalg.norm(sibling, axis=1, keepdims=True)
    other_agent = Scope(user_id=scope.user_id, agent_id="other-agent")
    other_run = Scope(user_id=scope.user_id, run_id="other-run")
    store = Neo4jNoteStore.from_settings(settings)
    calls: list[tuple[str, int | None]] = []
    run_auto = store.run_auto

    async def counting(name: str, /, **params: Any) -> Any:
        calls.append((name, params.get("fetch_k")))
        return await run_auto(name, **params)

    try:
        server = await store.verify()
        for sc, vecs in ((crowd, near), (scope, far), (other_agent, sibling), (other_run, sibling)):
            graph.q(
                "UNWIND range(0, size($v) - 1) AS i CREATE (:Note {id: $p + '-' + i, user_id: $u, agent_id: $a, "
                "run_id: $r, content: 'note ' + i, created_at: datetime(), updated_at: datetime(), version: 1, "
                "embedding: $v[i]})",
                p=sc.user_id if sc in (crowd, scope) else f"{sc.agent_id}-{sc.run_id}",
                u=sc.user_id,
                a=sc.agent_id,
                r=sc.run_id,
                v=vecs.tolist(),
            )
        graph.q("CALL db.awaitIndexes(60)")
        want = [f"{scope.user_id}-{i}" for i in (far @ query).argsort()[::-1][:10]]
        for _ in range(100):  # index updates are asynchronous: wait until the crowd is searchable
            rows = await store.run_auto(
                "search/vector",
                fetch_k=40,
                k=10,
                embedding=query.tolist(),
                **crowd.params(),
                exclude_ids=[],
                **filter_params(None),
            )
            if sum(r["note"] is not None for r in rows) == 10:
                break
            await asyncio.sleep(0.1)
        base = queries.load("search/vector")  # the plain post-filtered ANN query: none of the small scope
        rows = graph.q(
            base.text,
            fetch_k=40,
            k=10,
            embedding=query.tolist(),
            **scope.params(),
            exclude_ids=[],
            **filter_params(None),
        )
        assert server["line"] == "2026" or [r["note"] for r in rows] == [None]

        store.run_auto = counting  # type: ignore[method-assign]
        hits = await store.vector_search(query.tolist(), scope, 10)
        assert [n.id for n, _ in hits] == want
        assert all(n.scope == scope for n, _ in hits)
        if server["line"] == "5.26":
            assert calls == [("search/vector", 40), ("notes/count", None), ("search/vector_exact", None)]
        else:
            assert calls == [("search/vector", 30)]
        calls.clear()
        linked, _ = await store.vector_search_linked(query.tolist(), scope, 10, per_hit=2)
        assert [n.id for n, _ in linked] == want
    finally:
        for sc in (crowd, other_agent, other_run):
            await store.run_write("admin/delete_scope", **sc.params())
        await store.close()


VECTOR_DIMS = (
    "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'note_embedding' "
    "RETURN options.indexConfig['vector.dimensions'] AS d"
)


def _unit(rng: np.random.Generator, n: int, dims: int) -> Any:
    m = rng.standard_normal((n, dims))
    return m / np.linalg.norm(m, axis=1, keepdims=True)
