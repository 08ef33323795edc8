"""Retrieval statistics (A-MEM's retrieval_count / last_accessed), written in batches.

One write per search cost as much CPU as the search itself, so counts are collected per scope and
written at most every ``TOUCH_DELAY`` seconds by one background task; ``flush`` writes them now.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Iterable

from graphmem.models import Scope
from graphmem.ports import NoteStore

log = logging.getLogger(__name__)

TOUCH_DELAY = 0.5  # seconds between writes of retrieval statistics


class RetrievalStats:
    def __init__(self, store: NoteStore, delay: float | None = None) -> None:
        self._store = store
        self._delay = delay
        self._touched: dict[Scope, Counter[str]] = {}
        self._task: asyncio.Task[None] | None = None

    def record(self, ids: Iterable[str], scope: Scope) -> None:
        """Count one retrieval of each id; the write follows within the delay."""
        self._touched.setdefault(scope, Counter()).update(ids)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._flush_later())

    async def _flush_later(self) -> None:
        await asyncio.sleep(TOUCH_DELAY if self._delay is None else self._delay)
        await self.flush()

    async def flush(self) -> None:
        """Write the statistics collected since the last write."""
        pending, self._touched = self._touched, {}
        for scope, counts in pending.items():
            try:
                await self._store.touch(counts, scope)
            except Exception as exc:  # access statistics must never fail a read
                log.warning("could not record retrieval of %d notes: %s", len(counts), exc)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await self.flush()
