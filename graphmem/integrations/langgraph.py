"""A LangGraph long-term store (``langgraph.store.base.BaseStore``) on graphmem, behaving like
LangGraph's ``PostgresStore``: any namespace, values of any size, atomic puts, filters, semantic
search, TTL with a sweeper, namespace listing. Any ``limit`` is taken (the store is read in pages
of ``LIMITS.items_page_max`` rows), and an expired item is never returned, swept or not.

    store = GraphmemStore(svc, user_label=1)                 # ("memories", user_id, ...) -> that user's scope
    store.put(("memories", "alice"), "prefs", {"text": "likes green tea"}, ttl=60 * 24)
    store.search(("memories", "alice"), query="drinks", filter={"kind": "preference"})

Where items live: every item is stored with its whole namespace (any labels LangGraph allows) in one
graphmem scope. The scope is ``scope`` (default ``Scope("langgraph")``) with the parts named by
``user_label`` / ``agent_label`` / ``run_label`` taken from those positions of the namespace, so one
compiled graph keeps each user's items in that user's scope (the same scope REST keys, the retriever
and the middleware use). A label that is not a graphmem id (``models.ID_PATTERN``), or that starts
with ``lg:``, becomes ``lg:`` + 40 hex digits of its SHA-256. A search or listing whose prefix does
not name one scope covers every scope holding items under it, scope by scope, merged and paged.

Items are not notes (A-MEM does not rewrite a value); see ``graphmem.service.items`` for the
filter semantics and docs/interfaces.md for every difference from InMemoryStore and PostgresStore.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from graphmem.errors import InvalidInputError
from graphmem.integrations._bridge import MemoryLike, as_bridge
from graphmem.integrations._scope import scope_id
from graphmem.models import LIMITS, Scope, StoredItem
from graphmem.service.items import ItemPut, ItemService, value_json
from graphmem.service.memory import AsyncMemoryService

__all__ = ["GraphmemStore", "scope_id"]

_PARTS = ("user_id", "agent_id", "run_id")
_LEGACY_KEY = "lg_key"
log = logging.getLogger(__name__)


def _legacy_item(metadata: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """Key and value of an item of the earlier store: the key as JSON in ``lg_key``, the value as
    compact JSON in pieces ``lg_v00``, ``lg_v01``, ... each wrapped in '|'."""
    key = json.loads(metadata[_LEGACY_KEY])
    pieces = []
    for i in range(100):
        piece = metadata.get(f"lg_v{i:02d}")
        if piece is None:
            break
        if len(piece) < 2 or piece[0] != "|" or piece[-1] != "|":
            raise ValueError("not a value piece")
        pieces.append(piece[1:-1])
    value = json.loads("".join(pieces))
    if not isinstance(key, str) or not isinstance(value, dict):
        raise ValueError("not an item")
    return key, value


_SCOPE_PAGE = 1000


def _ns_order(namespace: Sequence[str]) -> str:
    """The order the store sorts by (items/list and items/search: ns_key)."""
    return "".join(json.dumps(label, ensure_ascii=False) for label in namespace)


class GraphmemStore(BaseStore):
    """LangGraph ``BaseStore`` on graphmem (see the module docstring).

    Args:
        service: AsyncMemoryService (async API: ``aget``, ``aput``, ``asearch`` ...) or MemoryService
            (blocking and async API).
        scope: the scope of items whose namespace does not name one (and of the parts not named).
        user_label, agent_label, run_label: positions in the namespace of the labels that choose
            the scope's user, agent and run (None: taken from ``scope``).
        index_fields: the value's paths (LangGraph's syntax: ``"text"``, ``"a.b"``, ``"arr[*].c"``,
            ``"$"`` for the whole value, the default) whose text is embedded for ``query`` search;
            ``put(..., index=[...])`` overrides it per item, ``index=False`` stores it unindexed.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl`` and ``sweep_interval_minutes`` in minutes,
            ``refresh_on_read``). An expired item is gone for readers (``get``, ``search``,
            ``list_namespaces``) at once, whatever ``omit_expired`` says; the sweeper only frees
            its storage.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        service: MemoryLike,
        *,
        scope: Scope | None = None,
        user_label: int | None = None,
        agent_label: int | None = None,
        run_label: int | None = None,
        index_fields: Sequence[str] | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self._bridge = as_bridge(service)
        self.scope = scope or Scope(user_id="langgraph")
        self.labels: dict[str, int | None] = {"user_id": user_label, "agent_id": agent_label, "run_id": run_label}
        for part, at in self.labels.items():
            if at is not None and (not isinstance(at, int) or at < 0):
                raise ValueError(f"{part} label position must be an int >= 0")
        self.index_fields = list(index_fields) if index_fields is not None else ["$"]
        self.ttl_config = ttl
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    # --- namespace <-> scope --------------------------------------------------------------------

    def scope_of(self, namespace: Sequence[str]) -> Scope:
        """The scope a namespace's items live in."""
        parts = self.scope.params()
        for part, at in self.labels.items():
            if at is not None and at < len(namespace):
                parts[part] = scope_id(namespace[at])
        return Scope(**parts)

    def _fixed_parts(self, prefix: Sequence[str]) -> dict[str, str | None]:
        """The scope parts a prefix decides (None: any; '*' decides nothing)."""
        parts: dict[str, str | None] = dict(self.scope.params())
        for part, at in self.labels.items():
            if at is None:
                continue
            parts[part] = scope_id(prefix[at]) if at < len(prefix) and prefix[at] != "*" else None
        return parts

    async def _scopes(self, svc: AsyncMemoryService, prefix: Sequence[str]) -> list[Scope]:
        parts = self._fixed_parts(prefix)
        if all(v is not None for v in parts.values()):
            return [Scope(**parts)]
        literal: list[str] = []
        for label in prefix:
            if label == "*":
                break
            literal.append(label)
        found: list[Scope] = []
        while True:
            page = await svc.items.scopes(**parts, prefix=literal, offset=len(found), limit=_SCOPE_PAGE)
            found.extend(page)
            if len(page) < _SCOPE_PAGE:
                return found

    # --- values ---------------------------------------------------------------------------------

    def _text(self, value: dict[str, Any], index: Sequence[str] | None) -> str | None:
        paths = self.index_fields if index is None else list(index)
        texts: list[str] = []
        for path in paths:
            texts.extend(get_text_at_path(value, path if path == "$" else tokenize_path(path)))
        return "\n".join(texts) or None

    @staticmethod
    def _item(found: StoredItem, *, search: bool) -> Item:
        if search:
            return SearchItem(
                namespace=found.namespace,
                key=found.key,
                value=found.value,
                created_at=found.created_at,
                updated_at=found.updated_at,
                score=found.score,
            )
        return Item(
            namespace=found.namespace,
            key=found.key,
            value=found.value,
            created_at=found.created_at,
            updated_at=found.updated_at,
        )

    # --- ops ------------------------------------------------------------------------------------

    async def _get(self, svc: AsyncMemoryService, op: GetOp) -> Item | None:
        found = await svc.items.get(
            self.scope_of(op.namespace),
            op.namespace,
            op.key,
            refresh_ttl=op.refresh_ttl,
        )
        return None if found is None else self._item(found, search=False)

    async def _search(self, svc: AsyncMemoryService, op: SearchOp) -> list[SearchItem]:
        items: ItemService = svc.items
        scopes = await self._scopes(svc, op.namespace_prefix)
        args: dict[str, Any] = {"query": op.query, "filter": op.filter, "refresh_ttl": op.refresh_ttl}
        if len(scopes) <= 1:  # the common case: the prefix names the scope
            scope = scopes[0] if scopes else self.scope
            found = await items.search(scope, op.namespace_prefix, offset=op.offset, limit=op.limit, **args)
        else:  # the top offset+limit of each scope, merged in the store's order
            want = op.offset + op.limit
            merged: list[StoredItem] = []
            for scope in scopes:
                merged.extend(await items.search(scope, op.namespace_prefix, offset=0, limit=want, **args))
            if op.query:
                merged.sort(key=lambda f: (-(f.score or 0.0), _ns_order(f.namespace), f.key))
            else:
                merged.sort(key=lambda f: (-f.updated_at.timestamp(), _ns_order(f.namespace), f.key))
            found = merged[op.offset : want]
        return [self._item(f, search=True) for f in found]  # type: ignore[misc]

    async def _list_namespaces(self, svc: AsyncMemoryService, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefixes = [c.path for c in op.match_conditions or () if c.match_type == "prefix"]
        suffixes = [c.path for c in op.match_conditions or () if c.match_type == "suffix"]
        prefix = tuple(prefixes[0]) if prefixes else ()
        suffix = tuple(suffixes[0]) if suffixes else ()
        extra = [c for c in op.match_conditions or () if c.path not in (prefix, suffix)]
        scopes = await self._scopes(svc, prefix)
        want = op.offset + op.limit
        args: dict[str, Any] = {"prefix": prefix, "suffix": suffix, "max_depth": op.max_depth}
        # More than one prefix (or suffix) condition, raw ops only: the first ones go to the store,
        # the others are checked here, on every namespace.
        fetch = want if not extra else 1_000_000_000
        found: set[tuple[str, ...]] = set()
        for scope in scopes:
            found.update(await svc.items.namespaces(scope, offset=0, limit=fetch, **args))
        names = sorted(ns for ns in found if all(_matches_path(c.path, ns, c.match_type) for c in extra))
        return names[op.offset : want]

    async def _run_ops(self, svc: AsyncMemoryService, ops: Sequence[Op]) -> list[Result]:
        """Reads first, in order, then every put of the batch in one transaction (later puts of the
        same key win): reads see the store as it was before the batch, as in InMemoryStore and
        PostgresStore."""
        results: list[Result] = []
        puts: list[ItemPut] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(await self._get(svc, op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(svc, op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(svc, op))
            elif isinstance(op, PutOp):
                if not op.namespace:
                    raise InvalidNamespaceError("Namespace cannot be empty.")
                if op.value is not None and not isinstance(op.value, dict):
                    raise InvalidInputError(f"store values must be dicts, got {type(op.value).__name__}")
                text = None
                if op.value is not None and op.index is not False:
                    value_json(op.value)  # refuse what JSON cannot hold before reading text from it
                    text = self._text(op.value, op.index)
                puts.append(
                    ItemPut(
                        scope=self.scope_of(op.namespace),
                        namespace=tuple(op.namespace),
                        key=op.key,
                        value=op.value,
                        text=text,
                        ttl_minutes=op.ttl,
                    )
                )
                results.append(None)
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        if puts:
            await svc.items.write(puts)
        return results

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        result: list[Result] = self._bridge.run(lambda svc: self._run_ops(svc, listed))
        return result

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        result: list[Result] = await self._bridge.arun(lambda svc: self._run_ops(svc, listed))
        return result

    # --- items of graphmem's earlier store ----------------------------------------------------------

    async def _migrate(self, svc: AsyncMemoryService, user_id: str | None) -> tuple[int, int]:
        moved = skipped = 0
        for scope in await svc.scopes(user_id):
            offset = 0
            while True:
                page = await svc.list(scope, limit=LIMITS.page_max, offset=offset)
                deleted = 0
                for note in (n for n in page if _LEGACY_KEY in n.metadata):
                    try:
                        key, value = _legacy_item(note.metadata)
                    except (ValueError, TypeError):  # not one of the earlier store's items after all
                        log.warning("graphmem: note %s has lg_* metadata that is no store item; left as it is", note.id)
                        skipped += 1
                        continue
                    parts = [scope.user_id, scope.agent_id, scope.run_id]
                    while len(parts) > 1 and parts[-1] == "default":  # the earlier store's shortest form
                        parts.pop()
                    await self._run_ops(svc, [PutOp(("graphmem", *parts), key, value)])
                    await svc.delete(note.id, scope)
                    moved += 1
                    deleted += 1
                if len(page) < LIMITS.page_max:
                    break
                offset += len(page) - deleted  # the moved notes are gone: the next page starts earlier
        return moved, skipped

    def migrate_legacy_notes(self, user_id: str | None = None) -> tuple[int, int]:
        """Move the items graphmem's earlier LangGraph store kept as notes (``lg_*`` metadata; namespace
        ``("graphmem", user[, agent[, run]])``) into this store, deleting each note once its item is
        written (so a rerun continues). Build the store with ``user_label=1, agent_label=2,
        run_label=3`` to keep them in their scopes. Returns (moved, skipped)."""
        result: tuple[int, int] = self._bridge.run(lambda svc: self._migrate(svc, user_id))
        return result

    async def amigrate_legacy_notes(self, user_id: str | None = None) -> tuple[int, int]:
        result: tuple[int, int] = await self._bridge.arun(lambda svc: self._migrate(svc, user_id))
        return result

    # --- TTL --------------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item (in every scope); returns how many."""
        deleted: int = self._bridge.run(lambda svc: svc.items.sweep())
        return deleted

    async def asweep_ttl(self) -> int:
        deleted: int = await self._bridge.arun(lambda svc: svc.items.sweep())
        return deleted

    def _interval_s(self, minutes: float | None) -> float:
        chosen = minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        return float(chosen) * 60.0

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Sweep expired items every ``sweep_interval_minutes`` (default: the TTL config's, else 5)
        in a daemon thread, as PostgresStore does; needs a blocking-capable ``MemoryService``.
        The future completes when ``stop_ttl_sweeper`` stops it."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self._sweeper is not None and self._sweeper.is_alive():
            done.set_result(None)
            return done
        interval = self._interval_s(sweep_interval_minutes)
        self._sweeper_stop.clear()

        def loop() -> None:
            try:
                while not self._sweeper_stop.wait(interval):
                    self.sweep_ttl()
                done.set_result(None)
            except BaseException as exc:  # report through the future, as PostgresStore's does
                done.set_exception(exc)

        self._sweeper = threading.Thread(target=loop, name="graphmem-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True once it has stopped."""
        if self._sweeper is None:
            return True
        self._sweeper_stop.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped

    async def astart_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> asyncio.Task[None]:
        """The sweeper as a task of the running event loop (for an ``AsyncMemoryService``); cancel
        the task to stop it."""
        interval = self._interval_s(sweep_interval_minutes)

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                await self.asweep_ttl()

        return asyncio.get_running_loop().create_task(loop(), name="graphmem-ttl-sweeper")


def _matches_path(path: Sequence[str], namespace: tuple[str, ...], match_type: str) -> bool:
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(reversed(namespace), reversed(path), strict=False)
        if match_type == "suffix"
        else zip(namespace, path, strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)
