"""Run service calls from LangChain / LangGraph objects, blocking or async, on the right event loop.

The async Neo4j driver belongs to the event loop it was created on. So:

* with an ``AsyncMemoryService`` the async methods (``ainvoke``, ``aget``, ...) await it directly, on
  the caller's loop (the one the service was created on); blocking methods refuse with a clear error,
  because blocking on a coroutine of a loop we do not own would deadlock or cross loops;
* with a ``MemoryService`` (the blocking facade) both work: blocking calls go through its private
  loop thread, async calls are submitted to that loop and awaited from the caller's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from graphmem.service.memory import AsyncMemoryService
from graphmem.service.sync import MemoryService

T = TypeVar("T")
Work = Callable[[AsyncMemoryService], Coroutine[Any, Any, T]]

MemoryLike = AsyncMemoryService | MemoryService


class ServiceBridge:
    """Wraps either service; `run` blocks, `arun` awaits. Both take `lambda svc: svc.method(...)`."""

    def __init__(self, service: MemoryLike) -> None:
        if isinstance(service, MemoryService):
            self._sync: MemoryService | None = service
            self.aio: AsyncMemoryService = service.aio
        elif isinstance(service, AsyncMemoryService):
            self._sync = None
            self.aio = service
        else:
            raise TypeError(f"expected graphmem AsyncMemoryService or MemoryService, got {type(service).__name__}")

    @property
    def service(self) -> MemoryLike:
        return self._sync if self._sync is not None else self.aio

    def _loop(self) -> asyncio.AbstractEventLoop:
        assert self._sync is not None
        # MemoryService keeps its loop in a daemon thread; the facade exposes no public handle yet.
        loop: asyncio.AbstractEventLoop = self._sync.loop
        return loop

    def run(self, work: Work[T]) -> T:
        """Block until `work(service)` is done."""
        if self._sync is None:
            raise RuntimeError(
                "this graphmem object wraps an AsyncMemoryService, which only supports the async API "
                "(ainvoke / aget / aput / asearch ...); for blocking calls pass a graphmem.MemoryService"
            )
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(work(self.aio), self._loop())
        return future.result()

    async def arun(self, work: Work[T]) -> T:
        """Await `work(service)` from the caller's event loop."""
        if self._sync is None:
            return await work(self.aio)
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(work(self.aio), self._loop())
        return await asyncio.wrap_future(future)


def as_bridge(service: MemoryLike | ServiceBridge | Any) -> ServiceBridge:
    return service if isinstance(service, ServiceBridge) else ServiceBridge(service)
