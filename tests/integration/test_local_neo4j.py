"""The local Neo4j manager and connection errors, against real servers over Bolt."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver
from pydantic import SecretStr

from graphmem import queries
from graphmem.config import Settings
from graphmem.errors import LocalServiceError, StoreUnavailableError
from graphmem.local.neo4j_server import LocalNeo4j
from graphmem.models import Scope
from graphmem.store.probe import CredentialsRefusedError, ensure_reachable, server_info

GRAPHMEM = [sys.executable, "-c", "from graphmem.interfaces.cli import main; main()"]


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real `graphmem` CLI in a subprocess with the environment that produces ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "GRAPHMEM_"))}
    env |= {
        "NEO4J_URI": settings.neo4j_uri,
        "NEO4J_DATABASE": settings.neo4j_database,
        "GRAPHMEM_HOME": str(settings.home),
        "GRAPHMEM_NEO4J_HTTP_PORT": str(settings.neo4j_http_port),
        "GRAPHMEM_NEO4J_LINE": settings.neo4j_line,
        "COLUMNS": "200",  # rich must not wrap the messages we look for
    }
    if settings.neo4j_version is not None:
        env["GRAPHMEM_NEO4J_VERSION"] = settings.neo4j_version
    if settings.neo4j_password is not None:
        env |= {"NEO4J_USERNAME": settings.neo4j_username, "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value()}
    return subprocess.run([*GRAPHMEM, *args], env=env, capture_output=True, text=True, timeout=180, check=False)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the session server ---------------------------------------------------------------------


def test_status_reports_the_running_server(neo4j_server: Any, settings: Settings) -> None:
    out = _cli(settings, "neo4j", "status", "--json")
    status = json.loads(out.stdout)
    assert status["answering"] is True and status["problem"] is None
    assert status["bolt_uri"].rsplit(":", 1)[1] == settings.neo4j_uri.rsplit(":", 1)[1]
    if neo4j_server.managed:
        assert out.returncode == 0
        assert status["running"] is True and status["pid"] == LocalNeo4j(settings).pid()
        assert status["version"] == settings.neo4j_server_version and status["line"] == settings.neo4j_line
    else:  # someone else's Neo4j at NEO4J_URI: graphmem says it answers but is not its own
        assert out.returncode == 3 and status["running"] is False


def test_server_reports_its_version(settings: Settings) -> None:
    info = server_info(settings.neo4j_uri, settings.neo4j_auth, database=settings.neo4j_database)
    assert info["name"] == "Neo4j Kernel"
    assert info["version"].startswith("5.")


def test_start_reuses_the_running_server(neo4j_server: Any, settings: Settings) -> None:
    if not neo4j_server.managed:
        pytest.skip("the session's Neo4j is not the graphmem-managed one")
    result = LocalNeo4j(settings).start(timeout=30)
    assert result.already_running and not result.fetched
    assert result.status.pid == LocalNeo4j(settings).pid()


def test_the_other_line_on_the_same_ports_is_named(neo4j_server: Any, settings: Settings) -> None:
    """Switching the line with the other line's server still running: say which server holds the port."""
    if not neo4j_server.managed:
        pytest.skip("the session's Neo4j is not the graphmem-managed one")
    other = "2026" if settings.neo4j_line == "5.26" else "5.26"
    switched = settings.model_copy(update={"neo4j_line": other, "neo4j_version": None})
    with pytest.raises(LocalServiceError, match=rf"taken by this home's Neo4j {settings.neo4j_line} server"):
        LocalNeo4j(switched).start(timeout=5)


def test_browser_is_served(settings: Settings) -> None:
    url = f"http://127.0.0.1:{settings.neo4j_http_port}/browser/"
    with urllib.request.urlopen(url, timeout=10) as response:
        body = response.read().decode("utf-8", errors="replace")
    assert response.status == 200
    assert "<title>Neo4j Browser</title>" in body


