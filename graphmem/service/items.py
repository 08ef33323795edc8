"""Store items: key-value items in namespaces, the LangGraph store's data (``ports.ItemStore``).

An item is (scope, namespace, key) -> a JSON object of any size. It is not a note: no LLM call,
no links, no evolution. This module validates items, embeds their indexed text, and compiles
filters: the conditions the store can evaluate in Cypher become ``LeafCondition``s over the
value's scalar leaves; the rest (list or object equality, null, huge integers) are checked here, on
the values the store returns, paging on until enough items pass.

Filter semantics (``item_matches`` is the definition; the pushed conditions agree with it):
``{"k": v}`` and ``{"k": {"$eq": v}}`` are JSON equality (``true`` is not ``1``; ``1`` is ``1.0``); a
missing key equals ``None``; ``{"a": {"b": v}}`` descends into objects; ``$ne`` is its negation
(a missing key is "not equal"); ``$gt $gte $lt $lte`` compare two numbers, or two strings (by UTF-16
code units, as Neo4j does), and are false for anything else.

Leaf encoding: ``kind + path + operand`` where kind is ``s`` (string), ``n`` (number) or ``b``
(boolean), path the JSON list of keys (a prefix-free code), and a number is the 16 hex digits of
its IEEE-754 bits made sortable. Strings then compare as the values do, so ``$gt`` is a string
comparison in Cypher.
"""

from __future__ import annotations

import json
import math
import struct
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from graphmem.errors import InvalidInputError
from graphmem.models import (
    ITEM_OPERATORS,
    LIMITS,
    ItemFilter,
    ItemRecord,
    ItemWrite,
    LeafCondition,
    Scope,
    StoredItem,
    Usage,
    check_bound,
    utcnow,
)
from graphmem.ports import ItemStore

Embed = Callable[[Sequence[str], Usage | None], Awaitable[list[list[float]]]]
EmbedQuery = Callable[[str], Awaitable[list[float]]]

MAX_NAMESPACE_BYTES = 4000  # the encoded namespace is in a range index (Neo4j's key limit is ~8 KB)
_EXACT_INT = 2**53  # integers beyond this are not exact as floats: such operands are checked here
_PAGE = 500  # rows per store call while residual conditions are checked here
T = TypeVar("T")


@dataclass
class ItemPut:
    """One item to write; ``value=None`` deletes it. ``text``: what is embedded for query search
    (None or empty: not indexed). ``ttl_minutes``: expire after that long without access."""

    scope: Scope
    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any] | None
    text: str | None = None
    ttl_minutes: float | None = None


# --- encoding ---------------------------------------------------------------------------------------


def _path(path: Sequence[str]) -> str:
    return json.dumps(list(path), ensure_ascii=False, separators=(",", ":"))


def _number(x: float) -> str:
    """Hex digits whose string order is the numeric order (IEEE-754 bits, sign handled)."""
    if x == 0:
        x = 0.0  # -0.0 == 0.0
    (bits,) = struct.unpack(">Q", struct.pack(">d", x))
    bits = bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | (1 << 63)
    return f"{bits:016x}"


def _as_float(x: int | float) -> float:
    try:
        return float(x)
    except OverflowError:  # a JSON integer beyond float range still orders as +-infinity
        return math.inf if x > 0 else -math.inf


