"""MemoryService: the blocking facade over AsyncMemoryService.

One private event loop runs in a daemon thread; every method submits the async twin's coroutine to
it and waits. No sync copy of the algorithm exists, and tests/unit/test_sync_facade.py checks that
every public coroutine of the async service has a method here with the same parameters.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings

from graphmem.config import Settings
from graphmem.models import (
    LIMITS,
    AddResult,
    AskResult,
    IngestItem,
    IngestReport,
    Link,
    LinkType,
    Note,
    NoteInput,
    NoteVersion,
    RollbackResult,
    Scope,
    SearchFilters,
    SearchHit,
    SearchMode,
    UndoResult,
    Usage,
    VersionDiff,
)
from graphmem.models.timeline import ConsolidationResult
from graphmem.service.answer_context import AskContext
from graphmem.service.chat_model import ChatModelSource
from graphmem.service.linking import LinkDecider
from graphmem.service.memory import AsyncMemoryService, Progress

T = TypeVar("T")


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="graphmem-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        """Cancel and wait for the tasks still on the loop (as ``asyncio.run`` does at its end), then
        stop and close it: nothing is left pending for the interpreter's exit to destroy."""
        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                self.run(_finish_tasks())
                self.run(self.loop.shutdown_asyncgens())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
        self.loop.close()


async def _finish_tasks(timeout: float = 5.0) -> None:
    me = asyncio.current_task()
    left = [task for task in asyncio.all_tasks() if task is not me]
    for task in left:
        task.cancel()
    if left:
        await asyncio.wait(left, timeout=timeout)
    for task in left:  # their errors are theirs to report; retrieved so that none is logged at exit
        if task.done() and not task.cancelled():
            task.exception()


