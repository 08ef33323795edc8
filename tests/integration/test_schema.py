"""Schema bootstrap and the Cypher files, against the real server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from graphmem import queries
from graphmem.config import Settings
from graphmem.errors import SchemaMismatchError
from graphmem.models import Scope
from graphmem.store.neo4j_store import Neo4jNoteStore
from graphmem.store.schema import FULLTEXT_ANALYZER, bootstrap_schema

pytestmark = pytest.mark.asyncio(loop_scope="session")

EXPECTED_INDEXES = {"note_embedding", "note_text", "note_scope", "note_user", "note_agent", "note_run"}


async def test_bootstrap_creates_everything_and_is_idempotent(settings: Settings, graph: Any) -> None:
    store = Neo4jNoteStore.from_settings(settings)
    try:
        await bootstrap_schema(store, 384)
        first = graph.q("SHOW INDEXES YIELD name, state, type RETURN name, state, type")
        await bootstrap_schema(store, 384)  # second run: no error, nothing new
        second = graph.q("SHOW INDEXES YIELD name, state, type RETURN name, state, type")
    finally:
        await store.close()
    assert sorted(map(str, first)) == sorted(map(str, second))
    by_name = {r["name"]: r for r in second}
    assert set(by_name) >= EXPECTED_INDEXES
    assert all(by_name[n]["state"] == "ONLINE" for n in EXPECTED_INDEXES)
    assert by_name["note_embedding"]["type"] == "VECTOR" and by_name["note_text"]["type"] == "FULLTEXT"
    constraints = graph.q("SHOW CONSTRAINTS YIELD name, type, properties RETURN name, type, properties")
    by_constraint = {c["name"]: c for c in constraints}
    assert by_constraint["note_scope_id_unique"]["properties"] == ["id", "user_id", "agent_id", "run_id"]
    assert by_constraint["note_scope_id_unique"]["type"] == "UNIQUENESS"
    assert "note_id_unique" not in by_constraint  # ids are unique per scope, not across scopes (issue 16)
    dims = graph.q(
        "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'note_embedding' "
        "RETURN options.indexConfig['vector.dimensions'] AS d, options.indexConfig['vector.similarity_function'] AS f"
    )
    assert dims[0]["d"] == 384 and dims[0]["f"].lower() == "cosine"


async def test_a_full_text_index_with_another_analyzer_is_rebuilt(settings: Settings, graph: Any) -> None:
    """The migration: an index made with another analyzer (e.g. by an older graphmem) is dropped and
    created again with FULLTEXT_ANALYZER, and finds the notes it held."""
    store = Neo4jNoteStore.from_settings(settings)
    try:
        graph.q("DROP INDEX note_text IF EXISTS")
        graph.q(
            "CREATE FULLTEXT INDEX note_text FOR (n:Note) ON EACH [n.content, n.context, n.keywords, n.tags] "
            "OPTIONS {indexConfig: {`fulltext.analyzer`: 'simple'}}"
        )
        assert (await store.fulltext_index_info() or {}).get("analyzer") == "simple"
        await bootstrap_schema(store, 384)
        info = await store.fulltext_index_info()
    finally:
        await store.close()
    assert info == {"analyzer": FULLTEXT_ANALYZER, "state": "ONLINE"}


async def test_other_dimensions_fail_clearly(settings: Settings) -> None:
    store = Neo4jNoteStore.from_settings(settings)
    try:
        with pytest.raises(SchemaMismatchError, match=r"384 dimensions.*produces 768"):
            await bootstrap_schema(store, 768)
    finally:
        await store.close()


async def test_vector_index_orders_hand_made_vectors(settings: Settings, scope: Scope, graph: Any) -> None:
    def vec(*head: float) -> list[float]:
        return [*head, *([0.0] * (384 - len(head)))]

    rows = [("far", vec(0.5, 1.0)), ("near", vec(1.0, 0.2)), ("exact", vec(1.0, 0.0)), ("mid", vec(1.0, 1.0))]
    for name, v in rows:
        graph.q(
            "CREATE (n:Note {id: $id, user_id: $u, agent_id: $a, run_id: $r, content: $id}) "
            "WITH n CALL db.create.setNodeVectorProperty(n, 'embedding', $v)",
            id=f"{scope.user_id}-{name}",
            u=scope.user_id,
            a=scope.agent_id,
            r=scope.run_id,
            v=v,
        )
    graph.q("CALL db.awaitIndexes(60)")
    # Index updates are asynchronous: poll briefly until all four are visible.
    for _ in range(50):
        found = graph.q(
            "CALL db.index.vector.queryNodes('note_embedding', 10000, $q) YIELD node, score "
            "WHERE node.user_id = $u RETURN node.content AS id, score ORDER BY score DESC",
            q=vec(1.0, 0.0),
            u=scope.user_id,
        )
        if len(found) == 4:
            break
        await asyncio.sleep(0.1)
    order = [r["id"].rsplit("-", 1)[1] for r in found]
    assert order == ["exact", "near", "mid", "far"]
    assert found[0]["score"] == pytest.approx(1.0, abs=1e-3)  # (1 + cos) / 2 with cos = 1
    # cos = 0.5 / sqrt(1.25) = 0.447: far above the near-zero cosines of other notes on axis 0,
    # so the four stay the top four whatever else the index holds.
    # (the index quantizes vectors, so reported scores are approximate)
    assert found[-1]["score"] == pytest.approx((1 + 0.5 / 1.25**0.5) / 2, abs=0.05)


async def test_every_query_file_compiles(settings: Settings, graph: Any) -> None:
    """Every name as the store resolves it for the session server's line (the 2026 files on 2026)."""
    names = queries.all_names()
    assert "notes/add_group" in names and "search/vector" in names
    store = Neo4jNoteStore.from_settings(settings)
    try:
        line = (await store.verify())["line"]
    finally:
        await store.close()
    table = queries.for_line(line)
    for name in names:
        if name.endswith("schema") or name.endswith("_create"):  # DDL, run by the bootstrap (EXPLAIN refuses it)
            continue
        q = table[name]
        graph.q("EXPLAIN " + q.text, **{p: None for p in q.params})


