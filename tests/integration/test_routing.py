"""graphmem unchanged over `neo4j://` (client-side routing), as on a cluster or Aura.

A single local server answers routing requests too (its routing table names itself, from
`server.bolt.advertised_address`), so the driver's routing path is testable here: the integration
core (tests/integration/test_core.py) runs again in a subprocess with NEO4J_URI's scheme switched to
`neo4j://`, against the same server. About as long as test_core.py itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from neo4j import GraphDatabase

from graphmem.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def _routing_uri(settings: Settings) -> str:
    parts = urlsplit(settings.neo4j_uri)
    if parts.scheme not in ("bolt", "neo4j"):
        pytest.skip(f"NEO4J_URI uses {parts.scheme}://: this test switches plain bolt:// to neo4j://")
    return f"neo4j://{parts.netloc}"


def test_the_server_serves_a_routing_table(settings: Settings) -> None:
    uri = _routing_uri(settings)
    with GraphDatabase.driver(uri, auth=settings.neo4j_auth) as driver:
        records, summary, _ = driver.execute_query("RETURN 1 AS one", database_=settings.neo4j_database, routing_="r")
    assert records[0]["one"] == 1
    assert summary.server.address is not None  # a reader the routing table named


def test_the_integration_core_runs_over_neo4j_scheme(settings: Settings) -> None:
    env = {**os.environ, "NEO4J_URI": _routing_uri(settings)}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/integration/test_core.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    tail = (out.stdout + out.stderr)[-3000:]
    assert out.returncode == 0, tail
    assert " passed" in out.stdout and " failed" not in out.stdout, tail
