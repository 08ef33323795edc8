"""Neo4j going away: mid-ingest, mid-search; nothing acknowledged is lost, the service recovers.

CI form: the shared server stays up; a TCP proxy in front of it drops every connection (what a
client sees when the server dies) and refuses new ones, then comes back. Full form: a throwaway
LocalNeo4j (own ports and data, the session's jars) whose java process is SIGKILLed mid-ingest and
restarted several times, then stopped during searches; the database must recover every
acknowledged note, once, with the schema intact.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest
from pydantic import SecretStr

from graphmem.config import Settings
from graphmem.errors import StoreUnavailableError
from graphmem.local.neo4j_server import LocalNeo4j
from graphmem.local.process import tail
from graphmem.models import Scope
from graphmem.service.memory import AsyncMemoryService, NoteInput
from tests.fakes import ScriptedChatModel, amem_responder
from tests.reliability.support import OUT, ArgvWatch, ClusterEmbedder, TcpProxy, record

pytestmark = pytest.mark.asyncio(loop_scope="session")


@dataclass
class Ingest:
    """Bulk ingest with client-given ids, resumed with the same ids after every failure."""

    svc: AsyncMemoryService
    scope: Scope
    total: int
    chunk: int
    up: asyncio.Event
    acked: list[str] = field(default_factory=list)
    store_errors: int = 0
    unexpected: list[str] = field(default_factory=list)
    chunk_acked: asyncio.Event = field(default_factory=asyncio.Event)

    def items(self, start: int) -> list[NoteInput]:
        return [
            NoteInput(content=f"Bulk note {j} about topic-{j % 3}: the shipment {j} arrived.", note_id=f"bulk-{j}")
            for j in range(start, min(start + self.chunk, self.total))
        ]

    async def run(self) -> None:
        start, failures = 0, 0
        while start < self.total:
            if failures >= 50:  # a chunk that never gets through: report, do not loop
                self.unexpected.append(f"chunk at {start} failed {failures} times in a row")
                return
            items = self.items(start)
            try:
                ids = await self.svc.add_many(items, self.scope)
            except StoreUnavailableError:
                self.store_errors += 1
                failures += 1
                await asyncio.wait_for(self.up.wait(), 600)  # resume: the same chunk, the same ids
                continue
            except Exception as exc:
                self.unexpected.append(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")
                failures += 1
                await asyncio.wait_for(self.up.wait(), 600)
                continue
            assert ids == [i.note_id for i in items]
            self.acked.extend(ids)
            self.chunk_acked.set()
            start += self.chunk
            failures = 0

    async def next_ack(self, task: asyncio.Task[None]) -> bool:
        """Wait for the next acknowledged chunk; False when the ingest is over (never waits forever)."""
        self.chunk_acked.clear()
        waiter = asyncio.ensure_future(self.chunk_acked.wait())
        await asyncio.wait({waiter, task}, timeout=300, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        return self.chunk_acked.is_set() and not task.done()


async def search_until_error(
    svc: AsyncMemoryService, scope: Scope, started: asyncio.Event
) -> tuple[BaseException | None, float]:
    """Search in a loop until a search fails; return the error and when it came (perf_counter)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            await svc.search("what arrived in the shipment topic-1", scope, k=5, mode="hybrid")
        except BaseException as exc:
            return exc, time.perf_counter()
        started.set()
        await asyncio.sleep(0)
    return None, time.perf_counter()


