"""Chat message histories in Neo4j, beside the notes (queries in ``cypher/chat/``).

Graph shape: ``(:ChatSession {key, session_id, scope, next_seq, last_note})-[:HAS_MESSAGE]->(:ChatMessage {seq,
type, data_json, scope})``. Messages are stored whole, as the JSON of LangChain's ``message_to_dict``
(tool calls, ids, content blocks, metadata kept), so a history reads back exactly as written, with no
size limit other than Neo4j's. They are not notes: they are not embedded, searched or evolved.
Every node carries ``user_id``, ``agent_id``, ``run_id`` and every query matches all three.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence

from graphmem.models import ID_PATTERN, Scope, SessionInfo, StoredMessage, check_session_id, utcnow
from graphmem.store.records import session_from_record
from graphmem.store.runner import Neo4jRunner

_ALL = 1_000_000_000  # "no window": LIMIT needs a number
_ID_RE = re.compile(ID_PATTERN)


def session_key(scope: Scope, session_id: str) -> str:
    """The session's unique key. Scope parts contain no '/', so ``scope/`` is unambiguous; a session
    id that is a graphmem id follows as it is (the keys of databases written before free-text ids),
    any other after '~' (never in an id) as its SHA-256, so the key stays short enough to index."""
    if _ID_RE.fullmatch(session_id):
        return f"{scope}/{session_id}"
    return f"{scope}/~{hashlib.sha256(session_id.encode('utf-8')).hexdigest()}"


class Neo4jHistoryStore:
    """Implements ``ports.HistoryStore`` over the query runner the note store is built on (same
    connection pool, same error mapping, same query resolver)."""

    def __init__(self, runner: Neo4jRunner) -> None:
        self._runner = runner
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
            for statement in self._runner.statements("chat/schema"):
                await self._runner.run_schema(statement)
            self._schema_ready = True

    @staticmethod
    def _check(scope: Scope, session_id: str) -> str:
        check_session_id(session_id)
        return session_key(scope, session_id)

    async def append(self, scope: Scope, session_id: str, messages: Sequence[StoredMessage]) -> int:
        """Append in order; returns the sequence number of the first one (-1 when nothing was given)."""
        key = self._check(scope, session_id)
        if not messages:
            return -1
        await self.ensure_schema()
        rows = await self._runner.run_write(
            "chat/append",
            key=key,
            session_id=session_id,
            **scope.params(),
            now=utcnow(),
            messages=[{"type": m.type, "data_json": m.data_json} for m in messages],
        )
        return int(rows[0]["first"]) if rows else -1

    async def messages(self, scope: Scope, session_id: str, *, last: int | None = None) -> list[str]:
        """The serialised messages (``message_to_dict`` JSON), oldest first; `last` keeps only the newest N."""
        key = self._check(scope, session_id)
        await self.ensure_schema()
        limit = _ALL if last is None else min(max(0, last), _ALL)  # bounded: Neo4j's LIMIT is a 64-bit long
        rows = await self._runner.run("chat/messages", key=key, **scope.params(), limit=limit)
        return [r["data_json"] for r in rows]

    async def last_note(self, scope: Scope, session_id: str) -> str | None:
        """The id of the note the session's newest remembered message became (None: none yet)."""
        key = self._check(scope, session_id)
        await self.ensure_schema()
        rows = await self._runner.run("chat/last_note", key=key, **scope.params())
        return rows[0]["note_id"] if rows else None

    async def set_last_note(self, scope: Scope, session_id: str, note_id: str) -> None:
        key = self._check(scope, session_id)
        await self.ensure_schema()
        await self._runner.run_write("chat/set_last_note", key=key, **scope.params(), note_id=note_id)

    async def clear(self, scope: Scope, session_id: str) -> int:
        key = self._check(scope, session_id)
        await self.ensure_schema()
        rows = await self._runner.run_write("chat/clear", key=key, **scope.params())
        return int(rows[0]["deleted"]) if rows else 0

    async def sessions(self, scope: Scope, *, limit: int = 100) -> list[SessionInfo]:
        await self.ensure_schema()
        rows = await self._runner.run("chat/sessions", **scope.params(), limit=min(max(0, limit), _ALL))
        return [session_from_record(r) for r in rows]