def test_delete_scope_removes_only_that_scope(neo4j_driver: Driver, settings: Settings, scope: Scope) -> None:
    other = Scope(user_id=scope.user_id, agent_id="other-agent")
    for sc in (scope, other):
        neo4j_driver.execute_query(
            "CREATE (:Note {id: randomUUID(), user_id: $user_id, agent_id: $agent_id, run_id: $run_id})",
            sc.params(),
            database_=settings.neo4j_database,
        )
    query = queries.load("admin/delete_scope")
    records, _, _ = neo4j_driver.execute_query(
        query.text, query.bind(**scope.params()), database_=settings.neo4j_database
    )
    assert records[0]["deleted"] == 1
    records, _, _ = neo4j_driver.execute_query(
        query.text, query.bind(**other.params()), database_=settings.neo4j_database
    )
    assert records[0]["deleted"] == 1


# --- bad settings give a clear error, not a stack trace -------------------------------------


def test_unreachable_uri_names_the_setting() -> None:
    uri = f"bolt://127.0.0.1:{_free_port()}"
    with pytest.raises(StoreUnavailableError) as err:
        ensure_reachable(uri, None, timeout=2.0)
    message = str(err.value)
    assert "cannot reach Neo4j" in message and uri in message and "NEO4J_URI" in message


