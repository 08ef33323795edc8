"""The local Neo4j manager's pure parts: endpoints, Java detection, conf, pom, command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from graphmem.config import Settings
from graphmem.errors import LocalServiceError
from graphmem.local.neo4j_dist import java_major, render_pom, required_java
from graphmem.local.neo4j_server import LocalNeo4j, endpoints


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Settings come only from the test (CI exports NEO4J_URI and friends; no stray .env)."""
    import os

    for name in list(os.environ):
        if name.startswith(("NEO4J_", "GRAPHMEM_")) or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def make(tmp_path: Path, **overrides: object) -> Settings:
    return Settings(home=tmp_path, **overrides)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ('java version "1.8.0_292"', 8),
        ("no java here", None),
    ],
)
def test_java_major(output: str, major: int | None) -> None:
    assert java_major(output) == major


def test_required_java() -> None:
    assert required_java("5.26.30") == (17, "org.neo4j.server.CommunityEntryPoint")
    assert required_java("2026.10.2") == (21, "org.neo4j.server.Neo4jCommunity")


def test_endpoints_and_browser_url(tmp_path: Path) -> None:
    e = endpoints(make(tmp_path, neo4j_uri="bolt://localhost:17687", neo4j_http_port=17474))
    assert (e.host, e.bolt_port, e.http_port, e.username) == ("127.0.0.1", 17687, 17474, None)
    assert e.browser_url == ("http://127.0.0.1:17474/browser/?dbms=bolt://127.0.0.1:17687&preselectAuthMethod=NO_AUTH")
    e = endpoints(make(tmp_path, neo4j_password=SecretStr("password1")))
    assert e.browser_url.endswith("?dbms=bolt://neo4j@127.0.0.1:7687&preselectAuthMethod=NATIVE")


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("bolt://db.example.org:7687", "another machine"),
        ("neo4j+s://127.0.0.1:7687", "no TLS"),
        ("bolt://127.0.0.1:7474", "different ports"),
    ],
)
def test_endpoints_refuse(tmp_path: Path, uri: str, message: str) -> None:
    with pytest.raises(LocalServiceError, match=message):
        endpoints(make(tmp_path, neo4j_uri=uri))


def test_conf_uses_absolute_paths_ports_and_auth(tmp_path: Path) -> None:
    server = LocalNeo4j(
        make(tmp_path, neo4j_uri="bolt://127.0.0.1:17687", neo4j_http_port=17474, neo4j_pagecache="64m")
    )
    conf = dict(
        line.split("=", 1) for line in server.render_conf().splitlines() if "=" in line and not line.startswith("#")
    )
    assert conf["server.bolt.listen_address"] == "127.0.0.1:17687"
    assert conf["server.http.listen_address"] == "127.0.0.1:17474"
    assert conf["server.default_listen_address"] == "127.0.0.1"
    assert conf["dbms.security.auth_enabled"] == "false"
    assert conf["server.memory.pagecache.size"] == "64m"
    assert conf["initial.dbms.default_database"] == "neo4j"
    for key in ("server.directories.data", "server.directories.logs", "server.directories.plugins"):
        assert Path(conf[key]).is_absolute() and conf[key].startswith(str(tmp_path.resolve()))
    with_auth = LocalNeo4j(make(tmp_path, neo4j_password=SecretStr("password1"))).render_conf()
    assert "dbms.security.auth_enabled=true" in with_auth


def test_java_command_sets_the_heap(tmp_path: Path) -> None:
    cmd = LocalNeo4j(make(tmp_path, neo4j_heap="768m")).java_command("/usr/bin/java")
    assert cmd[:3] == ["/usr/bin/java", "-Xms768m", "-Xmx768m"]
    assert "org.neo4j.server.CommunityEntryPoint" in cmd and "--console-mode" in cmd
    assert any(arg.startswith("--config-dir=") and arg.endswith("/neo4j/server/conf") for arg in cmd)


def test_pom_and_completeness(tmp_path: Path) -> None:
    pom = render_pom("5.26.30", "5.24.0")
    assert "<artifactId>neo4j</artifactId><version>5.26.30</version>" in pom
    assert "<artifactId>neo4j-browser</artifactId><version>5.24.0</version>" in pom
    server = LocalNeo4j(make(tmp_path))
    assert not server.dist.complete()
    assert server.pid() is None


def test_instance_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        LocalNeo4j(make(tmp_path), instance="../x")
