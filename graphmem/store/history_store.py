"""Chat message histories in Neo4j, beside the notes (queries in ``cypher/history/``).

Graph shape: ``(:ChatSession {key, session_id, scope, next_seq})-[:HAS_MESSAGE]->(:ChatMessage {seq,
type, data_json, scope})``. Messages are stored whole, as the JSON of LangChain's ``message_to_dict``
(tool calls, ids, content blocks, metadata kept), so a history reads back exactly as written, with no
size limit other than Neo4j's. They are not notes: they are not embedded, searched or evolved.
Every node carries ``user_id``, ``agent_id``, ``run_id`` and every query matches all three.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from neo4j import AsyncManagedTransaction

from graphmem import queries
from graphmem.models import Scope, check_id, utcnow
from graphmem.store.neo4j_store import Neo4jNoteStore, _native

_ALL = 1_000_000_000  # "no window": LIMIT needs a number


@dataclass
class StoredMessage:
    type: str
    data_json: str


@dataclass
class SessionInfo:
    session_id: str
    messages: int
    created_at: datetime | None
    updated_at: datetime | None


def session_key(scope: Scope, session_id: str) -> str:
    """Scope parts and session ids cannot contain '/', so the key is unambiguous."""
    return f"{scope}/{session_id}"


class Neo4jHistoryStore:
    """Message histories over the note store's driver (same connection pool, same error mapping)."""

    def __init__(self, notes: Neo4jNoteStore) -> None:
        self._notes = notes
        self._schema_ready = False
        self._schema_lock: asyncio.Lock | None = None

    async def ensure_schema(self) -> None:
        """Create the history constraint and indexes once (idempotent)."""
        if self._schema_ready:
            return
        if self._schema_lock is None:
            self._schema_lock = asyncio.Lock()
        async with self._schema_lock:
            if self._schema_ready:
                return
            for statement in queries.statements("history/schema"):
                await self._notes.run_schema_statement(statement, {})
            self._schema_ready = True

    @staticmethod
    def _check(scope: Scope, session_id: str) -> str:
        check_id(session_id, "session_id")
        return session_key(scope, session_id)

    async def append(self, scope: Scope, session_id: str, messages: Sequence[StoredMessage]) -> int:
        """Append in order; returns the sequence number of the first one (-1 when nothing was given)."""
        key = self._check(scope, session_id)
        if not messages:
            return -1
        await self.ensure_schema()
        rows_in = [{"type": m.type, "data_json": m.data_json} for m in messages]

        async def work(tx: AsyncManagedTransaction) -> list[dict[str, Any]]:
            return await self._notes._run(
                tx,
                "history/append",
                key=key,
                session_id=session_id,
                **scope.params(),
                now=utcnow(),
                messages=rows_in,
            )

        rows = await self._notes._write(work)
        return int(rows[0]["first"]) if rows else -1

    async def messages(self, scope: Scope, session_id: str, *, last: int | None = None) -> list[str]:
        """The serialised messages (``message_to_dict`` JSON), oldest first; `last` keeps only the newest N."""
        key = self._check(scope, session_id)
        await self.ensure_schema()
        limit = _ALL if last is None else max(0, last)
        rows = await self._notes._read(
            lambda tx: self._notes._run(tx, "history/messages", key=key, **scope.params(), limit=limit)
        )
        return [r["data_json"] for r in rows]

    async def clear(self, scope: Scope, session_id: str) -> int:
        key = self._check(scope, session_id)
        await self.ensure_schema()
        rows = await self._notes._write(lambda tx: self._notes._run(tx, "history/clear", key=key, **scope.params()))
        return int(rows[0]["deleted"]) if rows else 0

    async def sessions(self, scope: Scope, *, limit: int = 100) -> list[SessionInfo]:
        await self.ensure_schema()
        rows = await self._notes._read(
            lambda tx: self._notes._run(tx, "history/sessions", **scope.params(), limit=limit)
        )
        return [
            SessionInfo(
                session_id=r["session_id"],
                messages=int(r["messages"] or 0),
                created_at=_native(r["created_at"]),
                updated_at=_native(r["updated_at"]),
            )
            for r in rows
        ]


def history_store_for(notes: Neo4jNoteStore) -> Neo4jHistoryStore:
    """One history store per note store (schema check done once per process and database)."""
    existing = getattr(notes, "_graphmem_history", None)
    if isinstance(existing, Neo4jHistoryStore):
        return existing
    store = Neo4jHistoryStore(notes)
    notes._graphmem_history = store  # type: ignore[attr-defined]
    return store