@pytest.mark.filterwarnings("ignore")
def test_bind_rejects_missing_and_extra_parameters() -> None:
    q = queries.load("notes/get")
    assert q.params == {"id", "user_id", "agent_id", "run_id"}
    with pytest.raises(TypeError, match="missing"):
        q.bind(id="x", user_id="u", agent_id="a")
    with pytest.raises(TypeError, match="unexpected"):
        q.bind(id="x", user_id="u", agent_id="a", run_id="r", extra=1)


async def test_migration_from_global_ids_keeps_the_notes_and_allows_an_id_per_scope(
    settings: Settings, graph: Any, scope: Scope
) -> None:
    """A database made before issue 16 has `note_id_unique` (ids unique across every scope). Bootstrap
    replaces it with `note_scope_id_unique` (unique per scope) and keeps every note."""
    other = Scope(user_id=scope.user_id, agent_id="other")
    store = Neo4jNoteStore.from_settings(settings)
    try:
        graph.q("DROP CONSTRAINT note_scope_id_unique IF EXISTS")
        graph.q("CREATE CONSTRAINT note_id_unique IF NOT EXISTS FOR (n:Note) REQUIRE n.id IS UNIQUE")
        graph.q(
            "CREATE (:Note {id: $id, user_id: $u, agent_id: 'default', run_id: 'default', content: 'old'})",
            id=f"{scope.user_id}-old",
            u=scope.user_id,
        )
        with pytest.raises(Exception, match="already exists"):  # the old rule: one id in the whole database
            graph.q(
                "CREATE (:Note {id: $id, user_id: $u, agent_id: 'other', run_id: 'default', content: 'x'})",
                id=f"{scope.user_id}-old",
                u=scope.user_id,
            )
        await bootstrap_schema(store, 384)
        names = {r["name"] for r in graph.q("SHOW CONSTRAINTS YIELD name RETURN name")}
        assert "note_id_unique" not in names and "note_scope_id_unique" in names
        assert graph.q("MATCH (n:Note {id: $id}) RETURN n.content AS c", id=f"{scope.user_id}-old") == [{"c": "old"}]
        graph.q(
            "CREATE (:Note {id: $id, user_id: $u, agent_id: 'other', run_id: 'default', content: 'x'})",
            id=f"{scope.user_id}-old",
            u=scope.user_id,
        )  # the same id in another scope: allowed now
        with pytest.raises(Exception, match="already exists"):  # in the same scope: still refused
            graph.q(
                "CREATE (:Note {id: $id, user_id: $u, agent_id: 'other', run_id: 'default', content: 'y'})",
                id=f"{scope.user_id}-old",
                u=scope.user_id,
            )
        await bootstrap_schema(store, 384)  # idempotent after the migration
    finally:
        graph.q("MATCH (n:Note) WHERE n.user_id = $u DETACH DELETE n", u=other.user_id)
        graph.q("DROP CONSTRAINT note_id_unique IF EXISTS")
        await bootstrap_schema(store, 384)
        await store.close()
