"""A LangGraph long-term store (``langgraph.store.base.BaseStore``) on graphmem notes.

Namespaces map to scopes::

    (*prefix, user_id)                      -> Scope(user_id, "default", "default")
    (*prefix, user_id, agent_id)            -> Scope(user_id, agent_id, "default")
    (*prefix, user_id, agent_id, run_id)    -> Scope(user_id, agent_id, run_id)

with ``prefix = ("graphmem",)`` by default. Items come back with the shortest namespace naming their
scope (trailing ``"default"`` parts dropped). In ``search`` a namespace *prefix* selects every scope
it covers: ``("graphmem", "alice")`` searches all of alice's agents and runs.

Each item is one note of its scope. The value is stored exactly (as JSON, in the note's metadata, up
to 30,000 characters of JSON); the note's content, which is embedded and searched, is the value's text
(its string fields, or the fields named by ``index``). ``search(query=...)`` is graphmem search (hybrid
by default); ``filter`` compares value fields (``$eq $ne $gt $gte $lt $lte``) after retrieval.
Notes added by other means (REST, CLI, ``svc.add``) appear too, with key = note id and value =
``{"content", "context", "keywords", "tags", "event_time"}``.

Keys are any text up to about 900 characters; they are not note ids (note ids are unique across all
scopes, keys only within a namespace): the note id is derived from scope and key. ``put`` on an
existing key replaces the note (its links go with it); ``put`` of a plain note's id replaces that note.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
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
    validate_op_namespace,
)

from graphmem.errors import InvalidInputError, NoteNotFoundError
from graphmem.integrations._bridge import MemoryLike, as_bridge
from graphmem.models import CONTROL_CHARS, ID_PATTERN, Note, Scope, SearchMode, check_id, utcnow
from graphmem.service.memory import AsyncMemoryService

__all__ = ["MAX_VALUE_JSON", "GraphmemStore"]

_KEY = "lg_key"
_CREATED = "lg_created"
_CHUNK = "lg_v{:02d}"
_CHUNK_CHARS = 1000  # graphmem's limit on one metadata value
_MAX_CHUNKS = 30  # 32 metadata keys at most: key, created, 30 chunks
MAX_VALUE_JSON = (_CHUNK_CHARS - 2) * _MAX_CHUNKS  # characters of compact ASCII JSON
_ID_RE = re.compile(ID_PATTERN)
_PLAIN_FIELDS = ("content", "context", "keywords", "tags", "event_time")  # a plain note's value
_LIST_PAGE = 1000


def _encode_value(value: dict[str, Any]) -> list[str]:
    """Compact ASCII JSON in pieces of at most 1000 characters, each wrapped in '|' ... '|'.

    graphmem strips whitespace from both ends of a metadata value; the wrapping keeps a piece that
    starts or ends inside a run of spaces intact, so the joined pieces parse back to the same value.
    """
    try:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"store values must be JSON-serialisable: {exc}") from None
    text = text.replace("\x7f", "\\u007f")  # DEL is ASCII, so json leaves it; graphmem refuses it
    size = _CHUNK_CHARS - 2
    if len(text) > size * _MAX_CHUNKS:
        raise InvalidInputError(f"value is {len(text)} characters of JSON, over the store's limit of {MAX_VALUE_JSON}")
    return [f"|{text[i : i + size]}|" for i in range(0, len(text), size)]


def _decode_value(metadata: dict[str, str]) -> dict[str, Any]:
    pieces = []
    for i in range(_MAX_CHUNKS):
        part = metadata.get(_CHUNK.format(i))
        if part is None:
            break
        pieces.append(part[1:-1])
    value: dict[str, Any] = json.loads("".join(pieces))
    return value


def _text_leaves(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        if value.strip():
            out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _text_leaves(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _text_leaves(v, out)


def _at_path(value: Any, path: str) -> Any:
    """'a.b', 'a[0].b', 'a[*].b' (LangGraph's index path syntax, simplified)."""
    current: list[Any] = [value]
    for part in re.findall(r"[^.\[\]]+|\[[^\]]*\]", path):
        nxt: list[Any] = []
        for item in current:
            if part.startswith("["):
                idx = part[1:-1]
                if isinstance(item, list):
                    if idx == "*":
                        nxt.extend(item)
                    else:
                        with contextlib.suppress(ValueError, IndexError):
                            nxt.append(item[int(idx)])
            elif isinstance(item, dict) and part in item:
                nxt.append(item[part])
        current = nxt
    return current


def _compare(item_value: Any, filter_value: Any) -> bool:
    """The filter semantics of LangGraph's InMemoryStore."""
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(_apply(item_value, op, v) for op, v in filter_value.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(a, b) for a, b in zip(item_value, filter_value, strict=False))
        )
    return bool(item_value == filter_value)


