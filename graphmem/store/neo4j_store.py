"""The Neo4j adapter: the only module that talks to the database.

Every query is a named file in ``cypher/`` (see graphmem/queries.py). Writes that belong together
run in one managed transaction (``execute_write``), which the driver retries on transient errors
(deadlocks, leader changes); the transaction functions here are pure database work, so a retry is
safe. LLM calls and embeddings happen before, in the service.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from neo4j import READ_ACCESS, AsyncDriver, AsyncGraphDatabase, AsyncManagedTransaction
from neo4j.exceptions import AuthError, ClientError, Neo4jError, ServiceUnavailable, SessionExpired, TransientError
from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential

from graphmem import queries
from graphmem.config import Settings
from graphmem.errors import ConflictError, StoreUnavailableError
from graphmem.models import (
    FOLLOWS_REASON,
    EnrichmentStatus,
    Link,
    LinkedVia,
    LinkType,
    Note,
    NoteVersion,
    Scope,
    utcnow,
)

log = logging.getLogger(__name__)

# Lucene special characters, escaped in user text before it reaches the full-text index.
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_FETCH = 4096  # above this, the exact in-scope scan is cheaper than a bigger ANN over-fetch
_MAX_FETCH_TEXT = 65536  # full-text rows fetched at most to find k of one scope


def content_sha(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass
class SearchFilters:
    """Optional filters for search; None means 'no filter'."""

    tags_any: list[str] | None = None
    category: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def params(self) -> dict[str, Any]:
        return {"tags_any": self.tags_any, "category": self.category, "since": self.since, "until": self.until}


@dataclass
class NeighbourUpdate:
    """A validated evolution of one neighbour, ready to write (embedding already computed)."""

    note_id: str
    context: str
    tags: list[str]
    keywords: list[str]
    embedding: list[float]


@dataclass
class LinkedNote:
    from_id: str
    via: LinkedVia
    note: Note


@dataclass
class AddWrite:
    """Everything one A-MEM add writes, in one transaction."""

    note: Note
    embedding: list[float]
    links: list[Link] = field(default_factory=list)
    updates: list[NeighbourUpdate] = field(default_factory=list)
    variant: str = "full"


def _native(value: Any) -> Any:
    if isinstance(value, str):  # search queries return temporals as ISO strings (see cypher/search/vector)
        return datetime.fromisoformat(value.split("[", 1)[0])  # drop a named zone; the offset stays
    if hasattr(value, "to_native"):
        return value.to_native()
    return value


def note_from_record(rec: dict[str, Any]) -> Note:
    metadata_json = rec.get("metadata_json")
    return Note(
        id=rec["id"],
        content=rec["content"],
        scope=Scope(user_id=rec["user_id"], agent_id=rec["agent_id"], run_id=rec["run_id"]),
        event_time=_native(rec.get("event_time")),
        event_time_text=rec.get("event_time_text"),
        created_at=_native(rec["created_at"]),
        updated_at=_native(rec["updated_at"]),
        keywords=list(rec.get("keywords") or []),
        tags=list(rec.get("tags") or []),
        context=rec.get("context") or "",
        category=rec.get("category"),
        source_id=rec.get("source_id"),
        metadata=json.loads(metadata_json) if metadata_json else {},
        enrichment=EnrichmentStatus(rec.get("enrichment") or "done"),
        retrieval_count=rec.get("retrieval_count") or 0,
        last_accessed=_native(rec.get("last_accessed")),
        version=rec.get("version") or 1,
        embedding=list(rec["embedding"]) if rec.get("embedding") is not None else None,
    )


def note_params(note: Note, embed_text_variant: str) -> dict[str, Any]:
    """Note -> the property map the create queries read (explicit fields, never `SET n = $map`)."""
    p = note.scope.params()
    return {
        "id": note.id,
        "content": note.content,
        "content_sha": content_sha(note.content),
        **p,
        "event_time": note.event_time,
        "event_time_text": note.event_time_text,
        "created_at": note.created_at,
        "updated_at": note.updated_at,
        "keywords": note.keywords,
        "tags": note.tags,
        "context": note.context,
        "category": note.category,
        "source_id": note.source_id,
        "metadata_json": json.dumps(note.metadata, sort_keys=True) if note.metadata else None,
        "enrichment": note.enrichment.value,
        "embed_text_variant": embed_text_variant,
        "version": note.version,
        "retrieval_count": note.retrieval_count,
        "last_accessed": note.last_accessed,
    }


def _link_row(link: Link) -> dict[str, Any]:
    return {
        "target_id": link.target_id,
        "type": link.type.value,
        "reason": link.reason,
        "strength": link.strength,
        "created_at": link.created_at,
        "caused_by": link.caused_by,
    }


def lucene_query(text: str, max_terms: int = 32) -> str | None:
    """OR of escaped words: user text never reaches Lucene's query syntax unescaped."""
    words = _WORD.findall(text)[:max_terms]
    if not words:
        return None
    return " OR ".join(_LUCENE_SPECIAL.sub(r"\\\1", w) for w in words)


