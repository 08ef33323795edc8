"""Helpers for the reliability suite: sizes, result files, a fast embedder, fault-injecting servers.

Sizes: every scenario has a CI form (small, runs by default) and a full form (marked ``slow``, skipped
unless ``GRAPHMEM_FULL=1``). Results (counts, losses, latencies) go to JSON files under
``GRAPHMEM_RELIABILITY_OUT`` (default ``test-artifacts/reliability/``); the conftest writes a
``summary.md`` table from them at the end of the session.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import select
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

FULL = os.environ.get("GRAPHMEM_FULL", "") not in ("", "0", "false", "no")
OUT = Path(os.environ.get("GRAPHMEM_RELIABILITY_OUT", "test-artifacts/reliability"))


def record(name: str, data: dict[str, Any]) -> Path:
    """Write one scenario's numbers as JSON (read back by the summary table)."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps({"scenario": name, "recorded_at": time.time(), **data}, indent=2, default=str))
    return path


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values), q))


# --- a fast, deterministic embedder with controlled neighbourhoods ---------------------------------


class ClusterEmbedder(Embeddings):
    """384-dim unit vectors: ``topic-<n>`` in the text picks one of a few random centres, a hash of the
    text (after a ``"<tag> | "`` prefix, if any) adds a little noise. Notes of one topic are all each other's nearest neighbours, so concurrent
    writers evolve the same neighbours (maximal contention); unrelated data (MiniLM vectors of other
    tests in the shared database) is nearly orthogonal. Costs microseconds, not MiniLM's CPU time.
    """

    dimensions = 384
    _TOPIC = re.compile(r"\btopic-(\d+)\b")

    def __init__(self, clusters: int = 4, spread: float = 0.2, seed: int | None = None) -> None:
        rng = np.random.default_rng(seed)
        centres = rng.normal(size=(clusters, self.dimensions))
        self._centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
        self._spread = spread

    def _vec(self, text: str) -> list[float]:
        text = text.rsplit(" | ", 1)[-1]  # a "<tag> | " prefix is ignored: a tagged copy embeds as its text
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        m = self._TOPIC.search(text)
        cluster = int(m.group(1)) if m else digest[0]
        noise = np.random.default_rng(int.from_bytes(digest[:8], "little")).normal(size=self.dimensions)
        v = self._centres[cluster % len(self._centres)] + self._spread * noise / np.sqrt(self.dimensions)
        return [float(x) for x in v / np.linalg.norm(v)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


# --- an OpenAI-compatible server that misbehaves on request ---------------------------------------


@dataclass
class Reply:
    """What the fault server does for one request.

    kind: "json" (status + JSON body), "raw" (status + these bytes as the body), "truncate" (announce
    the full body, send only ``cut`` bytes, close), "reset" (close the socket with RST, no response),
    "hang" (sleep ``delay`` s, then answer as "json"; longer than the client's timeout = a timeout).
    """

    kind: str = "json"
    status: int = 200
    body: Any = None
    headers: dict[str, str] | None = None
    cut: int = 0
    delay: float = 0.0


Script = Callable[[dict[str, Any]], Reply]


class FaultyOpenAI:
    """A loopback /v1/chat/completions server answering from ``script(request body)``.

    Like tests/fakes.OpenAIStub, plus transport faults: timeouts, resets, truncated bodies.
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.loads(raw or b"{}")
                body["_headers"] = {k.lower(): v for k, v in self.headers.items()}
                body["_t"] = time.perf_counter()
                with stub.lock:
                    stub.requests.append(body)
                reply = stub.script(body)
                try:
                    self._answer(reply)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    self.close_connection = True  # the client gave up (timeout): nothing to do

            def _answer(self, reply: Reply) -> None:
                if reply.kind == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    self.connection.close()
                    return
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.kind == "raw":
                    data = reply.body if isinstance(reply.body, bytes) else str(reply.body).encode()
                else:
                    data = json.dumps(reply.body).encode()
                announced = len(data)
                if reply.kind == "truncate":
                    data = data[: reply.cut]
                    self.close_connection = True
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                for k, v in (reply.headers or {}).items():
                    self.send_header(k, v)
                self.send_header("content-length", str(announced))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FaultyOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- a TCP proxy whose connections can be cut (a Neo4j outage, without killing the shared server) --


# A Bolt COMMIT message in its chunk: size 2, tiny struct with no fields (0xB0), signature 0x12, end marker.
_BOLT_COMMIT = b"\x00\x02\xb0\x12\x00\x00"


class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``target``. ``cut()`` resets every connection and refuses new ones
    (what a client sees when the server dies); ``resume()`` listens again on the same port;
    ``drop_next_reply()`` loses one server reply (e.g. to a COMMIT) and resets that connection."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self.port = 0
        self.cuts = 0
        self.dropped_replies = 0
        self._drop_next = threading.Event()
        self._drop_commit = threading.Event()
        self.resume()

    def drop_next_reply(self) -> None:
        """The next bytes the server sends on any connection are not forwarded: that connection is reset
        instead. The server has done the work; the client never learns the outcome."""
        self._drop_next.set()

    def clear_drops(self) -> None:
        """Forget drop requests nothing consumed (the ingest may have ended first)."""
        self._drop_next.clear()
        self._drop_commit.clear()

    def drop_next_commit_reply(self) -> None:
        """Like drop_next_reply, for the reply to the next Bolt COMMIT: the transaction is committed, the
        client gets a connection error instead of the outcome (the driver's IncompleteCommit)."""
        self._drop_commit.set()

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    def resume(self) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(64)
        self.port = sock.getsockname()[1]
        self._listener = sock
        threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while listener is self._listener:
            try:
                ready, _, _ = select.select([listener], [], [], 0.1)
                if not ready:
                    continue
                client, _ = listener.accept()
            except (OSError, ValueError):
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        commit_sent = False
        try:
            while True:
                readable, _, _ = select.select([a, b], [], [], 1.0)
                for src in readable:
                    data = src.recv(65536)
                    if not data:
                        return
                    if src is a and _BOLT_COMMIT in data and self._drop_commit.is_set():
                        self._drop_commit.clear()
                        commit_sent = True
                    if src is b and (commit_sent or self._drop_next.is_set()):
                        if not commit_sent:
                            self._drop_next.clear()
                        self.dropped_replies += 1
                        return  # reset both ends without forwarding the reply
                    (b if src is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            for s in (a, b):
                self._kill(s)

    def _kill(self, s: socket.socket) -> None:
        with contextlib.suppress(OSError):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            s.close()
        with self._lock:
            self._conns.discard(s)

    def cut(self) -> None:
        self.cuts += 1
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            conns = list(self._conns)
        for s in conns:
            self._kill(s)

    def close(self) -> None:
        self.cut()


# --- the REST app with a scripted LLM, its service created on the serving loop --------------------


def scripted_app(settings: Any, *, responder: Any = None, embedder: Embeddings | None = None) -> Any:
    """The real REST app; its lifespan opens an AsyncMemoryService with a scripted chat model on the
    loop that serves requests (the async Neo4j driver belongs to one loop)."""
    from graphmem.interfaces.rest import create_app
    from graphmem.service.memory import AsyncMemoryService
    from tests.fakes import ScriptedChatModel, amem_responder

    app = create_app(settings)

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        svc = await AsyncMemoryService.create(
            settings, chat_model=ScriptedChatModel(responder or amem_responder()), embedder=embedder
        )
        app.state.service = svc
        try:
            yield
        finally:
            await svc.close()

    app.router.lifespan_context = lifespan
    return app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(settings: Any, api_keys: str, root: Path) -> dict[str, str]:
    """The environment of a REST server subprocess (``load_server``): the session's Neo4j, these keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "GRAPHMEM_"))}
    env |= {
        "NEO4J_URI": settings.neo4j_uri,
        "NEO4J_DATABASE": settings.neo4j_database,
        "GRAPHMEM_HOME": str(settings.home),
        "GRAPHMEM_API_KEYS": api_keys,
        "PYTHONPATH": str(root),
    }
    if settings.neo4j_password is not None:
        env |= {"NEO4J_USERNAME": settings.neo4j_username, "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value()}
    return env


class ArgvWatch:
    """Scans the command lines of this user's processes (/proc/*/cmdline) every few ms while active
    and records every process whose argv holds one of the secrets: ``ps`` shows argv to any local user
    (issue 16: the Neo4j password was an argument of the admin tool). ``scans`` counts the passes."""

    def __init__(self, *secrets: str, every: float = 0.01) -> None:
        self.secrets = [s for s in secrets if s]
        self.every = every
        self.found: list[str] = []
        self.scans = 0
        self.processes: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        uid = os.getuid()
        while not self._stop.is_set():
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    if entry.stat().st_uid != uid:
                        continue
                    argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:  # gone meanwhile
                    continue
                self.processes.add(int(entry.name))
                for secret in self.secrets:
                    if secret in argv:
                        self.found.append(f"pid {entry.name}: {argv[:200]}")
            self.scans += 1
            time.sleep(self.every)

    def __enter__(self) -> ArgvWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


@contextlib.contextmanager
def timed() -> Iterator[list[float]]:
    """``with timed() as t: ...`` then ``t[0]`` is the elapsed seconds."""
    out: list[float] = []
    start = time.perf_counter()
    try:
        yield out
    finally:
        out.append(time.perf_counter() - start)