def test_cli_status_on_a_closed_port_says_stopped(settings: Settings, tmp_path: Path) -> None:
    port = _free_port()
    bad = settings.model_copy(update={"neo4j_uri": f"bolt://127.0.0.1:{port}", "home": tmp_path})
    out = _cli(bad, "neo4j", "status")
    assert out.returncode == 3
    assert "stopped" in out.stdout and "Traceback" not in out.stdout + out.stderr


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"NEO4J_URI": "http://x"}, "NEO4J_URI"),
        ({"GRAPHMEM_NEIGHBOUR_K": "-1"}, "GRAPHMEM_NEIGHBOUR_K"),
        ({"NEO4J_URI": "bolt://db.example.org:7687"}, "points at another machine"),
    ],
)
def test_cli_bad_settings_exit_with_a_message(settings: Settings, env: dict[str, str], expected: str) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "GRAPHMEM_"))}
    out = subprocess.run(
        [*GRAPHMEM, "neo4j", "start"],
        env=base | env | {"COLUMNS": "200", "GRAPHMEM_HOME": str(settings.home)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 2
    assert expected in out.stderr and "Traceback" not in out.stderr


def test_start_refuses_a_port_taken_by_another_program(settings: Settings, tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        taken = settings.model_copy(update={"neo4j_uri": f"bolt://127.0.0.1:{port}", "home": tmp_path})
        with pytest.raises(LocalServiceError, match=rf"port \(from NEO4J_URI\) {port} is already in use"):
            LocalNeo4j(taken).start(timeout=5)
    assert not (tmp_path / "neo4j" / "server" / "neo4j.pid").exists()


def test_start_does_not_take_another_server_for_its_own(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the port check cannot close: another server takes the Bolt port after the check.
    Bolt then answers (the other server) while our JVM exits with "Address already in use"."""
    local = LocalNeo4j(settings)
    if shutil.which("java") is None or not local.dist.complete():
        pytest.skip("java and the fetched jars are needed to start a second server")
    clash = settings.model_copy(
        update={"home": tmp_path, "neo4j_http_port": _free_port(), "neo4j_heap": "256m", "neo4j_pagecache": "32m"}
    )  # the session server's Bolt port
    server = LocalNeo4j(clash, instance="test-clash")
    monkeypatch.setattr(LocalNeo4j, "_check_ports", lambda self, grace=0.0: None)
    try:
        with pytest.raises(LocalServiceError, match="exited"):
            server.start(timeout=120)
        assert server.pid() is None
    finally:
        server.stop()


def test_stop_when_nothing_runs(settings: Settings, tmp_path: Path) -> None:
    assert LocalNeo4j(settings.model_copy(update={"home": tmp_path})).stop() is None


# --- a second, auth-enabled server (about 15-25 s) ------------------------------------------

# Quotes, a backslash, spaces and a '#': the password reaches the admin tool through an @-file.
PASSWORD = 'graphmem "test" pw \\ #1'


@pytest.fixture(scope="module")
def java_argv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every `java` started meanwhile records its command line here (a wrapper first on PATH)."""
    real = shutil.which("java")
    if real is None:
        pytest.skip("java is needed to start a second server")
    wrapper_dir = tmp_path_factory.mktemp("java-wrapper")
    log = wrapper_dir / "argv.log"
    wrapper = wrapper_dir / "java"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{wrapper_dir}{os.pathsep}{old_path}"
    try:
        yield log
    finally:
        os.environ["PATH"] = old_path


@pytest.fixture(scope="module")
def auth_server(settings: Settings, java_argv: Path) -> Iterator[LocalNeo4j]:
    """A password-protected server on free ports, sharing the session's jars, with fresh data."""
    local = LocalNeo4j(settings)
    if shutil.which("java") is None or (shutil.which("mvn") is None and not local.dist.complete()):
        pytest.skip("java and mvn (or fetched jars) are needed to start a second server")
    auth_settings = settings.model_copy(
        update={
            "neo4j_uri": f"bolt://127.0.0.1:{_free_port()}",
            "neo4j_http_port": _free_port(),
            "neo4j_username": "neo4j",
            "neo4j_password": SecretStr(PASSWORD),
            "neo4j_database": "neo4j",
            "neo4j_heap": "512m",
            "neo4j_pagecache": "64m",
        }
    )
    server = LocalNeo4j(auth_settings, instance="test-auth")
    server.stop()  # a leftover from an interrupted run
    shutil.rmtree(server.dir, ignore_errors=True)
    server.start(timeout=120)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


def test_auth_server_accepts_the_initial_password(auth_server: LocalNeo4j) -> None:
    ensure_reachable(auth_server.ends.bolt_uri, ("neo4j", PASSWORD))
    status = auth_server.status()
    assert status.running and status.answering and status.auth
    assert "preselectAuthMethod=NATIVE" in status.browser_url


def test_the_password_is_on_no_command_line(auth_server: LocalNeo4j, java_argv: Path) -> None:
    """Issue 16 item 9: `neo4j-admin dbms set-initial-password <pw>` put the password in the argv of a
    process any local user can read (ps, /proc/*/cmdline)."""
    lines = java_argv.read_text().splitlines()
    assert any("org.neo4j.cli.AdminTool" in line for line in lines), lines  # the admin tool ran, with a @-file
    assert any("org.neo4j.server" in line or "Neo4jCommunity" in line for line in lines), lines
    for line in lines:
        assert PASSWORD not in line and 'graphmem "test" pw' not in line and "set-initial-password" not in line
    assert not list((auth_server.dir / "run").glob("*.args"))  # the @-file is gone


def test_wrong_password_names_the_settings(auth_server: LocalNeo4j) -> None:
    with pytest.raises(CredentialsRefusedError) as err:
        ensure_reachable(auth_server.ends.bolt_uri, ("neo4j", "not-the-password"))
    assert "NEO4J_PASSWORD" in str(err.value) and "refused user 'neo4j'" in str(err.value)


def test_missing_password_names_the_setting(auth_server: LocalNeo4j) -> None:
    with pytest.raises(CredentialsRefusedError, match="requires authentication: set NEO4J_PASSWORD"):
        ensure_reachable(auth_server.ends.bolt_uri, None)


def test_start_with_a_wrong_password_keeps_the_server(auth_server: LocalNeo4j) -> None:
    wrong = auth_server.settings.model_copy(update={"neo4j_password": SecretStr("another-password")})
    with pytest.raises(LocalServiceError, match="refused user 'neo4j'"):
        LocalNeo4j(wrong, instance="test-auth").start(timeout=30)
    assert auth_server.status().running