# Not the caller's fault and not worth a driver stack trace: transient failures that outlived the
# driver's retries (e.g. DatabaseUnavailable while the server starts or stops), and transactions the
# server terminated (shutdown, time limit), which the driver reports as ClientError and never retries.
_UNAVAILABLE = (ServiceUnavailable, SessionExpired, AuthError, TransientError, OSError)
_TERMINATED = frozenset(
    {
        "Neo.ClientError.Transaction.Terminated",
        "Neo.ClientError.Transaction.LockClientStopped",
        "Neo.ClientError.Transaction.TransactionTimedOut",
        "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
    }
)


def _unavailable(exc: Exception) -> bool:
    if isinstance(exc, _UNAVAILABLE):
        return True
    return isinstance(exc, Neo4jError) and exc.code in _TERMINATED


def _retryable(exc: BaseException) -> bool:
    """What the driver retries in a managed transaction: lost connections and retryable transients."""
    if isinstance(exc, (ServiceUnavailable, SessionExpired)):
        return True
    return isinstance(exc, TransientError) and bool(getattr(exc, "is_retryable", lambda: True)())


def _friendly(exc: Exception, uri: str) -> StoreUnavailableError:
    if isinstance(exc, (TransientError, Neo4jError)) and not isinstance(exc, AuthError):
        return StoreUnavailableError(
            f"Neo4j at {uri} could not serve the request ({exc.code}: the database is starting, stopping or "
            f"overloaded; the driver retried for up to 15 s). Retry later; check the server with "
            f"`graphmem neo4j status` (NEO4J_URI)"
        )
    if isinstance(exc, AuthError):
        return StoreUnavailableError(
            f"Neo4j at {uri} refused the credentials (check NEO4J_USERNAME / NEO4J_PASSWORD): {exc.message}"
        )
    return StoreUnavailableError(
        f"cannot reach Neo4j at {uri} (check NEO4J_URI, or start one with `graphmem neo4j start`): "
        f"{type(exc).__name__}: {exc}"
    )


