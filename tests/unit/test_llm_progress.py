"""The local LLM's progress-following timeout, against a loopback stand-in for llama-server.

The stand-in answers ``/metrics`` with a decode counter the test controls and holds each chat
completion until the test releases it, noticing (as llama-server does) when the client goes away.
No assertion is about elapsed time: the tests count requests, abandons and cancellations.
"""

from __future__ import annotations

import http.server
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from graphmem.llm.calls import LLMCaller
from graphmem.llm.progress import ProgressTimeoutTransport, decode_steps
from graphmem.models import Usage

pytestmark = pytest.mark.asyncio(loop_scope="session")


class Answer(BaseModel):
    value: str


def _completion(content: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
    }


class SlowServer:
    """A llama-server stand-in. ``finish(n)`` decides when request n (1-based) is answered."""

    def __init__(self, *, metrics: bool = True) -> None:
        self.metrics = metrics
        self.decode_steps = 0
        self.progressing = True  # every /metrics poll sees one more decode step
        self.metric_polls = 0
        self.poll_times: list[float] = []
        self.requests = 0
        self.cancelled: list[int] = []  # requests whose client went away before the answer
        self.answered: list[int] = []
        self.max_active = 0
        self.finish: Callable[[int], bool] = lambda n: False
        self._active: dict[int, socket.socket] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path != "/metrics" or not server.metrics:
                    self.send_error(404)
                    return
                with server._lock:
                    server.metric_polls += 1
                    server.poll_times.append(time.monotonic())
                    if server.progressing:
                        server.decode_steps += 1
                    body = f"# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total {server.decode_steps}\n"
                self._send(200, body.encode(), "text/plain")

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with server._lock:
                    server._reap()  # as llama-server does: a closed connection cancels its task
                    server.requests += 1
                    number = server.requests
                    server._active[number] = self.connection
                    server.max_active = max(server.max_active, len(server._active))
                try:
                    while True:
                        if server.finish(number):
                            server.answered.append(number)
                            self._send(200, json.dumps(_completion('{"value": "ok"}')).encode(), "application/json")
                            return
                        if _closed(self.connection):
                            server.cancelled.append(number)
                            return
                        time.sleep(0.01)
                finally:
                    with server._lock:
                        server._active.pop(number, None)

            def _send(self, code: int, body: bytes, kind: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.root = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _reap(self) -> None:
        for number, conn in list(self._active.items()):
            if _closed(conn):
                self.cancelled.append(number)
                del self._active[number]

    def wait_cancelled(self, number: int, deadline: float = 30.0) -> bool:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if number in self.cancelled:
                return True
            time.sleep(0.02)
        return False

    def __enter__(self) -> SlowServer:
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish = lambda n: True
        self._server.shutdown()
        self._server.server_close()


def _closed(conn: socket.socket) -> bool:
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def chat_for(
    server: SlowServer, *, stall: float, max_wait: float = 600.0, interval: float = 0.05
) -> tuple[ChatOpenAI, ProgressTimeoutTransport]:
    import httpx

    transport = ProgressTimeoutTransport(server.root, stall_timeout=stall, max_wait=max_wait, poll_interval=interval)
    chat = ChatOpenAI(
        base_url=server.root + "/v1",
        api_key="x",
        model="stub",
        max_retries=0,
        timeout=stall,  # what the caller would otherwise wait in all
        http_async_client=httpx.AsyncClient(transport=transport),
    )
    return chat, transport


@pytest.fixture
def server() -> Iterator[SlowServer]:
    with SlowServer() as s:
        yield s


async def test_decode_steps_parsing() -> None:
    page = "# HELP llamacpp:n_decode_total x\n# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total 1234\n"
    assert decode_steps(page) == 1234
    assert decode_steps("llamacpp:n_decode_total_other 5\n") is None
    assert decode_steps("") is None


async def test_a_slow_call_that_progresses_is_not_abandoned(server: SlowServer) -> None:
    """The answer comes after many stall periods' worth of polls, while the counter moves."""
    stall = 1.0  # not less: a loaded machine can leave the poller unscheduled for a few tenths
    server.finish = lambda n: server.metric_polls >= 60  # >= 60 polls 0.05 s apart: three `stall`s
    chat, transport = chat_for(server, stall=stall)
    reply = await chat.ainvoke([HumanMessage("hi")])
    assert reply.content == '{"value": "ok"}'
    assert transport.abandoned == 0 and server.requests == 1 and server.cancelled == []


async def test_a_stalled_call_is_abandoned_and_cancelled_on_the_server(server: SlowServer) -> None:
    server.progressing = False
    chat, transport = chat_for(server, stall=0.3)
    with pytest.raises(openai.APITimeoutError):
        await chat.ainvoke([HumanMessage("hi")])
    assert transport.abandoned == 1
    assert server.wait_cancelled(1), "the server never saw the abandoned request's connection close"
    assert server.answered == []


async def test_a_retry_never_runs_next_to_the_abandoned_call(server: SlowServer) -> None:
    """LLMCaller retries a timeout; the first request is gone from the server before the second starts."""
    server.progressing = False
    server.finish = lambda n: n >= 2
    # The retry is answered at once; a stall window of 2 s keeps a loaded machine's slow loopback
    # round trip from being taken for a second stall (CI saw one at 0.3 s).
    chat, transport = chat_for(server, stall=2.0)
    caller = LLMCaller(chat, method="json_mode", max_retries=2, max_wait=0.1)
    parsed, _ = await caller.structured(Answer, [HumanMessage("hi")], Usage())
    assert parsed == Answer(value="ok")
    assert server.requests == 2 and server.answered == [2] and 1 in server.cancelled
    assert server.max_active == 1, "the retried request ran while the abandoned one was still on the server"
    assert transport.abandoned == 1


async def test_a_cancelled_caller_cancels_the_server_task(server: SlowServer) -> None:
    import asyncio

    chat, _ = chat_for(server, stall=600.0)
    call = asyncio.ensure_future(chat.ainvoke([HumanMessage("hi")]))
    while server.requests < 1:
        await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert server.wait_cancelled(1)


async def test_one_poller_serves_every_call_in_flight(server: SlowServer) -> None:
    """llama-server checks an abandoned call's connection only after a second without any result
    (each /metrics page is one): concurrent calls must not multiply the polls."""
    import asyncio

    interval = 0.2
    server.finish = lambda n: server.metric_polls >= 12
    chat, transport = chat_for(server, stall=5.0, interval=interval)
    replies = await asyncio.gather(*(chat.ainvoke([HumanMessage(f"hi {i}")]) for i in range(4)))
    assert [r.content for r in replies] == ['{"value": "ok"}'] * 4 and server.requests == 4
    gaps = [b - a for a, b in zip(server.poll_times, server.poll_times[1:], strict=False)]
    assert gaps and min(gaps) >= 0.9 * interval, "polls closer than the interval: more than one poller"
    assert transport.abandoned == 0


async def test_without_metrics_the_timeout_is_plain() -> None:
    """The llama-cpp-python fallback has no /metrics: the whole call gets `stall_timeout`."""
    with SlowServer(metrics=False) as server:
        chat, transport = chat_for(server, stall=0.3)
        with pytest.raises(openai.APITimeoutError):
            await chat.ainvoke([HumanMessage("hi")])
        assert transport.abandoned == 1 and server.wait_cancelled(1)


async def test_other_requests_pass_through(server: SlowServer) -> None:
    """Only chat completions are watched: GETs go straight to the server."""
    import httpx

    transport = ProgressTimeoutTransport(server.root, stall_timeout=0.3, max_wait=1.0)
    async with httpx.AsyncClient(transport=transport) as client:
        page = await client.get(server.root + "/metrics")
    assert decode_steps(page.text) == 1 and transport.abandoned == 0


async def test_release_stops_the_poller_and_leaves_the_model_usable(server: SlowServer) -> None:
    """What a service's close() does to a local chat model it was handed (issue 29): no poll task is
    left on the loop, and the next call (here or on another loop) polls and answers again."""
    from graphmem.llm.progress import LocalAsyncClient, release_chat_model

    server.finish = lambda n: True
    transport = ProgressTimeoutTransport(server.root, stall_timeout=5.0, max_wait=60.0, poll_interval=30.0)
    chat = ChatOpenAI(
        base_url=server.root + "/v1",
        api_key="x",
        model="stub",
        max_retries=0,
        http_async_client=LocalAsyncClient(transport, 5.0),
    )
    await chat.ainvoke([HumanMessage("hi")])
    poller = transport._poller
    assert poller is not None and not poller.done()  # asleep for 30 s: it would outlive the call
    await release_chat_model(chat)
    assert poller.done() and transport._poller is None
    await chat.ainvoke([HumanMessage("again")])  # still usable: new connections, a new poller
    assert server.requests == 2 and transport._poller is not None
    await release_chat_model(chat, close=True)  # the owner is done with it: closed for good
    assert transport._poller is None and chat.http_async_client.is_closed
