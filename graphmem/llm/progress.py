"""A timeout for the local LLM server that follows the server's progress instead of the clock.

On a busy machine one local call can take longer than any fixed timeout while the server works
normally; giving up then and re-sending it only adds work to a queue that is already too long.
``ProgressTimeoutTransport`` is an httpx transport for the chat model's async client. While a
chat completion is outstanding it polls the server's ``/metrics`` (llama-server with
``--metrics``) and gives up only when ``llamacpp:n_decode_total`` (one step per prompt batch or
generated token, of any request) has not moved for ``stall_timeout`` seconds, or after
``max_wait`` in all. A call queued behind other requests therefore waits as long as the queue
moves.

Giving up cancels the request: the transport closes the connection, and llama-server cancels a
task whose client has gone (it polls the connection while the task runs), so the retry that
follows (``graphmem.llm.calls``) never runs next to the abandoned call. The same happens when the
caller's own task is cancelled.

Servers without ``/metrics`` (the llama-cpp-python fallback) get a plain ``stall_timeout`` for the
whole call, as before.

The poll task lives on the event loop of the calls; ``release`` (what the service's ``close()`` calls,
through ``release_chat_model``) cancels and awaits it and closes the pooled connections, so nothing
is left for the interpreter's exit to destroy (issue 29).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from typing import Any

import httpx

log = logging.getLogger(__name__)

PROGRESS_METRIC = "llamacpp:n_decode_total"
_METRIC_LINE = re.compile(r"^llamacpp:n_decode_total(?:\{[^}]*\})?\s+([0-9.eE+-]+)\s*$", re.MULTILINE)


def decode_steps(metrics_text: str) -> float | None:
    """``llamacpp:n_decode_total`` from a Prometheus text page, or None if absent."""
    match = _METRIC_LINE.search(metrics_text)
    return float(match.group(1)) if match else None


class ProgressTimeoutTransport(httpx.AsyncBaseTransport):
    """Times out chat completions on lack of server progress, not on elapsed time.

    One poller per transport (so per chat model) reads ``/metrics`` every ``poll_interval`` seconds
    while calls are in flight, however many there are. That matters to cancellation: llama-server
    looks at a waiting request's connection only after a second in which no result at all came
    back to any request (``server_response::recv_with_timeout`` restarts its wait on every one,
    and every ``/metrics`` page is one), so one poller per call, with several calls in flight,
    could keep it from ever noticing an abandoned call.

    Args:
        server_root: ``http://host:port`` of the llama.cpp server (``/metrics`` lives there).
        stall_timeout: seconds without a decode step before a call is abandoned.
        max_wait: seconds after which a call is abandoned even while the server progresses.
        poll_interval: seconds between two ``/metrics`` polls.
        inner: the transport that sends requests (a fresh ``httpx.AsyncHTTPTransport`` by default).
    """

    def __init__(
        self,
        server_root: str,
        *,
        stall_timeout: float,
        max_wait: float,
        poll_interval: float = 5.0,
        inner: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.metrics_url = server_root.rstrip("/") + "/metrics"
        self.stall_timeout = stall_timeout
        self.max_wait = max(max_wait, stall_timeout)
        self.poll_interval = poll_interval
        self._inner = inner or httpx.AsyncHTTPTransport()
        self._has_metrics: bool | None = None  # None: not probed yet
        self._steps: float | None = None  # the decode counter at its last change
        self._changed_at = 0.0  # monotonic time of that change
        self._in_flight = 0
        self._poller: asyncio.Task[None] | None = None
        self.abandoned = 0  # calls given up (and cancelled) so far
        self.polls = 0  # /metrics pages read so far

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST" or not request.url.path.endswith("/completions") or _is_stream(request):
            return await self._inner.handle_async_request(request)
        # The client's own read timeout would cut a call that is merely slow: the watch below decides.
        timeout = dict(request.extensions.get("timeout") or {})
        timeout["read"] = self.max_wait
        request.extensions = {**request.extensions, "timeout": timeout}
        call = asyncio.ensure_future(self._send(request))
        self._in_flight += 1
        try:
            self._ensure_poller()
            return await self._watch(call, request)
        finally:
            self._in_flight -= 1
            if not call.done():
                call.cancel()  # closes the connection: llama-server then cancels the task
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await call

    async def aclose(self) -> None:
        await self._stop_poller()
        await self._inner.aclose()

    async def release(self) -> None:
        """Leave nothing of this transport on the running event loop: stop the ``/metrics`` poll
        task (unless calls are still in flight) and close the pooled connections. The transport
        stays usable (a later call, on any loop, opens new ones): a chat model handed to a
        service outlives the service's ``close()``."""
        if self._in_flight == 0:
            await self._stop_poller()
            await self._inner.aclose()  # httpx pools reopen connections on demand

    async def _stop_poller(self) -> None:
        poller, self._poller = self._poller, None
        if poller is None or poller.done():
            return
        try:
            same_loop = poller.get_loop() is asyncio.get_running_loop()
            poller.cancel()
        except RuntimeError:  # its loop is closed: nothing can run it any more
            return
        if same_loop:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await poller

    async def _send(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        try:
            body = await response.aread()  # the whole answer arrives inside the watch
        finally:
            await response.aclose()
        return httpx.Response(
            response.status_code, headers=response.headers, content=body, extensions=response.extensions
        )

    async def _watch(self, call: asyncio.Future[httpx.Response], request: httpx.Request) -> httpx.Response:
        started = time.monotonic()
        tick = min(1.0, self.poll_interval, self.stall_timeout / 4)
        while True:
            done, _ = await asyncio.wait({call}, timeout=tick)
            if done:
                return call.result()
            now = time.monotonic()
            if self._has_metrics:
                # progress made before this call was sent says nothing about the server now
                quiet = now - max(self._changed_at, started)
                why = f"no progress for {quiet:.0f} s"
            else:
                quiet = now - started  # no /metrics (yet): a plain timeout
                why = f"no answer in {quiet:.0f} s"
            if quiet > self.stall_timeout or now - started > self.max_wait:
                self.abandoned += 1
                log.warning("local LLM call abandoned and cancelled: %s (the caller may retry it)", why)
                raise httpx.ReadTimeout(f"local LLM server: {why}", request=request)

    def _ensure_poller(self) -> None:
        if self._has_metrics is False:
            return
        loop = asyncio.get_running_loop()
        if self._poller is None or self._poller.done() or self._poller.get_loop() is not loop:
            self._poller = loop.create_task(self._poll())

    async def _poll(self) -> None:
        """Read the decode counter while calls are in flight; stop for good without /metrics."""
        async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(), trust_env=False) as probe:
            while self._in_flight > 0 and self._has_metrics is not False:
                steps = await self._progress(probe)
                if steps is not None and steps != self._steps:
                    self._steps, self._changed_at = steps, time.monotonic()
                await asyncio.sleep(self.poll_interval)

    async def _progress(self, probe: httpx.AsyncClient) -> float | None:
        """The server's decode-step counter; None when unknown. Disables polling without /metrics."""
        try:
            response = await probe.get(self.metrics_url, timeout=max(self.stall_timeout, 1.0))
        except httpx.HTTPError:
            return None  # busy or gone: no progress seen; the stall clock keeps running
        self.polls += 1
        if response.status_code in (404, 405, 501) or (
            response.status_code == 200 and decode_steps(response.text) is None
        ):
            self._has_metrics = False  # not llama-server with --metrics: plain timeout from now on
            return None
        if response.status_code != 200:
            return None
        self._has_metrics = True
        return decode_steps(response.text)


