"""Hand memory back to the OS after big answers.

A big answer (a search of a hundred 40 KB notes and their links) allocates tens of MB of short-lived
strings; CPython frees them, but glibc keeps the freed pages for reuse, so a server that served a
burst of them stayed 300 MB bigger for good (issue 16). This ASGI middleware counts the bytes the
app sends and, once a few MB went out and no request is in flight, calls glibc's ``malloc_trim``
(in a worker thread: it runs without the GIL) to return the free pages. Elsewhere (no glibc) it
does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


class ReleaseMemory:
    """ASGI middleware: after ``threshold`` bytes of answers, once idle for ``delay`` s, trim the heap."""

    def __init__(self, app: ASGIApp, threshold: int = 4 * 1_048_576, delay: float = 1.0) -> None:
        self.app = app
        self.threshold = threshold
        self.delay = delay
        self.in_flight = 0
        self.since_trim = 0
        self.trims = 0
        self._trim = _malloc_trim()
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Future[int] | None = None  # referenced until done (asyncio keeps weak ones)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._trim is None:
            await self.app(scope, receive, send)
            return
        sent = 0

        async def counting_send(message: Message) -> None:
            nonlocal sent
            if message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        self.in_flight += 1
        try:
            await self.app(scope, receive, counting_send)
        finally:
            self.in_flight -= 1
            self.since_trim += sent
            if self.since_trim >= self.threshold and self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(self.delay, self._when_idle)

    def _when_idle(self) -> None:
        if self.in_flight:  # still serving: look again later
            self._timer = asyncio.get_running_loop().call_later(self.delay, self._when_idle)
            return
        self._timer = None
        self.since_trim = 0
        self.trims += 1
        self._task = asyncio.ensure_future(asyncio.to_thread(self._trim, 0))  # type: ignore[arg-type]
        self._task.add_done_callback(_report)


def _report(task: asyncio.Future[int]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.debug("malloc_trim failed: %s", task.exception())