class Neo4jNoteStore:
    """Async note store over the neo4j driver. Construct with `from_settings`; no I/O in __init__."""

    def __init__(self, driver: AsyncDriver, database: str, uri: str = "") -> None:
        self._driver = driver
        self._db = database
        self._uri = uri

    @classmethod
    def from_settings(cls, settings: Settings) -> Neo4jNoteStore:
        from graphmem import __version__

        driver = AsyncGraphDatabase.driver(
            settings.neo4j_uri,
            auth=settings.neo4j_auth,
            connection_timeout=settings.neo4j_connect_timeout,
            user_agent=f"graphmem/{__version__}",
            # Fail fast when Neo4j is down instead of the driver's default 30 s retry budget;
            # the service surfaces a clear error and the next call reconnects by itself.
            max_transaction_retry_time=5.0,
            # Unknown-label/property warnings on a young database are noise, not news.
            notifications_min_severity="OFF",
        )
        return cls(driver, settings.neo4j_database, settings.neo4j_uri)

    async def close(self) -> None:
        await self._driver.close()

    # --- plumbing -------------------------------------------------------------------------------

    async def _read(self, fn: Any, *args: Any) -> Any:
        try:
            async with self._driver.session(database=self._db) as session:
                return await session.execute_read(fn, *args)
        except Exception as exc:
            if _unavailable(exc):
                raise _friendly(exc, self._uri) from exc
            raise

    async def _write(self, fn: Any, *args: Any) -> Any:
        try:
            async with self._driver.session(database=self._db) as session:
                return await session.execute_write(fn, *args)
        except Exception as exc:
            if _unavailable(exc):
                raise _friendly(exc, self._uri) from exc
            raise

    async def _query(self, query_name: str, /, **params: Any) -> list[dict[str, Any]]:
        """One read-only statement in an auto-commit transaction, for the search path.

        A managed transaction costs two round trips (BEGIN+RUN+PULL, then COMMIT); this costs one,
        about 0.7 ms of a 4 ms vector search. Lost connections and retryable transients are retried
        for up to 5 s, as the driver retries managed transactions (max_transaction_retry_time).
        """
        q = queries.load(query_name)
        try:
            async for attempt in AsyncRetrying(
                retry=retry_if_exception(_retryable),
                stop=stop_after_delay(5.0),
                wait=wait_exponential(multiplier=0.1, max=1.0),
                reraise=True,
            ):
                with attempt:
                    async with self._driver.session(database=self._db, default_access_mode=READ_ACCESS) as session:
                        result = await session.run(q.text, q.bind(**params))
                        return [r.data() for r in await result.fetch(1_000_000)]
        except Exception as exc:
            if _unavailable(exc):
                raise _friendly(exc, self._uri) from exc
            raise
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    @staticmethod
    async def _run(tx: AsyncManagedTransaction, query_name: str, /, **params: Any) -> list[dict[str, Any]]:
        q = queries.load(query_name)
        result = await tx.run(q.text, q.bind(**params))
        return [r.data() for r in await result.fetch(1_000_000)]

    async def verify(self) -> dict[str, str]:
        """Connect and return the server version; raise StoreUnavailableError with a clear message."""
        try:
            await self._driver.verify_connectivity()
        except (ServiceUnavailable, SessionExpired, AuthError, OSError, ValueError) as exc:
            raise _friendly(exc, self._uri) from exc
        rows = await self._read(lambda tx: self._run(tx, "schema/server_version"))
        return {"name": rows[0]["name"], "version": rows[0]["version"], "edition": rows[0]["edition"]}

    # --- schema ---------------------------------------------------------------------------------

    async def run_schema_statement(self, text: Any, params: dict[str, Any]) -> None:
        """Schema statements run in auto-commit transactions (index creation cannot share a transaction)."""
        try:
            async with self._driver.session(database=self._db) as session:
                result = await session.run(text, params)
                await result.consume()
        except Exception as exc:
            if _unavailable(exc):
                raise _friendly(exc, self._uri) from exc
            raise

    async def vector_index_info(self) -> dict[str, Any] | None:
        rows = await self._read(lambda tx: self._run(tx, "schema/vector_index", name="note_embedding"))
        return rows[0] if rows else None

    async def await_indexes(self, seconds: int) -> None:
        q = queries.load("schema/await")
        await self.run_schema_statement(q.text, q.bind(seconds=seconds))

    # --- writes ---------------------------------------------------------------------------------

    async def add(self, write: AddWrite) -> tuple[bool, list[Link], dict[str, int]]:
        """Write a note with its links and neighbour evolutions in ONE transaction.

        Returns (created, links written, {neighbour id: new version}). When the id already exists in
        this scope nothing is written (idempotent add); in another scope, ConflictError.
        """
        scope = write.note.scope.params()
        now = utcnow()

        async def work(tx: AsyncManagedTransaction) -> tuple[bool, list[Link], dict[str, int]]:
            rows = await self._run(
                tx,
                "notes/create",
                note=note_params(write.note, write.variant),
                embedding=write.embedding,
            )
            row = rows[0]
            if not row["created"]:
                if (row["user_id"], row["agent_id"], row["run_id"]) != tuple(scope.values()):
                    raise ConflictError(f"note id {write.note.id!r} is already in use")
                return False, [], {}
            versions: dict[str, int] = {}
            for upd in write.updates:
                vrows = await self._run(
                    tx,
                    "evolution/update_neighbour",
                    id=upd.note_id,
                    **scope,
                    uid=uuid.uuid4().hex,
                    now=now,
                    caused_by=write.note.id,
                    context=upd.context,
                    tags=upd.tags,
                    keywords=upd.keywords,
                    embedding=upd.embedding,
                )
                if vrows:
                    versions[upd.note_id] = vrows[0]["version"]
            written: list[Link] = []
            if write.links:
                lrows = await self._run(
                    tx,
                    "links/create",
                    source_id=write.note.id,
                    **scope,
                    links=[_link_row(l) for l in write.links],
                    now=now,
                    caused_by=write.note.id,
                )
                done = {(r["target_id"], r["type"]) for r in lrows}
                written = [
                    l.model_copy(update={"created_at": now, "caused_by": write.note.id})
                    for l in write.links
                    if (l.target_id, l.type.value) in done
                ]
            return True, written, versions

        result: tuple[bool, list[Link], dict[str, int]] = await self._write(work)
        return result

    async def add_many(self, notes: Sequence[Note], embeddings: Sequence[Sequence[float]], variant: str) -> list[str]:
        """Bulk raw import in one transaction per call; returns the ids created (existing ids are skipped)."""
        rows = []
        for note, emb in zip(notes, embeddings, strict=True):
            p = note_params(note, variant)
            p["embedding"] = list(emb)
            rows.append(p)

        async def work(tx: AsyncManagedTransaction) -> tuple[list[str], list[dict[str, str]]]:
            out = await self._run(tx, "notes/create_many", rows=rows)
            if not out:
                return [], []
            return out[0]["created_ids"], out[0]["skipped"]

        created, skipped = await self._write(work)
        for s in skipped:
            note = next(n for n in notes if n.id == s["id"])
            if (s["user_id"], s["agent_id"], s["run_id"]) != tuple(note.scope.params().values()):
                raise ConflictError(f"note id {s['id']!r} is already in use")
        return list(created)

    async def add_follows(
        self,
        pairs: Sequence[tuple[str, str]],
        scope: Scope,
        *,
        reason: str = FOLLOWS_REASON,
        strength: float = 1.0,
        batch: int = 5000,
    ) -> int:
        """FOLLOWS links (source after target) inside the scope, in bounded transactions; idempotent
        (MERGE). Returns the number written; a pair whose notes are not both in the scope writes nothing."""
        total = 0
        now = utcnow()
        for start in range(0, len(pairs), batch):
            chunk = [{"source_id": s, "target_id": t} for s, t in pairs[start : start + batch]]
            params = {"pairs": chunk, **scope.params(), "now": now, "reason": reason, "strength": strength}
            rows = await self._write(lambda tx, p=params: self._run(tx, "links/follows_many", **p))
            total += int(rows[0]["created"]) if rows else 0
        return total

    async def revise(
        self,
        note_id: str,
        scope: Scope,
        *,
        content: str,
        context: str,
        tags: list[str],
        keywords: list[str],
        enrichment: EnrichmentStatus,
        embedding: list[float],
        changed_by: str,
    ) -> int | None:
        async def work(tx: AsyncManagedTransaction) -> int | None:
            rows = await self._run(
                tx,
                "notes/revise",
                id=note_id,
                **scope.params(),
                uid=uuid.uuid4().hex,
                now=utcnow(),
                changed_by=changed_by,
                content=content,
                content_sha=content_sha(content),
                context=context,
                tags=tags,
                keywords=keywords,
                enrichment=enrichment.value,
                embedding=embedding,
            )
            return rows[0]["version"] if rows else None

        result: int | None = await self._write(work)
        return result

    async def create_links(self, source_id: str, scope: Scope, links: Sequence[Link], caused_by: str) -> list[Link]:
        now = utcnow()

        async def work(tx: AsyncManagedTransaction) -> list[dict[str, Any]]:
            return await self._run(
                tx,
                "links/create",
                source_id=source_id,
                **scope.params(),
                links=[_link_row(l) for l in links],
                now=now,
                caused_by=caused_by,
            )

        rows = await self._write(work)
        done = {(r["target_id"], r["type"]) for r in rows}
        return [
            l.model_copy(update={"created_at": l.created_at or now, "caused_by": l.caused_by or caused_by})
            for l in links
            if (l.target_id, l.type.value) in done
        ]

    async def delete(self, note_id: str, scope: Scope) -> bool:
        rows = await self._write(lambda tx: self._run(tx, "notes/delete", id=note_id, **scope.params()))
        return bool(rows and rows[0]["deleted"])

    async def touch(self, counts: Mapping[str, int], scope: Scope) -> None:
        """Add to the notes' retrieval counts (id -> times retrieved) and set last_accessed."""
        hits = [{"id": i, "times": n} for i, n in counts.items()]
        await self._write(lambda tx: self._run(tx, "notes/touch", hits=hits, **scope.params(), now=utcnow()))

    # --- reads ----------------------------------------------------------------------------------

    async def get(self, note_id: str, scope: Scope, *, with_embedding: bool = False) -> Note | None:
        name = "notes/get_with_embedding" if with_embedding else "notes/get"
        rows = await self._read(lambda tx: self._run(tx, name, id=note_id, **scope.params()))
        return note_from_record(rows[0]["note"]) if rows else None

    async def scope_of(self, note_id: str) -> Scope | None:
        rows = await self._read(lambda tx: self._run(tx, "notes/scope_of", id=note_id))
        return Scope(**rows[0]) if rows else None

    async def find_by_content(self, content: str, scope: Scope) -> str | None:
        rows = await self._read(
            lambda tx: self._run(tx, "notes/find_by_content", content_sha=content_sha(content), **scope.params())
        )
        return rows[0]["id"] if rows else None

    async def find_by_source(self, source_ids: Sequence[str], scope: Scope) -> dict[str, str]:
        rows = await self._read(
            lambda tx: self._run(tx, "notes/find_by_source", source_ids=list(source_ids), **scope.params())
        )
        return {r["source_id"]: r["id"] for r in rows}

    async def list_notes(self, scope: Scope, *, limit: int, offset: int) -> list[Note]:
        rows = await self._read(lambda tx: self._run(tx, "notes/list", **scope.params(), skip=offset, limit=limit))
        return [note_from_record(r["note"]) for r in rows]

    async def export(self, scope: Scope, *, limit: int, offset: int) -> list[tuple[Note, list[Link]]]:
        rows = await self._read(lambda tx: self._run(tx, "notes/export", **scope.params(), skip=offset, limit=limit))
        out = []
        for r in rows:
            note = note_from_record(r["note"])
            links = [
                Link(
                    source_id=note.id,
                    target_id=l["target_id"],
                    type=LinkType(l["type"]),
                    reason=l["reason"] or "",
                    strength=l["strength"] if l["strength"] is not None else 0.5,
                    created_at=_native(l["created_at"]),
                    caused_by=l["caused_by"],
                )
                for l in r["links"]
            ]
            out.append((note, links))
        return out

    async def count(self, scope: Scope) -> int:
        rows = await self._read(lambda tx: self._run(tx, "notes/count", **scope.params()))
        return int(rows[0]["count"])

    async def pending(self, scope: Scope, limit: int) -> list[str]:
        rows = await self._read(lambda tx: self._run(tx, "notes/pending", **scope.params(), limit=limit))
        return [r["id"] for r in rows]

    async def history(self, note_id: str, scope: Scope) -> list[NoteVersion]:
        rows = await self._read(lambda tx: self._run(tx, "notes/history", id=note_id, **scope.params()))
        return [
            NoteVersion(
                version=v["version"],
                content=v["content"],
                context=v["context"] or "",
                tags=list(v["tags"] or []),
                keywords=list(v["keywords"] or []),
                replaced_at=_native(v["replaced_at"]),
                changed_by=v["changed_by"],
            )
            for v in (r["version"] for r in rows)
        ]

    async def links(self, note_id: str, scope: Scope) -> list[Link]:
        rows = await self._read(lambda tx: self._run(tx, "links/of_note", id=note_id, **scope.params()))
        return [
            Link(
                source_id=r["source_id"],
                target_id=r["target_id"],
                type=LinkType(r["type"]),
                reason=r["reason"] or "",
                strength=r["strength"] if r["strength"] is not None else 0.5,
                created_at=_native(r["created_at"]),
                caused_by=r["caused_by"],
            )
            for r in rows
        ]

    async def scopes(self, user_id: str | None, limit: int = 10_000) -> list[Scope]:
        rows = await self._read(lambda tx: self._run(tx, "admin/scopes", user_id=user_id, limit=limit))
        return [Scope(**r) for r in rows]

    async def note_count(self) -> int:
        rows = await self._read(lambda tx: self._run(tx, "admin/health"))
        return int(rows[0]["notes"])

    async def vector_search(
        self,
        embedding: Sequence[float],
        scope: Scope,
        k: int,
        *,
        exclude_ids: Sequence[str] = (),
        filters: SearchFilters | None = None,
        over_fetch: int = 4,
    ) -> list[tuple[Note, float]]:
        """Top-k by cosine inside the scope: HNSW with growing over-fetch, exact scan as the last resort."""
        if k <= 0:
            return []
        f = (filters or SearchFilters()).params()
        base = {"embedding": list(embedding), "k": k, **scope.params(), "exclude_ids": list(exclude_ids), **f}
        fetch_k = max(k * over_fetch, k + len(exclude_ids))
        while fetch_k <= _MAX_FETCH:
            rows = await self._query("search/vector", fetch_k=fetch_k, **base)
            hits = rows[0]["hits"]
            # Enough hits, or the index has no more to give: done.
            if len(hits) >= k or rows[0]["fetched"] < fetch_k:
                return [(note_from_record(h["note"]), float(h["cosine"])) for h in hits]
            fetch_k *= 4
        rows = await self._query("search/vector_exact", **base)
        return [(note_from_record(r["note"]), float(r["cosine"])) for r in rows]

    async def vector_search_linked(
        self,
        embedding: Sequence[float],
        scope: Scope,
        k: int,
        per_hit: int,
        *,
        filters: SearchFilters | None = None,
        over_fetch: int = 4,
    ) -> tuple[list[tuple[Note, float]], list[LinkedNote]]:
        """``vector_search`` and ``expand_links`` of its hits in one round trip (the one-hop search mode)."""
        if k <= 0:
            return [], []
        f = (filters or SearchFilters()).params()
        base = {"embedding": list(embedding), "k": k, **scope.params(), "exclude_ids": [], **f}
        fetch_k = k * over_fetch
        while fetch_k <= _MAX_FETCH:
            rows = await self._query("search/vector_links", fetch_k=fetch_k, per_hit=per_hit, **base)
            hits = rows[0]["hits"]
            if len(hits) >= k or rows[0]["fetched"] < fetch_k:  # the query expanded them: top-k is final
                notes = [(note_from_record(h["note"]), float(h["cosine"])) for h in hits]
                return notes, [_linked_note(r) for r in rows[0]["linked"]]
            fetch_k *= 4
        rows = await self._query("search/vector_exact", **base)
        notes = [(note_from_record(r["note"]), float(r["cosine"])) for r in rows]
        ids = [n.id for n, _ in notes]
        return notes, await self.expand_links(ids, scope, per_hit, exclude_ids=ids)

    async def fulltext_search(
        self, text: str, scope: Scope, k: int, *, filters: SearchFilters | None = None, over_fetch: int = 4
    ) -> list[tuple[Note, float]]:
        lucene = lucene_query(text)
        if lucene is None or k <= 0:
            return []
        f = (filters or SearchFilters()).params()
        fetch_k = k * over_fetch * 4
        while True:
            try:
                rows = await self._query("search/fulltext", lucene=lucene, fetch_k=fetch_k, k=k, **scope.params(), **f)
            except ClientError as exc:  # a query Lucene still cannot parse: no full-text hits, not a crash
                log.warning("full-text query rejected: %s", exc.code)
                return []
            hits = rows[0]["hits"]
            # Enough hits, the index has no more matches, or so many other-scope matches that a
            # bigger fetch costs more than the hits are worth (vector search still covers the scope).
            if len(hits) >= k or rows[0]["fetched"] < fetch_k or fetch_k >= _MAX_FETCH_TEXT:
                return [(note_from_record(h["note"]), float(h["score"])) for h in hits]
            fetch_k *= 4

    async def expand_links(
        self, ids: Sequence[str], scope: Scope, per_hit: int, exclude_ids: Sequence[str]
    ) -> list[LinkedNote]:
        if not ids or per_hit <= 0:
            return []
        rows = await self._query(
            "search/expand_links", ids=list(ids), **scope.params(), per_hit=per_hit, exclude_ids=list(exclude_ids)
        )
        return [_linked_note(r) for r in rows]


def _linked_note(r: Mapping[str, Any]) -> LinkedNote:
    return LinkedNote(
        from_id=r["from_id"],
        via=LinkedVia(
            from_id=r["from_id"],
            type=LinkType(r["type"]),
            reason=r["reason"] or "",
            strength=r["strength"] if r["strength"] is not None else 0.5,
        ),
        note=note_from_record(r["note"]),
    )


__all__ = [
    "AddWrite",
    "LinkedNote",
    "NeighbourUpdate",
    "Neo4jNoteStore",
    "SearchFilters",
    "content_sha",
    "lucene_query",
    "note_from_record",
]