def _is_stream(request: httpx.Request) -> bool:
    try:
        body: Any = json.loads(request.content or b"{}")
    except (ValueError, httpx.RequestNotRead):
        return False
    return isinstance(body, dict) and bool(body.get("stream"))


class LocalAsyncClient(httpx.AsyncClient):
    """The async HTTP client of a local chat model; ``progress`` is its transport."""

    def __init__(self, transport: ProgressTimeoutTransport, timeout: float) -> None:
        super().__init__(transport=transport, trust_env=False, timeout=httpx.Timeout(timeout))
        self.progress = transport


def local_async_client(server_root: str, *, stall_timeout: float, max_wait: float) -> LocalAsyncClient:
    """The async HTTP client for a local llama.cpp server: progress-following timeouts, no proxy."""
    transport = ProgressTimeoutTransport(server_root, stall_timeout=stall_timeout, max_wait=max_wait)
    return LocalAsyncClient(transport, stall_timeout)


async def release_chat_model(model: object, *, close: bool = False) -> None:
    """Stop what a chat model's async HTTP client runs on the current event loop (the local
    model's ``/metrics`` poll task, its pooled connections); ``close``: and close that client for
    good (for a model its owner is done with). Other models' clients are shared by langchain-openai
    across models and left alone."""
    client = getattr(model, "http_async_client", None)
    if not isinstance(client, LocalAsyncClient):
        return
    if close:
        await client.aclose()  # closes the transport: the poller too
    else:
        await client.progress.release()