async def start_searching(svc: AsyncMemoryService, scope: Scope) -> asyncio.Task[tuple[BaseException | None, float]]:
    """A search loop that has completed at least one search (so the outage lands during searches)."""
    started = asyncio.Event()
    searching = asyncio.create_task(search_until_error(svc, scope, started))
    waiter = asyncio.ensure_future(started.wait())
    await asyncio.wait({waiter, searching}, timeout=120, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    assert started.is_set(), (
        f"no search succeeded before the outage: {searching.result() if searching.done() else 'timeout'}"
    )
    return searching


def check_search_error(exc: BaseException | None, uri: str) -> None:
    """The caller sees one clear graphmem error naming the server and the setting, not a driver exception."""
    assert isinstance(exc, StoreUnavailableError), f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
    assert uri in str(exc) and "NEO4J_URI" in str(exc), str(exc)


# --- CI form: connections cut by a proxy -------------------------------------------------------


@pytest.fixture
def proxy(settings: Settings) -> Iterator[TcpProxy]:
    parts = urlsplit(settings.neo4j_uri)
    p = TcpProxy((parts.hostname or "127.0.0.1", parts.port or 7687))
    yield p
    p.close()


async def test_connection_loss_mid_ingest_and_mid_search(
    proxy: TcpProxy, user_scope: Scope, settings: Settings, graph: Any
) -> None:
    total, chunk, cuts, drops = 1200, 40, 3, 6
    svc = await AsyncMemoryService.create(
        settings.model_copy(update={"neo4j_uri": proxy.uri}),
        chat_model=ScriptedChatModel(amem_responder()),
        embedder=ClusterEmbedder(),
    )
    try:
        up = asyncio.Event()
        up.set()
        ingest = Ingest(svc, user_scope, total, chunk, up)
        task = asyncio.create_task(ingest.run())
        rng = random.Random(7)
        for _ in range(cuts):  # cut at random moments, mostly while a chunk's transaction runs
            if not await ingest.next_ack(task):
                break
            await asyncio.sleep(rng.uniform(0.0, 0.15))
            up.clear()
            proxy.cut()
            await asyncio.sleep(rng.uniform(0.2, 1.0))
            proxy.resume()
            up.set()
        for n in range(drops):  # lose a reply mid-chunk; every other time the reply to a COMMIT
            if not await ingest.next_ack(task):
                break
            if n % 2:
                proxy.drop_next_commit_reply()
            else:
                await asyncio.sleep(rng.uniform(0.0, 0.1))
                proxy.drop_next_reply()
        await asyncio.wait_for(task, timeout=300)
        proxy.clear_drops()

        assert ingest.unexpected == []
        assert len(ingest.acked) == total
        rows = graph.q(
            "MATCH (n:Note {user_id: $u}) RETURN count(n) AS n, count(DISTINCT n.id) AS ids, "
            "count(DISTINCT n.content) AS contents",
            u=user_scope.user_id,
        )[0]
        assert rows == {"n": total, "ids": total, "contents": total}

        # A long outage during searches: a clear StoreUnavailableError (after the driver's retry budget),
        # then the SAME service object works once the server is back.
        searching = await start_searching(svc, user_scope)
        cut_at = time.perf_counter()
        proxy.cut()
        exc, failed_at = await asyncio.wait_for(searching, 120)
        check_search_error(exc, proxy.uri)
        proxy.resume()
        hits = await svc.search("what arrived in the shipment topic-1", user_scope, k=5)
        assert len(hits) >= 5 and await svc.count(user_scope) == total
        added = await svc.add(
            "After the outage: the last shipment arrived topic-2.", user_scope, note_id="after-outage"
        )
        assert added.created
    finally:
        await svc.close()
    record(
        "crash-proxy-ci",
        {
            "notes": total,
            "chunk": chunk,
            "cuts": cuts,
            "dropped_replies": proxy.dropped_replies,
            "store_errors_seen": ingest.store_errors,
            "search_error_after_s": round(failed_at - cut_at, 1),
            "lost": 0,
            "duplicates": 0,
            "table": {
                "scenario": "connection loss (proxy)",
                "injected": f"{cuts} cuts of all Bolt connections and {proxy.dropped_replies} lost server replies "
                "mid-ingest; a 15 s+ cut during searches",
                "operations": f"{total} notes in chunks of {chunk} (resumed with the same ids)",
                "lost": "0 notes, 0 duplicates",
                "notes": f"{ingest.store_errors} chunks retried by the caller; search failed with "
                f"StoreUnavailableError {failed_at - cut_at:.1f} s after the cut; same service worked after",
            },
        },
    )


# --- full form: a throwaway server, SIGKILLed and restarted ------------------------------------

CRASH_PASSWORD = "reliability-crash-pw"


def _free_port() -> int:
    """A port free now. Not a fixed one: CI runs and other checkouts start their own servers
    (e.g. on 17687) on the same machine."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def crash_server(settings: Settings) -> Iterator[LocalNeo4j]:
    """A password-protected Neo4j on free ports, fresh data, the session's jars."""
    local = LocalNeo4j(settings)
    if shutil.which("java") is None or not local.dist.complete():
        pytest.skip("java and the fetched Neo4j jars are needed for a second server")
    bolt, http = _free_port(), _free_port()
    while http == bolt:
        http = _free_port()
    crash_settings = settings.model_copy(
        update={
            "neo4j_uri": f"bolt://127.0.0.1:{bolt}",
            "neo4j_http_port": http,
            "neo4j_username": "neo4j",
            "neo4j_password": SecretStr(CRASH_PASSWORD),
            "neo4j_heap": "512m",
            "neo4j_pagecache": "128m",
        }
    )
    server = LocalNeo4j(crash_settings, instance="reliability-crash")
    server.stop()  # a leftover of an interrupted run
    shutil.rmtree(server.dir, ignore_errors=True)
    with ArgvWatch(CRASH_PASSWORD) as argv:  # the admin tool setting the password, then the JVM
        server.start(timeout=300)
    assert argv.found == [], argv.found  # the password is on no command line (issue 16)
    try:
        yield server
    finally:
        server.stop()
        keep = OUT / "crash-server-logs"  # the server's own account of the crashes and recoveries
        shutil.rmtree(keep, ignore_errors=True)
        keep.mkdir(parents=True, exist_ok=True)
        for log in (server.console_log, server.dir / "logs" / "debug.log", server.dir / "logs" / "neo4j.log"):
            if log.exists():
                shutil.copy(log, keep / log.name)
        shutil.rmtree(server.dir, ignore_errors=True)


def sigkill(server: LocalNeo4j) -> int:
    """SIGKILL this instance's java process (by its own pid file), as a crash would."""
    pid = server.pid()
    assert pid is not None, f"the server is not running before the kill:\n{tail(server.console_log, 30)}"
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while server.pid() is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    return pid


def schema_state(server: LocalNeo4j) -> dict[str, Any]:
    from neo4j import GraphDatabase

    s = server.settings
    with GraphDatabase.driver(s.neo4j_uri, auth=s.neo4j_auth) as drv:
        cons, _, _ = drv.execute_query("SHOW CONSTRAINTS YIELD name RETURN collect(name) AS names")
        idx, _, _ = drv.execute_query("SHOW INDEXES YIELD name, state RETURN name, state")
        count, _, _ = drv.execute_query("MATCH (n:Note) RETURN count(n) AS n, count(DISTINCT n.id) AS ids")
    return {
        "constraints": set(cons[0]["names"]),
        "indexes": {r["name"]: r["state"] for r in idx},
        "notes": count[0]["n"],
        "ids": count[0]["ids"],
    }


async def _restart(server: LocalNeo4j, up: asyncio.Event, restarts: list[float]) -> None:
    t0 = time.perf_counter()
    await asyncio.to_thread(server.start, 300.0)
    restarts.append(time.perf_counter() - t0)
    up.set()


@pytest.mark.slow
async def test_sigkill_mid_ingest_then_stop_mid_search(crash_server: LocalNeo4j) -> None:
    total, chunk, kills = 20_000, 250, 3
    scope = Scope(user_id="crash-test")
    svc = await AsyncMemoryService.create(
        crash_server.settings, chat_model=ScriptedChatModel(amem_responder()), embedder=ClusterEmbedder()
    )
    restarts: list[float] = []
    search_errors: list[float] = []
    try:
        up = asyncio.Event()
        up.set()
        ingest = Ingest(svc, scope, total, chunk, up)
        task = asyncio.create_task(ingest.run())
        rng = random.Random(11)
        killed_at: list[int] = []
        for k in range(kills):
            while len(ingest.acked) < (k + 1) * total // (kills + 2):
                assert await ingest.next_ack(task), ingest.unexpected[-3:]
            await asyncio.sleep(rng.uniform(0.0, 0.3))  # land inside a chunk's transaction
            up.clear()
            killed_at.append(len(ingest.acked))
            sigkill(crash_server)
            await _restart(crash_server, up, restarts)
        await asyncio.wait_for(task, timeout=1800)
        assert ingest.unexpected == []
        assert len(ingest.acked) == total

        state = schema_state(crash_server)
        assert state["notes"] == total and state["ids"] == total  # zero lost, zero duplicates
        assert {"note_scope_id_unique", "note_version_uid_unique"} <= state["constraints"]
        assert {"note_embedding", "note_text", "note_scope"} <= set(state["indexes"])
        assert set(state["indexes"].values()) == {"ONLINE"}, state["indexes"]

        # Graceful stop during searches, twice: a clear error each time, the same service afterwards.
        for _ in range(2):
            searching = await start_searching(svc, scope)
            t0 = time.perf_counter()
            up.clear()
            await asyncio.to_thread(crash_server.stop)
            exc, failed_at = await asyncio.wait_for(searching, 120)
            check_search_error(exc, crash_server.settings.neo4j_uri)
            search_errors.append(failed_at - t0)
            await _restart(crash_server, up, restarts)
            hits = await svc.search("what arrived in the shipment topic-1", scope, k=5)
            assert len(hits) == 5 and await svc.count(scope) == total
    finally:
        await svc.close()
    record(
        "crash-sigkill-full",
        {
            "notes": total,
            "chunk": chunk,
            "kills_at_acked": killed_at,
            "restart_seconds": [round(r, 1) for r in restarts],
            "store_errors_seen": ingest.store_errors,
            "search_error_after_stop_s": [round(s, 1) for s in search_errors],
            "lost": 0,
            "duplicates": 0,
            "indexes": state["indexes"],
            "table": {
                "scenario": "crash and restart (SIGKILL)",
                "injected": f"{kills} x SIGKILL of the Neo4j JVM mid-ingest, restart; 2 x stop during searches",
                "operations": f"{total} notes in chunks of {chunk}, resumed with the same ids",
                "lost": "0 notes, 0 duplicates; constraints and indexes ONLINE",
                "notes": f"restarts {', '.join(f'{r:.0f}' for r in restarts)} s; search failed with "
                f"StoreUnavailableError {max(search_errors):.1f} s after stop at worst; same service worked after",
            },
        },
    )


@pytest.mark.slow
async def test_secrets_absent_from_logs_on_auth_failure(
    crash_server: LocalNeo4j, caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong NEO4J_PASSWORD: the error names the setting; neither password appears in any log."""
    import logging

    caplog.set_level(logging.DEBUG)
    wrong = "wrong-secret-9f8e7d6c5b"
    bad = crash_server.settings.model_copy(update={"neo4j_password": SecretStr(wrong)})
    with pytest.raises(StoreUnavailableError) as err:
        await AsyncMemoryService.create(bad, chat_model=ScriptedChatModel(amem_responder()), embedder=ClusterEmbedder())
    assert "NEO4J_PASSWORD" in str(err.value)
    text = caplog.text + str(err.value) + repr(err.value)
    assert wrong not in text and CRASH_PASSWORD not in text
    # the same with the right password and debug logging of the driver: the handshake is logged, masked
    ok = await AsyncMemoryService.create(
        crash_server.settings, chat_model=ScriptedChatModel(amem_responder()), embedder=ClusterEmbedder()
    )
    await ok.count(Scope(user_id="crash-test"))
    await ok.close()
    assert CRASH_PASSWORD not in caplog.text