def value_leaves(value: Mapping[str, Any]) -> list[str]:
    """The encoded scalar leaves of a JSON object, reached through objects only (not lists)."""
    out: list[str] = []

    def walk(path: tuple[str, ...], v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk((*path, k), x)
        elif isinstance(v, bool):
            out.append("b" + _path(path) + ("1" if v else "0"))
        elif isinstance(v, (int, float)):
            out.append("n" + _path(path) + _number(_as_float(v)))
        elif isinstance(v, str):
            out.append("s" + _path(path) + v)

    for k, x in value.items():
        walk((k,), x)
    return out


def _utf8(text: str, what: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{what} is not valid Unicode text (lone surrogates)") from None
    return text


def value_json(value: Any) -> str:
    """The value as stored: compact JSON text; refuses what JSON (and Neo4j) cannot hold."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"store values must be JSON objects (dicts), got {type(value).__name__}")
    try:
        text = json.dumps(dict(value), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"store values must be JSON-serialisable: {exc}") from None
    return _utf8(text, "the value")


def check_namespace(namespace: Sequence[str], *, allow_empty: bool = False) -> tuple[str, ...]:
    if not isinstance(namespace, (tuple, list)) or (not namespace and not allow_empty):
        raise InvalidInputError("a namespace is a non-empty tuple of labels")
    for label in namespace:
        if not isinstance(label, str) or not label or "\x00" in label:
            raise InvalidInputError(f"namespace labels are non-empty text without NUL, got {label!r:.60}")
        _utf8(label, "a namespace label")
    ns = tuple(namespace)
    if len(json.dumps(list(ns), ensure_ascii=False).encode("utf-8")) > MAX_NAMESPACE_BYTES:
        raise InvalidInputError(f"namespace too long (over {MAX_NAMESPACE_BYTES} bytes)")
    return ns


def check_key(key: Any) -> str:
    if not isinstance(key, str):
        raise InvalidInputError(f"store keys are text, got {type(key).__name__}")
    return _utf8(key, "the key")


# --- filters ----------------------------------------------------------------------------------------


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and bool(a == b)


def _apply(item: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return _equal(item, arg)
    if op == "$ne":
        return not _equal(item, arg)
    if _is_number(item) and _is_number(arg):
        a, b = item, arg
    elif isinstance(item, str) and isinstance(arg, str):
        a, b = _utf16(item), _utf16(arg)
    else:
        return False
    if op == "$gt":
        return bool(a > b)
    if op == "$gte":
        return bool(a >= b)
    if op == "$lt":
        return bool(a < b)
    if op == "$lte":
        return bool(a <= b)
    raise InvalidInputError(f"unsupported filter operator {op!r}; use {' '.join(ITEM_OPERATORS)}")


def _match(item: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(str(k).startswith("$") for k in want):
            return all(_apply(item, op, arg) for op, arg in want.items())
        if not isinstance(item, Mapping):
            return False
        return all(_match(item.get(k), v) for k, v in want.items())
    return _equal(item, want)


def item_matches(filter_: Mapping[str, Any] | None, value: Mapping[str, Any]) -> bool:
    """Whether a value passes a filter: the definition of the filter semantics."""
    return not filter_ or all(_match(value.get(k), v) for k, v in filter_.items())


def compile_filter(filter_: Mapping[str, Any] | None) -> ItemFilter:
    """The conditions the store evaluates in Cypher, and whether the rest must be checked here.

    Raises InvalidInputError for an unknown operator or an operand JSON cannot hold, whether or not
    any item would reach it (so a bad filter fails the same on an empty namespace).
    """
    if not filter_:
        return ItemFilter()
    if not isinstance(filter_, Mapping):
        raise InvalidInputError("a filter is a dict of value keys to values or {operator: value}")
    pushed: list[LeafCondition] = []
    residual = False

    def leaf(path: tuple[str, ...], op: str, arg: Any) -> None:
        nonlocal residual
        if op not in ITEM_OPERATORS:
            raise InvalidInputError(f"unsupported filter operator {op!r}; use {' '.join(ITEM_OPERATORS)}")
        # Under a nested path a leaf may be missing because a parent is not an object, where $ne
        # (true for a missing key at the top) must be false: checked here.
        if op == "$ne" and len(path) > 1:
            residual = True
            return
        if isinstance(arg, bool):
            kind, operand = "b", "1" if arg else "0"
            if op not in ("$eq", "$ne"):
                residual = True
                return
        elif _is_number(arg):
            if isinstance(arg, float) and not math.isfinite(arg):
                raise InvalidInputError("filter numbers must be finite")
            if isinstance(arg, int) and abs(arg) >= _EXACT_INT:
                residual = True
                return
            kind, operand = "n", _number(float(arg))
        elif isinstance(arg, str):
            kind, operand = "s", _utf8(arg, "a filter value")
        else:  # None, lists, objects: JSON equality is checked here
            residual = True
            return
        head = kind + _path(path)
        pushed.append(LeafCondition(op=op, head=head, entry=head + operand))

    def walk(path: tuple[str, ...], want: Any) -> None:
        nonlocal residual
        if isinstance(want, Mapping):
            if any(str(k).startswith("$") for k in want):
                for op, arg in want.items():
                    leaf(path, str(op), arg)
                return
            if not want:
                residual = True  # "is an object": checked here
            for k, v in want.items():
                if not isinstance(k, str):
                    raise InvalidInputError("filter keys are text")
                walk((*path, k), v)
            return
        leaf(path, "$eq", want)

    for k, v in filter_.items():
        if not isinstance(k, str):
            raise InvalidInputError("filter keys are text")
        walk((k,), v)
    return ItemFilter(pushed=tuple(pushed), residual=residual)


# --- the service ------------------------------------------------------------------------------------


def _stored(record: ItemRecord) -> StoredItem:
    value: dict[str, Any] = json.loads(record.value_json)
    return StoredItem(
        scope=record.scope,
        namespace=record.namespace,
        key=record.key,
        value=value,
        created_at=record.created_at,
        updated_at=record.updated_at,
        score=record.score,
    )


class ItemService:
    """What the LangGraph store needs of graphmem, scope by scope (``AsyncMemoryService.items``)."""

    def __init__(self, store: ItemStore, embed: Embed, embed_query: EmbedQuery, max_text_chars: int) -> None:
        self.store = store
        self._embed = embed
        self._embed_query = embed_query
        self._max_text = max_text_chars

    async def write(self, puts: Sequence[ItemPut]) -> Usage:
        """Write a batch: validate everything, embed the indexed texts, then one transaction. Later
        puts of the same (scope, namespace, key) win. On any failure nothing is written, so a
        replaced value survives a failed replacement."""
        usage = Usage()
        started = time.perf_counter()
        last: dict[tuple[Scope, tuple[str, ...], str], ItemPut] = {}
        for p in puts:
            ns = check_namespace(p.namespace)
            last[(p.scope, ns, check_key(p.key))] = p
        writes: list[ItemWrite] = []
        deletes: list[tuple[Scope, tuple[str, ...], str]] = []
        texts: list[tuple[int, str]] = []
        for (scope, ns, key), p in last.items():
            if p.value is None:
                deletes.append((scope, ns, key))
                continue
            if p.ttl_minutes is not None and not (
                isinstance(p.ttl_minutes, (int, float)) and math.isfinite(p.ttl_minutes) and p.ttl_minutes > 0
            ):
                raise InvalidInputError("ttl must be a positive number of minutes")
            vj = value_json(p.value)
            writes.append(
                ItemWrite(
                    scope=scope,
                    namespace=ns,
                    key=key,
                    value_json=vj,
                    leaves=value_leaves(json.loads(vj)),  # the leaves of the value as stored
                    embedding=None,
                    ttl_minutes=None if p.ttl_minutes is None else float(p.ttl_minutes),
                )
            )
            if p.text and p.text.strip():
                texts.append((len(writes) - 1, _utf8(p.text, "the indexed text").strip()[: self._max_text]))
        vectors = await self._embed([t for _, t in texts], usage)
        for (i, _), vector in zip(texts, vectors, strict=True):
            writes[i].embedding = vector
        t0 = time.perf_counter()
        await self.store.write_items(writes, deletes)
        usage.store_seconds += time.perf_counter() - t0
        usage.total_seconds = time.perf_counter() - started
        return usage

    async def get(
        self, scope: Scope, namespace: Sequence[str], key: str, *, refresh_ttl: bool = True
    ) -> StoredItem | None:
        """The item, or None; an item whose TTL has expired is gone for readers even before the
        sweeper deletes it (as for ``search`` and ``namespaces``)."""
        ns, key = check_namespace(namespace), check_key(key)
        record = await self.store.get_item(scope, ns, key, live_at=utcnow())
        if record is None:
            return None
        if refresh_ttl and record.ttl_minutes is not None:
            await self.store.refresh_items(scope, [(ns, key)])
        return _stored(record)

    async def search(
        self,
        scope: Scope,
        prefix: Sequence[str],
        *,
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
        offset: int = 0,
        limit: int = 10,
        refresh_ttl: bool = True,
    ) -> list[StoredItem]:
        """Items under a namespace prefix: by similarity to ``query`` (indexed items only), else the
        most recently updated first; filtered; expired items left out; ``offset``/``limit`` paged.
        Any ``limit`` (as LangGraph's stores take): the store is read in calls of at most
        ``LIMITS.items_page_max`` rows until enough items came back or none are left."""
        _page(limit, offset)
        ns = check_namespace(prefix, allow_empty=True)
        where = compile_filter(filter)
        if limit == 0:
            return []
        live_at = utcnow()
        embedding: list[float] | None = None
        if query:
            embedding = await self._embed_query(_utf8(query, "the query")[: self._max_text])

        async def page(skip: int, size: int) -> list[ItemRecord]:
            if embedding is None:
                return await self.store.list_items(scope, ns, where, skip=skip, limit=size, live_at=live_at)
            return await self.store.search_items(scope, ns, where, embedding, skip=skip, limit=size, live_at=live_at)

        if not where.residual:
            records = await _paged(page, offset, limit)
        else:
            want, skip = offset + limit, 0
            kept: list[ItemRecord] = []
            size = min(max(_PAGE, 2 * want), LIMITS.items_page_max)
            while len(kept) < want:
                rows = await page(skip, size)
                kept.extend(r for r in rows if item_matches(filter, json.loads(r.value_json)))
                if len(rows) < size:
                    break
                skip += size
            records = kept[offset:want]
        if refresh_ttl:
            expiring = [(r.namespace, r.key) for r in records if r.ttl_minutes is not None]
            for at in range(0, len(expiring), LIMITS.items_page_max):
                await self.store.refresh_items(scope, expiring[at : at + LIMITS.items_page_max])
        return [_stored(r) for r in records]

    async def namespaces(
        self,
        scope: Scope,
        *,
        prefix: Sequence[str] = (),
        suffix: Sequence[str] = (),
        max_depth: int | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> list[tuple[str, ...]]:
        """The namespaces of the scope's live items (expired ones left out), sorted, paged; any
        ``limit``, read in store calls of at most ``LIMITS.items_page_max``."""
        _page(limit, offset)
        if max_depth is not None and max_depth < 1:
            raise InvalidInputError("max_depth must be >= 1")
        if limit == 0:
            return []
        start, end = check_namespace(prefix, allow_empty=True), check_namespace(suffix, allow_empty=True)
        live_at = utcnow()

        async def page(skip: int, size: int) -> list[tuple[str, ...]]:
            return await self.store.item_namespaces(
                scope, prefix=start, suffix=end, max_depth=max_depth, skip=skip, limit=size, live_at=live_at
            )

        return await _paged(page, offset, limit)

    async def scopes(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        prefix: Sequence[str] = (),
        offset: int = 0,
        limit: int = 1000,
    ) -> list[Scope]:
        """Scopes that hold items under a namespace prefix (paged: at most ``LIMITS.items_page_max``)."""
        check_bound(limit, 0, LIMITS.items_page_max, "limit")
        check_bound(offset, 0, LIMITS.offset_max, "offset")
        parts = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        return await self.store.item_scopes(
            parts=parts, prefix=check_namespace(prefix, allow_empty=True), skip=offset, limit=limit
        )

    async def sweep(self, *, now: datetime | None = None, batch: int = 10_000) -> int:
        """Delete every item whose TTL has expired (in batches); returns how many."""
        total = 0
        cutoff = now or utcnow()
        while True:
            deleted = await self.store.sweep_items(cutoff, batch=batch)
            total += deleted
            if deleted < batch:
                return total


__all__ = ["ItemPut", "ItemService", "compile_filter", "item_matches", "value_leaves"]


def _page(limit: int, offset: int) -> None:
    """Issue 16: every number a client sends is bounded (an offset of 2**63 overflowed Neo4j's SKIP).
    A limit is any count (issue 29: LangGraph's stores refuse none); what protects the server is
    ``_paged``, which never asks the store for more than ``LIMITS.items_page_max`` rows at once."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInputError(f"limit must be an integer >= 0; got {str(limit)[:40]}")
    check_bound(offset, 0, LIMITS.offset_max, "offset")


async def _paged(fetch: Callable[[int, int], Awaitable[list[T]]], offset: int, limit: int) -> list[T]:
    """Up to ``limit`` rows from ``offset``, read with ``fetch(skip, size)`` in pages of at most
    ``LIMITS.items_page_max`` rows, until enough came back or a short page says none are left."""
    out: list[T] = []
    while len(out) < limit:
        size = min(LIMITS.items_page_max, limit - len(out))
        rows = await fetch(offset + len(out), size)
        out.extend(rows)
        if len(rows) < size:
            break
    return out