def _apply(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(value), float(arg)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise InvalidInputError(f"unsupported filter operator {op!r}; use $eq $ne $gt $gte $lt $lte")


def _matches(filter_: dict[str, Any] | None, value: dict[str, Any]) -> bool:
    return not filter_ or all(_compare(value.get(k), v) for k, v in filter_.items())


def _path_match(path: Sequence[str], namespace: tuple[str, ...], suffix: bool) -> bool:
    if len(namespace) < len(path):
        return False
    pairs = zip(reversed(namespace), reversed(path), strict=False) if suffix else zip(namespace, path, strict=False)
    return all(p == "*" or n == p for n, p in pairs)


class GraphmemStore(BaseStore):
    """LangGraph ``BaseStore`` on graphmem (see the module docstring for the namespace mapping).

    Args:
        service: AsyncMemoryService (async API: ``aget``, ``aput``, ``asearch``, ...) or MemoryService
            (blocking and async API).
        prefix: the namespace labels before ``user_id``.
        enrich: run A-MEM on each put (LLM enrichment, links, evolution). Off by default: a store put
            then costs one embedding and one write, no LLM call.
        search_mode: graphmem search mode for ``search(query=...)``.
        index_fields: default fields whose text becomes the searchable note content (None: every
            string in the value). ``put(..., index=[...])`` overrides it per item.
        max_scopes: the most scopes one ``search`` may cover (a bare prefix can cover many users).
    """

    supports_ttl: bool = False

    def __init__(
        self,
        service: MemoryLike,
        *,
        prefix: Sequence[str] = ("graphmem",),
        enrich: bool = False,
        search_mode: SearchMode | str = SearchMode.HYBRID,
        index_fields: Sequence[str] | None = None,
        max_scopes: int = 50,
    ) -> None:
        self._bridge = as_bridge(service)
        self.prefix = tuple(prefix)
        for label in self.prefix:
            if not label or "." in label:
                raise ValueError(f"invalid namespace prefix label {label!r}")
        self.enrich = enrich
        self.search_mode = SearchMode.parse(search_mode)
        self.index_fields = list(index_fields) if index_fields is not None else None
        self.max_scopes = max_scopes

    # --- namespace <-> scope --------------------------------------------------------------------

    def scope_of(self, namespace: tuple[str, ...]) -> Scope:
        """The scope a full namespace names; InvalidNamespaceError otherwise."""
        n = len(self.prefix)
        if tuple(namespace[:n]) != self.prefix or not 1 <= len(namespace) - n <= 3:
            raise InvalidNamespaceError(
                f"namespace must be {(*self.prefix, 'user_id')} with optional agent_id and run_id after it, "
                f"got {namespace!r}"
            )
        parts = namespace[n:]
        try:
            return Scope(**dict(zip(("user_id", "agent_id", "run_id"), parts, strict=False)))
        except ValueError as exc:
            raise InvalidNamespaceError(f"invalid namespace {namespace!r}: {exc}") from None

    def namespace_of(self, scope: Scope) -> tuple[str, ...]:
        """The shortest namespace naming a scope (trailing 'default' parts dropped)."""
        parts = [scope.user_id, scope.agent_id, scope.run_id]
        while len(parts) > 1 and parts[-1] == "default":
            parts.pop()
        return self.prefix + tuple(parts)

    def _full(self, scope: Scope) -> tuple[str, ...]:
        return (*self.prefix, scope.user_id, scope.agent_id, scope.run_id)

    @staticmethod
    def note_id_for(scope: Scope, key: str) -> str:
        digest = hashlib.sha256(f"{scope}\n{key}".encode()).hexdigest()[:40]
        return f"lg-{digest}"

    # --- note <-> item --------------------------------------------------------------------------

    def _item(self, note: Note, score: float | None = None, *, search: bool = False) -> Item:
        meta = note.metadata
        if _KEY in meta:
            key = json.loads(meta[_KEY])
            value = _decode_value(meta)
            created = datetime.fromisoformat(meta[_CREATED]) if _CREATED in meta else note.created_at
        else:
            key = note.id
            brief = note.brief()
            value = {k: brief[k] for k in _PLAIN_FIELDS}
            created = note.created_at
        ns = self.namespace_of(note.scope)
        if search:
            return SearchItem(
                namespace=ns, key=key, value=value, created_at=created, updated_at=note.updated_at, score=score
            )
        return Item(namespace=ns, key=key, value=value, created_at=created, updated_at=note.updated_at)

    def _content(self, value: dict[str, Any], index: list[str] | None) -> str:
        texts: list[str] = []
        fields = index if index is not None else self.index_fields
        if fields is None:
            _text_leaves(value, texts)
        else:
            for path in fields:
                for found in _at_path(value, path):
                    if isinstance(found, str):
                        if found.strip():
                            texts.append(found)
                    else:
                        texts.append(json.dumps(found, ensure_ascii=False))
        text = "\n".join(texts) if texts else json.dumps(value, ensure_ascii=False, sort_keys=True)
        text = CONTROL_CHARS.sub(" ", text).strip() or "{}"
        return text

    @staticmethod
    def _check_key(key: str) -> str:
        if not isinstance(key, str) or not key:
            raise InvalidInputError("store keys must be non-empty strings")
        encoded = json.dumps(key, ensure_ascii=True).replace("\x7f", "\\u007f")
        if len(encoded) > _CHUNK_CHARS:
            raise InvalidInputError(f"store key too long ({len(key)} characters)")
        return encoded

    # --- ops ------------------------------------------------------------------------------------

    @staticmethod
    async def _try_get(svc: AsyncMemoryService, note_id: str, scope: Scope) -> Note | None:
        try:
            return await svc.get(note_id, scope)
        except NoteNotFoundError:
            return None

    async def _find(self, svc: AsyncMemoryService, scope: Scope, key: str) -> Note | None:
        """The item's note: the one derived from the key, else a plain note whose id is the key."""
        note = await self._try_get(svc, self.note_id_for(scope, key), scope)
        if note is None and _ID_RE.match(key):
            plain = await self._try_get(svc, key, scope)
            if plain is not None and _KEY not in plain.metadata:
                note = plain
        return note

    async def _get(self, svc: AsyncMemoryService, op: GetOp) -> Item | None:
        scope = self.scope_of(op.namespace)
        note = await self._find(svc, scope, op.key)
        return None if note is None else self._item(note)

    async def _put(self, svc: AsyncMemoryService, op: PutOp) -> None:
        scope = self.scope_of(op.namespace)
        encoded_key = self._check_key(op.key)
        existing = await self._find(svc, scope, op.key)
        if op.value is None:
            if existing is not None:
                await svc.delete(existing.id, scope)
            return
        if not isinstance(op.value, dict):
            raise InvalidInputError("store values must be dicts")
        value = dict(op.value)
        chunks = _encode_value(value)
        created = existing.metadata.get(_CREATED) if existing is not None else None
        if existing is not None and created is None:
            created = existing.created_at.isoformat()
        metadata = {_KEY: encoded_key, **{_CHUNK.format(i): c for i, c in enumerate(chunks)}}
        index = None if op.index is None or op.index is False else list(op.index)
        content = self._content(value, index)[: svc.settings.max_content_chars]
        if existing is not None:
            await svc.delete(existing.id, scope)
        metadata[_CREATED] = created or utcnow().isoformat()
        await svc.add(
            content,
            scope,
            note_id=self.note_id_for(scope, op.key),
            metadata=metadata,
            enrich=self.enrich,
            evolve=self.enrich,
        )

    async def _scopes_under(self, svc: AsyncMemoryService, ns_prefix: tuple[str, ...]) -> list[Scope]:
        n = len(self.prefix)
        head = ns_prefix[:n]
        if not _path_match(head, self.prefix, suffix=False):
            return []
        rest = ns_prefix[n:]
        if len(rest) > 3:
            return []
        user = rest[0] if rest and rest[0] != "*" else None
        if user is not None:
            try:
                check_id(user, "user_id")
            except ValueError:
                return []
        scopes = [
            s
            for s in await svc.scopes(user)
            if _path_match(ns_prefix, self._full(s), suffix=False)
            or _path_match(ns_prefix, self.namespace_of(s), suffix=False)
        ]
        if len(scopes) > self.max_scopes:
            raise InvalidInputError(
                f"namespace prefix {ns_prefix!r} covers {len(scopes)} scopes, more than max_scopes="
                f"{self.max_scopes}; name the user (and agent) in the prefix"
            )
        return scopes

    async def _search(self, svc: AsyncMemoryService, op: SearchOp) -> list[SearchItem]:
        if op.limit < 0 or op.offset < 0:
            raise InvalidInputError("limit and offset must be >= 0")
        want = op.offset + op.limit
        if want == 0:
            return []
        scopes = await self._scopes_under(svc, tuple(op.namespace_prefix))
        found: list[SearchItem] = []
        if op.query:
            fetch = min(1000, max(want * (4 if op.filter else 1), want))
            seen: set[str] = set()
            for scope in scopes:
                for hit in await svc.search(op.query, scope, k=fetch, mode=self.search_mode):
                    if hit.note.id in seen:
                        continue
                    seen.add(hit.note.id)
                    item = self._item(hit.note, hit.score, search=True)
                    if _matches(op.filter, item.value):
                        found.append(item)  # type: ignore[arg-type]
            found.sort(key=lambda i: i.score or 0.0, reverse=True)
            return found[op.offset : want]
        for scope in scopes:
            offset = 0
            while len(found) < want:
                page = await svc.list(scope, limit=_LIST_PAGE, offset=offset)
                for note in page:
                    item = self._item(note, None, search=True)
                    if _matches(op.filter, item.value):
                        found.append(item)  # type: ignore[arg-type]
                if len(page) < _LIST_PAGE:
                    break
                offset += _LIST_PAGE
            if len(found) >= want:
                break
        return found[op.offset : want]

    async def _list_namespaces(self, svc: AsyncMemoryService, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = {self.namespace_of(s) for s in await svc.scopes(None)}
        out: set[tuple[str, ...]] = set()
        for ns in namespaces:
            ok = all(
                _path_match(cond.path, ns, suffix=cond.match_type == "suffix") for cond in (op.match_conditions or ())
            )
            if ok:
                out.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        ordered = sorted(out)
        return ordered[op.offset : op.offset + op.limit]

    async def _run_ops(self, svc: AsyncMemoryService, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(await self._get(svc, op))
            elif isinstance(op, PutOp):
                await self._put(svc, op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(svc, op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(svc, op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        result: list[Result] = self._bridge.run(lambda svc: self._run_ops(svc, ops))
        return result

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        result: list[Result] = await self._bridge.arun(lambda svc: self._run_ops(svc, ops))
        return result
