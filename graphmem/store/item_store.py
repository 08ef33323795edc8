"""Store items (the LangGraph store) in Neo4j, beside the notes (queries in ``cypher/items/``).

Graph shape: ``(:StoreItem {uid, user_id, agent_id, run_id, ns, ns_key, key, value_json, leaves,
embedding?, created_at, updated_at, ttl_minutes?, expires_at?})``. Items are not notes: A-MEM does not
enrich, link or evolve them, and their value is stored whole, as one JSON text, of any size.

``uid`` (unique) is a hash of scope, namespace and key, computed here: an item is found by what
names it, never by an id a client could choose or guess into another scope, and no note id is
involved. ``ns_key`` encodes the namespace so that ``STARTS WITH`` matches whole labels.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from graphmem.models import ItemFilter, ItemRecord, ItemWrite, Scope, utcnow
from graphmem.store.records import native
from graphmem.store.runner import Neo4jRunner

_PARTS = ("user_id", "agent_id", "run_id")


def ns_key(namespace: Sequence[str]) -> str:
    """Each label as a JSON string: a prefix-free code, so a key starts with another's only when the
    namespace starts with the other's labels (``("a",)`` is not a prefix of ``("ab",)``)."""
    return "".join(json.dumps(label, ensure_ascii=False) for label in namespace)


def item_uid(scope: Scope, namespace: Sequence[str], key: str) -> str:
    text = json.dumps([scope.user_id, scope.agent_id, scope.run_id, list(namespace), key], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _record(scope: Scope, row: Mapping[str, Any], score: float | None = None) -> ItemRecord:
    return ItemRecord(
        scope=scope,
        namespace=tuple(row["ns"]),
        key=row["key"],
        value_json=row["value_json"],
        created_at=native(row["created_at"]),
        updated_at=native(row["updated_at"]),
        expires_at=native(row["expires_at"]),
        ttl_minutes=row["ttl_minutes"],
        score=score,
    )


def _conds(where: ItemFilter) -> list[dict[str, str]]:
    return [{"op": c.op, "head": c.head, "entry": c.entry} for c in where.pushed]


class Neo4jItemStore:
    """Implements ``ports.ItemStore`` over the note store's query runner (same pool, errors, resolver)."""

    def __init__(self, runner: Neo4jRunner) -> None:
        self._runner = runner

    async def write_items(
        self, puts: Sequence[ItemWrite], deletes: Sequence[tuple[Scope, tuple[str, ...], str]]
    ) -> None:
        now = utcnow()
        rows = [
            {
                "uid": item_uid(w.scope, w.namespace, w.key),
                **w.scope.params(),
                "ns": list(w.namespace),
                "ns_key": ns_key(w.namespace),
                "key": w.key,
                "value_json": w.value_json,
                "leaves": w.leaves,
                "embedding": w.embedding,
                "ttl_minutes": w.ttl_minutes,
                "expires_at": None if w.ttl_minutes is None else now + timedelta(minutes=w.ttl_minutes),
            }
            for w in puts
        ]
        by_scope: dict[Scope, list[str]] = {}
        for scope, namespace, key in deletes:
            by_scope.setdefault(scope, []).append(item_uid(scope, namespace, key))
        put_q, delete_q = self._runner.query("items/put"), self._runner.query("items/delete")

        async def work(tx: Any) -> None:
            for scope, uids in by_scope.items():
                await (await tx.run(delete_q.text, delete_q.bind(uids=uids, **scope.params()))).consume()
            if rows:
                await (await tx.run(put_q.text, put_q.bind(items=rows, now=now))).consume()

        await self._runner.in_write(work)

    async def get_item(
        self, scope: Scope, namespace: tuple[str, ...], key: str, *, live_at: datetime | None
    ) -> ItemRecord | None:
        rows = await self._runner.run(
            "items/get", uid=item_uid(scope, namespace, key), **scope.params(), live_at=live_at
        )
        return _record(scope, rows[0]["item"]) if rows else None

    async def list_items(
        self,
        scope: Scope,
        prefix: tuple[str, ...],
        where: ItemFilter,
        *,
        skip: int,
        limit: int,
        live_at: datetime | None,
    ) -> list[ItemRecord]:
        rows = await self._runner.run(
            "items/list",
            **scope.params(),
            ns_key=ns_key(prefix),
            conds=_conds(where),
            live_at=live_at,
            skip=skip,
            limit=limit,
        )
        return [_record(scope, r["item"]) for r in rows]

    async def search_items(
        self,
        scope: Scope,
        prefix: tuple[str, ...],
        where: ItemFilter,
        embedding: Sequence[float],
        *,
        skip: int,
        limit: int,
        live_at: datetime | None,
    ) -> list[ItemRecord]:
        rows = await self._runner.run(
            "items/search",
            **scope.params(),
            ns_key=ns_key(prefix),
            conds=_conds(where),
            live_at=live_at,
            embedding=list(embedding),
            skip=skip,
            limit=limit,
        )
        return [_record(scope, r["item"], float(r["score"])) for r in rows]

    async def refresh_items(self, scope: Scope, keys: Sequence[tuple[tuple[str, ...], str]]) -> int:
        if not keys:
            return 0
        uids = [item_uid(scope, ns, key) for ns, key in keys]
        rows = await self._runner.run_write("items/refresh", uids=uids, **scope.params(), now=utcnow())
        return int(rows[0]["refreshed"]) if rows else 0

    async def item_namespaces(
        self,
        scope: Scope,
        *,
        prefix: Sequence[str],
        suffix: Sequence[str],
        max_depth: int | None,
        skip: int,
        limit: int,
        live_at: datetime | None,
    ) -> list[tuple[str, ...]]:
        literal: list[str] = []
        for label in prefix:
            if label == "*":
                break
            literal.append(label)
        rows = await self._runner.run(
            "items/namespaces",
            **scope.params(),
            ns_key=ns_key(literal),
            prefix=list(prefix),
            suffix=list(suffix),
            max_depth=max_depth,
            live_at=live_at,
            skip=skip,
            limit=limit,
        )
        return [tuple(r["ns"]) for r in rows]

    async def item_scopes(
        self, *, parts: Mapping[str, str | None], prefix: tuple[str, ...], skip: int, limit: int
    ) -> list[Scope]:
        rows = await self._runner.run(
            "items/scopes", **{p: parts.get(p) for p in _PARTS}, ns_key=ns_key(prefix), skip=skip, limit=limit
        )
        return [Scope(**r) for r in rows]

    async def sweep_items(self, now: datetime, *, batch: int) -> int:
        rows = await self._runner.run_write("items/sweep", now=now, batch=batch)
        return int(rows[0]["deleted"]) if rows else 0


__all__ = ["Neo4jItemStore", "item_uid", "ns_key"]
