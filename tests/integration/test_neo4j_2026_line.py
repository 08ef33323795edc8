"""The 2026 line under `graphmem neo4j start`'s manager: a private 2026.08.1 server on free ports.

Runs where a Java 21 or 25 is found (JAVA_HOME, PATH or the usual JVM folders) and the jars are
fetched or mvn can fetch them (~170 MB once); skipped otherwise, with the reason. About 40-60 s.
"""

from __future__ import annotations

import shutil
import socket
import urllib.request
from collections.abc import Iterator

import pytest
from neo4j import GraphDatabase

from graphmem.config import Settings
from graphmem.errors import LocalServiceError
from graphmem.local.java import find_java
from graphmem.local.neo4j_lines import LINES
from graphmem.local.neo4j_server import LocalNeo4j
from graphmem.store.probe import server_info


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


def test_the_2026_line_filters_inside_the_vector_index(server_2026: LocalNeo4j) -> None:
    """The reason for the line: SEARCH with the scope in the index (Cypher 25; the database keeps
    Cypher 5 as its default language, hence the prefix). A private server, so raw Cypher is fine here."""
    with GraphDatabase.driver(server_2026.ends.bolt_uri) as driver:
        languages, _, _ = driver.execute_query("SHOW DATABASES YIELD name, defaultLanguage WHERE name = 'neo4j'")
        assert languages[0]["defaultLanguage"] == "CYPHER 5"
        driver.execute_query(
            "UNWIND range(0, 59) AS i CREATE (:Note {id: toString(i), user_id: CASE WHEN i < 3 THEN 'small' "
            "ELSE 'big' END, agent_id: 'a', run_id: 'r', embedding: [toFloat(i % 7) + 1.0, 1.0, toFloat(i)]})"
        )
        driver.execute_query(
            "CYPHER 25 CREATE VECTOR INDEX t2026 FOR (n:Note) ON n.embedding WITH [n.user_id, n.agent_id, n.run_id] "
            "OPTIONS {indexConfig: {`vector.dimensions`: 3, `vector.similarity_function`: 'cosine'}}"
        )
        driver.execute_query("CALL db.awaitIndexes(120)")
        records, _, _ = driver.execute_query(
            "CYPHER 25 MATCH (n:Note) SEARCH n IN (VECTOR INDEX t2026 FOR $v WHERE n.user_id = $u AND "
            "n.agent_id = 'a' AND n.run_id = 'r' LIMIT 10) SCORE AS s RETURN n.id AS id",
            {"v": [50.0, 1.0, 59.0], "u": "small"},
        )
        # The query vector points at the big tenant's notes; the small tenant still gets all of its own.
        assert sorted(r["id"] for r in records) == ["0", "1", "2"]