class MemoryService:
    """Blocking API with the same methods as AsyncMemoryService. Use as a context manager."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        chat_model: ChatModelSource = None,
        embedder: Embeddings | None = None,
        bootstrap: bool = True,
        link_decider: LinkDecider | None = None,
        link_model: ChatModelSource = None,
        enrich_model: ChatModelSource = None,
        answer_model: ChatModelSource = None,
    ) -> None:
        self._loop = _LoopThread()
        try:
            self.aio = self._loop.run(
                AsyncMemoryService.create(
                    settings,
                    chat_model=chat_model,
                    embedder=embedder,
                    bootstrap=bootstrap,
                    link_decider=link_decider,
                    link_model=link_model,
                    enrich_model=enrich_model,
                    answer_model=answer_model,
                )
            )
        except BaseException:
            self._loop.stop()
            raise

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The private loop the async service lives on (for integrations that submit coroutines)."""
        return self._loop.loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of the async service on its loop and wait for the result."""
        return self._loop.run(coro)

    @property
    def settings(self) -> Settings:
        return self.aio.settings

    def close(self) -> None:
        if self._loop.loop.is_closed():
            return
        self._loop.run(self.aio.close())
        self._loop.stop()

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(
        self,
        content: str,
        scope: Scope,
        *,
        note_id: str | None = None,
        event_time: datetime | str | None = None,
        category: str | None = None,
        source_id: str | None = None,
        metadata: dict[str, str] | None = None,
        dedupe_content: bool = False,
        enrich: bool | None = None,
        evolve: bool | None = None,
        follows: str | None = None,
    ) -> AddResult:
        return self._loop.run(
            self.aio.add(
                content,
                scope,
                note_id=note_id,
                event_time=event_time,
                category=category,
                source_id=source_id,
                metadata=metadata,
                dedupe_content=dedupe_content,
                enrich=enrich,
                evolve=evolve,
                follows=follows,
            )
        )

    def add_many(
        self,
        items: Sequence[NoteInput],
        scope: Scope,
        *,
        batch_size: int = 1000,
        progress: Progress | None = None,
        usage: Usage | None = None,
    ) -> list[str]:
        return self._loop.run(self.aio.add_many(items, scope, batch_size=batch_size, progress=progress, usage=usage))

    def ingest(
        self,
        items: Sequence[NoteInput],
        scope: Scope,
        *,
        concurrency: int | None = None,
        enrich: bool | None = None,
        on_item: Callable[[IngestItem], None] | None = None,
        on_judged: Callable[[int, int], None] | None = None,
    ) -> IngestReport:
        return self._loop.run(
            self.aio.ingest(items, scope, concurrency=concurrency, enrich=enrich, on_item=on_item, on_judged=on_judged)
        )

    def ingest_scopes(
        self,
        batches: Sequence[tuple[Scope, Sequence[NoteInput]]],
        *,
        concurrency: int | None = None,
        enrich: bool | None = None,
        on_item: Callable[[IngestItem], None] | None = None,
        on_judged: Callable[[Scope, int, int], None] | None = None,
    ) -> list[IngestReport]:
        return self._loop.run(
            self.aio.ingest_scopes(
                batches, concurrency=concurrency, enrich=enrich, on_item=on_item, on_judged=on_judged
            )
        )

    def update(self, note_id: str, scope: Scope, content: str) -> AddResult:
        return self._loop.run(self.aio.update(note_id, scope, content))

    def repair(self, scope: Scope, *, limit: int = 100) -> int:
        return self._loop.run(self.aio.repair(scope, limit=limit))

    def rejudge_updates(self, scope: Scope, *, concurrency: int | None = None) -> IngestReport:
        return self._loop.run(self.aio.rejudge_updates(scope, concurrency=concurrency))

    def delete(self, note_id: str, scope: Scope) -> bool:
        return self._loop.run(self.aio.delete(note_id, scope))

    def link(
        self,
        source_id: str,
        target_id: str,
        scope: Scope,
        type: LinkType | str = LinkType.RELATED_TO,
        reason: str = "",
        strength: float = 0.5,
    ) -> Link:
        return self._loop.run(self.aio.link(source_id, target_id, scope, type, reason, strength))

    def consolidate(self, scope: Scope, *, dry_run: bool = True) -> ConsolidationResult:
        return self._loop.run(self.aio.consolidate(scope, dry_run=dry_run))

    def import_notes(self, records: Iterable[dict[str, Any]], scope: Scope) -> int:
        return self._loop.run(self.aio.import_notes(records, scope))

    def get(self, note_id: str, scope: Scope) -> Note:
        return self._loop.run(self.aio.get(note_id, scope))

    def _list(self, scope: Scope, *, limit: int = 50, offset: int = 0) -> list[Note]:
        return self._loop.run(self.aio.list(scope, limit=limit, offset=offset))

    def count(self, scope: Scope) -> int:
        return self._loop.run(self.aio.count(scope))

    def find_by_source(self, source_ids: Sequence[str], scope: Scope) -> dict[str, str]:
        return self._loop.run(self.aio.find_by_source(source_ids, scope))

    def links(self, note_id: str, scope: Scope, *, limit: int = LIMITS.links_page_max, offset: int = 0) -> list[Link]:
        return self._loop.run(self.aio.links(note_id, scope, limit=limit, offset=offset))

    def history(
        self, note_id: str, scope: Scope, *, limit: int = LIMITS.history_page_max, offset: int = 0
    ) -> list[NoteVersion]:
        return self._loop.run(self.aio.history(note_id, scope, limit=limit, offset=offset))

    def history_diff(
        self, note_id: str, scope: Scope, *, limit: int = LIMITS.history_page_max, offset: int = 0
    ) -> list[VersionDiff]:
        return self._loop.run(self.aio.history_diff(note_id, scope, limit=limit, offset=offset))

    def rollback(self, note_id: str, scope: Scope, version: int) -> RollbackResult:
        return self._loop.run(self.aio.rollback(note_id, scope, version))

    def undo_add(
        self,
        note_id: str,
        scope: Scope,
        *,
        delete_note: bool = False,
        keep_follows: bool = False,
        dry_run: bool = False,
    ) -> UndoResult:
        return self._loop.run(
            self.aio.undo_add(note_id, scope, delete_note=delete_note, keep_follows=keep_follows, dry_run=dry_run)
        )

    def scopes(self, user_id: str | None = None) -> list[Scope]:
        return self._loop.run(self.aio.scopes(user_id))

    def export_notes(self, scope: Scope) -> list[dict[str, Any]]:
        return self._loop.run(self.aio.export_notes(scope))

    def health(self) -> dict[str, Any]:
        return self._loop.run(self.aio.health())

    def flush(self) -> None:
        self._loop.run(self.aio.flush())

    def search(
        self,
        query: str,
        scope: Scope,
        *,
        k: int | None = None,
        mode: SearchMode | str | None = None,
        filters: SearchFilters | None = None,
        usage: Usage | None = None,
        query_embedding: Sequence[float] | None = None,
        history: bool = False,
        as_of: datetime | str | None = None,
        links_per_hit: int | None = None,
    ) -> list[SearchHit]:
        return self._loop.run(
            self.aio.search(
                query,
                scope,
                k=k,
                mode=mode,
                filters=filters,
                usage=usage,
                query_embedding=query_embedding,
                history=history,
                as_of=as_of,
                links_per_hit=links_per_hit,
            )
        )

    def ask(
        self,
        question: str,
        scope: Scope,
        *,
        k: int | None = None,
        mode: SearchMode | str | None = None,
        token_budget: int | None = None,
        filters: SearchFilters | None = None,
        instructions: str | None = None,
        history: bool = False,
        as_of: datetime | str | None = None,
        show_context: bool | None = None,
    ) -> AskResult:
        return self._loop.run(
            self.aio.ask(
                question,
                scope,
                k=k,
                mode=mode,
                token_budget=token_budget,
                filters=filters,
                instructions=instructions,
                history=history,
                as_of=as_of,
                show_context=show_context,
            )
        )

    def ask_context(
        self,
        question: str,
        scope: Scope,
        *,
        k: int | None = None,
        mode: SearchMode | str | None = None,
        token_budget: int | None = None,
        filters: SearchFilters | None = None,
        history: bool = False,
        as_of: datetime | str | None = None,
        show_context: bool | None = None,
        usage: Usage | None = None,
        query_embedding: Sequence[float] | None = None,
    ) -> AskContext:
        return self._loop.run(
            self.aio.ask_context(
                question,
                scope,
                k=k,
                mode=mode,
                token_budget=token_budget,
                filters=filters,
                history=history,
                as_of=as_of,
                show_context=show_context,
                usage=usage,
                query_embedding=query_embedding,
            )
        )

    def answer(
        self, question: str, context: str, *, instructions: str | None = None, usage: Usage | None = None
    ) -> str:
        return self._loop.run(self.aio.answer(question, context, instructions=instructions, usage=usage))

    # The public name is ``list``; the method is written as ``_list`` so that ``list`` in the class
    # body stays the builtin (the annotations say ``list[Note]``, not ``builtins.list[Note]``).
    list = _list
