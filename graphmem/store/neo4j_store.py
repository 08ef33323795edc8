"""The Neo4j adapter: implements ``ports.NoteStore``; with ``history_store`` the only code that
runs queries against the database.

Every query is a named file in ``cypher/``, resolved in one place (``Neo4jNoteStore.query``): at
``verify`` the store learns the server's version, its query line (``5.26`` or ``2026``) and the
database's default Cypher language, and resolves every name once to that line's file
(``name.2026.cypher`` beside ``name.cypher``, see ``queries``). Scoped vector searches then filter
inside the index on 2026, and over-fetch (or scan a small scope exactly) on 5.26. Writes that belong together run in one managed transaction
(``execute_write``), which the driver retries on transient errors (deadlocks, leader changes); the
transaction functions here are pure database work, so a retry is safe. LLM calls and embeddings
happen before, in the service. Records are mapped in ``records.py``, driver failures in
``errors.py``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from neo4j import READ_ACCESS, AsyncDriver, AsyncGraphDatabase, AsyncManagedTransaction, Record
from neo4j.exceptions import ClientError
from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential

from graphmem import queries
from graphmem._version import __version__
from graphmem.config import Settings
from graphmem.errors import StaleWriteError
from graphmem.models import (
    FOLLOWS_REASON,
    AddEffects,
    AddOutcome,
    AddWrite,
    EnrichmentStatus,
    Link,
    LinkedNote,
    Note,
    NoteState,
    NoteVersion,
    Restore,
    Scope,
    SearchFilters,
    TextMatch,
    UndoOutcome,
    UndoWrite,
    utcnow,
)
from graphmem.queries import Query
from graphmem.store.errors import Target, retryable, translate_errors
from graphmem.store.fulltext import lucene_of, lucene_query, query_terms
from graphmem.store.records import (
    content_sha,
    evolution_from_record,
    filter_params,
    link_from_record,
    link_row,
    linked_note_from_record,
    note_from_record,
    note_params,
    state_from_record,
    version_from_record,
)
from graphmem.timeline import TimelineEntry, TimelineRow

log = logging.getLogger(__name__)

T = TypeVar("T")
Rows = list[dict[str, Any]]
QueryTable = Callable[[queries.QueryLine], Mapping[str, Query]]

_MAX_FETCH = 4096  # above this, the exact in-scope scan is cheaper than a bigger ANN over-fetch
IN_INDEX_OVER_FETCH = 3  # 2026: SEARCH's LIMIT as a multiple of k (recall@10 >= 0.99 at 100k, docs/neo4j-2026.md)
EXACT_SCAN_MAX = 2000  # 5.26: a scope this small is scanned exactly once the first over-fetch came back short
_MAX_FETCH_TEXT = 65536  # full-text rows fetched at most to find k of one scope
# Notes of a scope read to estimate how common a query word is there (a share: a sample does).
_WORD_SHARE_SAMPLE = 1000
# A word in fewer of them is never common: in a small scope one or two notes are already a large
# share, and such a word still tells them apart.
_COMMON_MIN_NOTES = 3
_YIELD_EVERY = 32  # records mapped between two yields to the event loop (a few ms of work)
_READ_RETRY_S = 5.0  # as long as the driver retries managed transactions (max_transaction_retry_time)


class Neo4jNoteStore:
    """Async note store over the neo4j driver. Construct with `from_settings`; no I/O in __init__.

    Args:
        driver: an async driver this store owns (``close`` closes it).
        database: the database every session uses.
        uri: for error messages.
        resolve: query line -> {name: Query} (default: ``queries.for_line``, the files in ``cypher/``).
    """

    def __init__(
        self,
        driver: AsyncDriver,
        database: str,
        uri: str = "",
        *,
        username: str | None = None,
        resolve: QueryTable = queries.for_line,
        in_index_over_fetch: int = IN_INDEX_OVER_FETCH,
        exact_scan_max: int = EXACT_SCAN_MAX,
    ) -> None:
        self._driver = driver
        self._db = database
        self._target = Target(uri=uri, username=username, database=database)
        self._resolve = resolve
        # Until verify() learns the server, names resolve to the base (5.26) files.
        self._line: queries.QueryLine | None = None
        self._by_name: Mapping[str, Query] | None = None
        self._server: dict[str, str] | None = None
        self._in_index_over_fetch = in_index_over_fetch
        self._exact_scan_max = exact_scan_max

    @classmethod
    def from_settings(cls, settings: Settings) -> Neo4jNoteStore:
        driver = AsyncGraphDatabase.driver(
            settings.neo4j_uri,
            auth=settings.neo4j_auth,
            connection_timeout=settings.neo4j_connect_timeout,
            user_agent=f"graphmem/{__version__}",
            # Fail fast when Neo4j is down instead of the driver's default 30 s retry budget;
            # the service surfaces a clear error and the next call reconnects by itself.
            max_transaction_retry_time=_READ_RETRY_S,
            # Unknown-label/property warnings on a young database are noise, not news.
            notifications_min_severity="OFF",
        )
        username = settings.neo4j_username if settings.neo4j_auth else None
        return cls(
            driver,
            settings.neo4j_database,
            settings.neo4j_uri,
            username=username,
            in_index_over_fetch=settings.in_index_over_fetch,
            exact_scan_max=settings.exact_scan_max_notes,
        )

    async def close(self) -> None:
        await self._driver.close()

    # --- running named queries ------------------------------------------------------------------

    def query(self, name: str) -> Query:
        """The one place a query name becomes Cypher text: the server line's file once ``verify`` ran."""
        if self._by_name is not None:
            try:
                return self._by_name[name]
            except KeyError:
                raise FileNotFoundError(f"no Cypher query named {name!r}") from None
        return queries.load(name)

    @property
    def line(self) -> queries.QueryLine | None:
        """The server's query line (``5.26`` or ``2026``), known after ``verify``."""
        return self._line

    def statements(self, name: str) -> list[Query]:
        """The statements of a multi-statement file (``schema``), each with its own parameters."""
        return queries.split(self.query(name))

    @staticmethod
    async def _rows(tx: AsyncManagedTransaction, q: Query, params: Mapping[str, Any]) -> Rows:
        result = await tx.run(q.text, q.bind(**params))
        return _plain(await result.fetch(1_000_000))

    async def _in_read(self, work: Callable[[AsyncManagedTransaction], Awaitable[T]]) -> T:
        with translate_errors(self._target):
            async with self._driver.session(database=self._db) as session:
                return await session.execute_read(work)

    async def _in_write(self, work: Callable[[AsyncManagedTransaction], Awaitable[T]]) -> T:
        with translate_errors(self._target):
            async with self._driver.session(database=self._db) as session:
                return await session.execute_write(work)

    async def in_write(self, work: Callable[[AsyncManagedTransaction], Awaitable[T]]) -> T:
        """Several statements in one managed write transaction (the adapter's own modules)."""
        return await self._in_write(work)

    async def run(self, name: str, /, **params: Any) -> Rows:
        """One named read query in a managed read transaction (retried by the driver)."""
        q = self.query(name)
        return await self._in_read(lambda tx: self._rows(tx, q, params))

    async def run_write(self, name: str, /, **params: Any) -> Rows:
        """One named write query in its own managed write transaction (retried by the driver)."""
        q = self.query(name)
        return await self._in_write(lambda tx: self._rows(tx, q, params))

    async def run_auto(self, name: str, /, **params: Any) -> Rows:
        """One read-only statement in an auto-commit transaction, for the search path.

        A managed transaction costs two round trips (BEGIN+RUN+PULL, then COMMIT); this costs one,
        about 0.7 ms of a 4 ms vector search. Lost connections and retryable transients are retried
        for up to 5 s, as the driver retries managed transactions.
        """
        q = self.query(name)
        with translate_errors(self._target):
            async for attempt in AsyncRetrying(
                retry=retry_if_exception(retryable),
                stop=stop_after_delay(_READ_RETRY_S),
                wait=wait_exponential(multiplier=0.1, max=1.0),
                reraise=True,
            ):
                with attempt:
                    async with self._driver.session(database=self._db, default_access_mode=READ_ACCESS) as session:
                        result = await session.run(q.text, q.bind(**params))
                        return _plain(await result.fetch(1_000_000))
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    async def run_schema(self, statement: Query, /, **params: Any) -> None:
        """A schema statement in an auto-commit transaction (index creation cannot share a transaction)."""
        with translate_errors(self._target):
            async with self._driver.session(database=self._db) as session:
                result = await session.run(statement.text, statement.bind(**params))
                await result.consume()

    async def verify(self) -> dict[str, str]:
        """Connect, learn the server (version, edition, query line, default Cypher language) and resolve
        every query name to the line's file; raise StoreUnavailableError with a clear message."""
        with translate_errors(self._target, connecting=True):
            await self._driver.verify_connectivity()
        rows = await self.run("schema/server_version")
        version = rows[0]["version"]
        line = queries.cypher_line(version)
        if line != self._line:  # the first call, or the server behind the URI was replaced
            self._by_name = self._resolve(line)
            self._line = line
        try:
            lang = await self.run("schema/language", database=self._db)
            language = str(lang[0]["language"]) if lang else "unknown"
        except ClientError as exc:  # SHOW DATABASES needs a privilege a restricted user may lack
            log.info("default Cypher language not readable (%s): the 2026 queries carry CYPHER 25 anyway", exc.code)
            language = "unknown"
        self._server = {
            "name": rows[0]["name"],
            "version": version,
            "edition": rows[0]["edition"],
            "line": line,
            "language": language,
        }
        return dict(self._server)

    async def server(self) -> dict[str, str]:
        """What ``verify`` learnt, verifying first when it has not run yet."""
        if self._server is None:
            return await self.verify()
        return dict(self._server)

    async def vector_index_info(self) -> dict[str, Any] | None:
        """state, dimensions, properties, provider, quantization of the notes' vector index (None: none)."""
        rows = await self.run("schema/vector_index", name="note_embedding")
        return rows[0] if rows else None

    async def fulltext_index_info(self) -> dict[str, Any] | None:
        """The full-text index's analyzer and state (None: no such index)."""
        rows = await self.run("schema/fulltext_index", name="note_text")
        return rows[0] if rows else None

    # --- writes ---------------------------------------------------------------------------------

    async def add(self, write: AddWrite) -> AddOutcome:
        """Write a note with its links and neighbour evolutions in ONE transaction.

        When the id already exists in this scope nothing is written (idempotent add). Ids are unique
        per scope: another scope's note with the same id is another note, never seen. Links and
        evolutions reach only notes of the note's scope (the queries match the scope), whatever the
        caller passes.
        """
        scope = write.note.scope.params()
        now = utcnow()
        create, evolve, link = self.query("notes/create"), self.query("evolution/update_neighbour"), None
        if write.links:
            link = self.query("links/create")

        async def work(tx: AsyncManagedTransaction) -> AddOutcome:
            row = (
                await self._rows(
                    tx, create, {"note": note_params(write.note, write.variant), "embedding": write.embedding}
                )
            )[0]
            if not row["created"]:
                return AddOutcome(created=False)
            versions: dict[str, int] = {}
            for upd in write.updates:
                vrows = await self._rows(
                    tx,
                    evolve,
                    {
                        "id": upd.note_id,
                        **scope,
                        "uid": uuid.uuid4().hex,
                        "now": now,
                        "caused_by": write.note.id,
                        "context": upd.context,
                        "tags": upd.tags,
                        "keywords": upd.keywords,
                        "embedding": upd.embedding,
                    },
                )
                if vrows:
                    versions[upd.note_id] = vrows[0]["version"]
            written: list[Link] = []
            if link is not None:
                lrows = await self._rows(
                    tx,
                    link,
                    {
                        "source_id": write.note.id,
                        **scope,
                        "links": [link_row(x) for x in write.links],
                        "now": now,
                        "caused_by": write.note.id,
                    },
                )
                written = _written(write.links, lrows, now, write.note.id)
            return AddOutcome(created=True, links=written, versions=versions)

        return await self._in_write(work)

    async def add_group(self, writes: Sequence[AddWrite]) -> list[AddOutcome]:
        """Several adds in ONE statement and transaction, applied in list order (a later write sees
        the earlier ones: it may link to or evolve their notes). All or nothing: when an update
        names an ``expected_version`` and its neighbour is gone or at another version, nothing is
        written and StaleWriteError is raised. Each write is confined to its note's scope, as in
        ``add``; an id already stored in its scope writes nothing of that write (``created`` False).
        """
        if not writes:
            return []
        now = utcnow()
        rows = [
            {
                "note": note_params(w.note, w.variant),
                "embedding": w.embedding,
                "updates": [
                    {
                        "id": u.note_id,
                        "uid": uuid.uuid4().hex,
                        "context": u.context,
                        "tags": u.tags,
                        "keywords": u.keywords,
                        "embedding": u.embedding,
                        "expected_version": u.expected_version,
                    }
                    for u in w.updates
                ],
                "links": [link_row(x) for x in w.links],
            }
            for w in writes
        ]
        q = self.query("notes/add_group")

        async def work(tx: AsyncManagedTransaction) -> list[AddOutcome]:
            out = await self._rows(tx, q, {"writes": rows, "now": now})
            outcomes: list[AddOutcome] = []
            for w, row in zip(writes, out, strict=True):
                if not row["created"]:
                    outcomes.append(AddOutcome(created=False))
                    continue
                versions = {v["id"]: v["version"] for v in row["versions"]}
                stale = [v["id"] for v in row["versions"] if not v["ok"]]
                stale += [u.note_id for u in w.updates if u.expected_version is not None and u.note_id not in versions]
                if stale:  # raised inside the transaction function: the driver rolls it back
                    raise StaleWriteError(f"neighbours changed or gone since the plan: {sorted(stale)[:5]}")
                outcomes.append(
                    AddOutcome(created=True, links=_written(w.links, row["links"], now, w.note.id), versions=versions)
                )
            return outcomes

        return await self._in_write(work)

    async def add_many(self, notes: Sequence[Note], embeddings: Sequence[Sequence[float]], variant: str) -> list[str]:
        """Bulk raw import in one transaction per call; returns the ids created (ids already in the
        note's scope are skipped)."""
        rows = [{**note_params(n, variant), "embedding": list(e)} for n, e in zip(notes, embeddings, strict=True)]
        out = await self.run_write("notes/create_many", rows=rows)
        return list(out[0]["created_ids"]) if out else []

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
            rows = await self.run_write(
                "links/follows_many", pairs=chunk, **scope.params(), now=now, reason=reason, strength=strength
            )
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
        rows = await self.run_write(
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

    async def create_links(self, source_id: str, scope: Scope, links: Sequence[Link], caused_by: str) -> list[Link]:
        """The links written: the query writes only between notes of the scope (source and target)."""
        now = utcnow()
        rows = await self.run_write(
            "links/create",
            source_id=source_id,
            **scope.params(),
            links=[link_row(x) for x in links],
            now=now,
            caused_by=caused_by,
        )
        return _written(links, rows, now, caused_by)

    async def delete(self, note_id: str, scope: Scope) -> bool:
        rows = await self.run_write("notes/delete", id=note_id, **scope.params())
        return bool(rows and rows[0]["deleted"])

    async def touch(self, counts: Mapping[str, int], scope: Scope) -> None:
        """Add to the notes' retrieval counts (id -> times retrieved) and set last_accessed."""
        hits = [{"id": i, "times": n} for i, n in counts.items()]
        await self.run_write("notes/touch", hits=hits, **scope.params(), now=utcnow())

    # --- reads ----------------------------------------------------------------------------------

    async def get(self, note_id: str, scope: Scope, *, with_embedding: bool = False) -> Note | None:
        name = "notes/get_with_embedding" if with_embedding else "notes/get"
        rows = await self.run(name, id=note_id, **scope.params())
        return note_from_record(rows[0]["note"]) if rows else None

    async def find_by_content(self, content: str, scope: Scope) -> str | None:
        rows = await self.run("notes/find_by_content", content_sha=content_sha(content), **scope.params())
        return rows[0]["id"] if rows else None

    async def find_by_source(self, source_ids: Sequence[str], scope: Scope) -> dict[str, str]:
        rows = await self.run("notes/find_by_source", source_ids=list(source_ids), **scope.params())
        return {r["source_id"]: r["id"] for r in rows}

    async def existing_ids(self, ids: Sequence[str], scope: Scope) -> set[str]:
        rows = await self.run("notes/existing_ids", ids=list(ids), **scope.params())
        return {r["id"] for r in rows}

    async def list_notes(self, scope: Scope, *, limit: int, offset: int) -> list[Note]:
        rows = await self.run("notes/list", **scope.params(), skip=offset, limit=limit)
        return await mapped([r["note"] for r in rows], note_from_record)

    async def export(self, scope: Scope, *, limit: int, offset: int) -> list[tuple[Note, list[Link]]]:
        rows = await self.run("notes/export", **scope.params(), skip=offset, limit=limit)

        def entry(r: dict[str, Any]) -> tuple[Note, list[Link]]:
            note = note_from_record(r["note"])
            return note, [link_from_record(x, source_id=note.id) for x in r["links"]]

        return await mapped(rows, entry)

    async def count(self, scope: Scope) -> int:
        rows = await self.run("notes/count", **scope.params())
        return int(rows[0]["count"])

    async def pending(self, scope: Scope, limit: int) -> list[str]:
        rows = await self.run("notes/pending", **scope.params(), limit=limit)
        return [r["id"] for r in rows]

    async def history(self, note_id: str, scope: Scope, *, limit: int, offset: int = 0) -> list[NoteVersion]:
        rows = await self.run("notes/history", id=note_id, **scope.params(), skip=offset, limit=limit)
        return await mapped([r["version"] for r in rows], version_from_record)

    async def links(self, note_id: str, scope: Scope, *, limit: int, offset: int = 0) -> list[Link]:
        rows = await self.run("links/of_note", id=note_id, **scope.params(), skip=offset, limit=limit)
        return await mapped(rows, link_from_record)

        # --- versions: rollback and undo of an add -----------------------------------------------------

    async def version(self, note_id: str, scope: Scope, version: int) -> NoteVersion | None:
        rows = await self.run("versions/get", id=note_id, **scope.params(), version=version)
        return version_from_record(rows[0]["version"]) if rows else None

    async def version_states(
        self, note_id: str, scope: Scope, *, limit: int, offset: int
    ) -> tuple[list[NoteVersion], NoteState] | None:
        rows = await self.run("versions/states", id=note_id, **scope.params(), skip=offset, limit=limit)
        if not rows:
            return None
        return [version_from_record(v) for v in rows[0]["versions"]], state_from_record(rows[0]["current"])

    @staticmethod
    def _restore_params(restore: Restore, scope: Scope, now: Any) -> dict[str, Any]:
        return {
            "id": restore.note_id,
            **scope.params(),
            "version": restore.version.version,
            "expected_version": restore.expected_version,
            "content": restore.version.content,
            "content_sha": content_sha(restore.version.content),
            "uid": uuid.uuid4().hex,
            "now": now,
            "changed_by": restore.changed_by,
            "embedding": restore.embedding,
        }

    async def restore(self, restore: Restore, scope: Scope) -> int | None:
        rows = await self.run_write("versions/restore", **self._restore_params(restore, scope, utcnow()))
        return int(rows[0]["version"]) if rows else None

    async def add_effects(self, note_id: str, scope: Scope) -> AddEffects:
        links_q, evolutions_q = self.query("undo/links"), self.query("undo/evolutions")

        async def work(tx: AsyncManagedTransaction) -> AddEffects:
            head = (await self._rows(tx, links_q, {"id": note_id, **scope.params()}))[0]
            evolved = await self._rows(tx, evolutions_q, {"id": note_id, **scope.params()})
            return AddEffects(
                note_exists=bool(head["exists"]),
                links=[link_from_record(x) for x in head["links"]],
                evolutions=[evolution_from_record(r) for r in evolved],
            )

        return await self._in_read(work)

    async def undo(self, write: UndoWrite) -> UndoOutcome:
        """Remove the add's links, restore its neighbours (each only if still at the version planned)
        and delete the note on request, in ONE transaction; every query matches the write's scope."""
        scope = write.scope.params()
        remove, restore = self.query("undo/remove_links"), self.query("versions/restore")
        delete = self.query("undo/delete_note")
        now = utcnow()

        async def work(tx: AsyncManagedTransaction) -> UndoOutcome:
            removed = await self._rows(tx, remove, {"id": write.note_id, **scope, "keep_follows": write.keep_follows})
            restored: dict[str, int] = {}
            for r in write.restores:
                rows = await self._rows(tx, restore, self._restore_params(r, write.scope, now))
                if rows:
                    restored[r.note_id] = int(rows[0]["version"])
            deleted: Rows = []
            if write.delete_note:
                deleted = await self._rows(tx, delete, {"id": write.note_id, **scope})
            return UndoOutcome(
                links_removed=[link_from_record(x) for x in removed],
                restored=restored,
                note_deleted=bool(deleted),
                links_removed_with_note=int(deleted[0]["links"]) if deleted else 0,
            )

        return await self._in_write(work)

    async def scopes(self, user_id: str | None, limit: int = 10_000) -> list[Scope]:
        rows = await self.run("admin/scopes", user_id=user_id, limit=limit)
        out = []
        for r in rows:
            try:
                out.append(Scope(**r))
            except ValueError:  # e.g. "zz\n", stored before issue 16 closed that hole: unreachable, skipped
                log.warning("skipping a stored scope that is no longer valid: %r", tuple(r.values()))
        return out

    async def note_count(self) -> int:
        rows = await self.run("admin/health")
        return int(rows[0]["notes"])

    # --- search ---------------------------------------------------------------------------------

    def _first_fetch(self, k: int, over_fetch: int, excluded: int) -> int:
        """Candidates of the first index query: on 2026 the in-scope SEARCH LIMIT (3 x k by default,
        the recall the research measured), on 5.26 the global over-fetch before the scope filter."""
        ratio = self._in_index_over_fetch if self._line == "2026" else over_fetch
        return max(k * ratio, k + excluded)

    async def _scan_exactly(self, scope: Scope) -> bool:
        """5.26, after a short over-fetch: is the scope small enough that scoring all of its notes costs
        less than growing the global over-fetch? (about 0.02 ms of server CPU per note against 60-130
        ms for a fetch grown to 2,560 among 100k notes; docs/neo4j-2026.md). On 2026 SEARCH already
        searches only the scope, so the answer is no."""
        if self._line == "2026" or self._exact_scan_max <= 0:
            return False
        rows = await self.run_auto("notes/count", **scope.params())
        return int(rows[0]["count"]) <= self._exact_scan_max

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
        """Top-k by cosine inside the scope. 2026: SEARCH filtered by scope inside the index; 5.26: HNSW
        with growing over-fetch, or an exact scan of a small scope; exact scan as the last resort."""
        if k <= 0:
            return []
        base = {
            "embedding": list(embedding),
            "k": k,
            **scope.params(),
            "exclude_ids": list(exclude_ids),
            **filter_params(filters),
        }
        fetch_k = self._first_fetch(k, over_fetch, len(exclude_ids))
        first = True
        while fetch_k <= _MAX_FETCH:
            rows = await self.run_auto("search/vector", fetch_k=fetch_k, **base)
            fetched, hits = _hit_rows(rows, "cosine")
            # Enough hits, or the index has no more to give: done.
            if len(hits) >= k or fetched < fetch_k:
                return await mapped(hits, _scored("cosine"))
            if first and await self._scan_exactly(scope):
                break
            first = False
            fetch_k *= 4
        rows = await self.run_auto("search/vector_exact", **base)
        return await mapped(rows, _scored("cosine"))

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
        base = {"embedding": list(embedding), "k": k, **scope.params(), "exclude_ids": [], **filter_params(filters)}
        fetch_k = self._first_fetch(k, over_fetch, 0)
        first = True
        while fetch_k <= _MAX_FETCH:
            rows = await self.run_auto("search/vector_links", fetch_k=fetch_k, per_hit=per_hit, **base)
            fetched, hits = _hit_rows(rows, "cosine")
            if len(hits) >= k or fetched < fetch_k:  # the query expanded them: top-k is final
                notes = await mapped(hits, _scored("cosine"))
                return notes, await mapped([x for h in hits for x in h["linked"]], linked_note_from_record)
            if first and await self._scan_exactly(scope):
                break
            first = False
            fetch_k *= 4
        rows = await self.run_auto("search/vector_exact", **base)
        notes = await mapped(rows, _scored("cosine"))
        ids = [n.id for n, _ in notes]
        return notes, await self.expand_links(ids, scope, per_hit, exclude_ids=[])

    async def fulltext_search(
        self,
        text: str,
        scope: Scope,
        k: int,
        *,
        filters: SearchFilters | None = None,
        over_fetch: int = 4,
        embedding: Sequence[float] | None = None,
        common_share: float | None = None,
    ) -> list[TextMatch]:
        words = query_terms(text)
        if common_share is not None and words:
            words = await self._uncommon(words, scope, common_share)
        lucene = lucene_of(words)
        if lucene is None or k <= 0:
            return []
        fetch_k = k * over_fetch * 4
        vector = list(embedding) if embedding is not None else None
        while True:
            try:
                rows = await self.run_auto(
                    "search/fulltext",
                    lucene=lucene,
                    fetch_k=fetch_k,
                    k=k,
                    embedding=vector,
                    **scope.params(),
                    **filter_params(filters),
                )
            except ClientError as exc:  # a query Lucene still cannot parse: no full-text hits, not a crash
                log.warning("full-text query rejected: %s", exc.code)
                return []
            fetched, hits = _hit_rows(rows, "score")
            # Enough hits, the index has no more matches, or so many other-scope matches that a
            # bigger fetch costs more than the hits are worth (vector search still covers the scope).
            if len(hits) >= k or fetched < fetch_k or fetch_k >= _MAX_FETCH_TEXT:
                return await mapped(hits, _text_match)
            fetch_k *= 4

    async def _uncommon(self, words: Sequence[str], scope: Scope, share: float) -> list[str]:
        """``words`` less the ones in more than ``share`` of the scope's notes (sampled)."""
        lowered = sorted({w.lower() for w in words})
        rows = await self.run_auto("search/word_shares", words=lowered, sample=_WORD_SHARE_SAMPLE, **scope.params())
        common = {
            r["word"] for r in rows if r["containing"] >= _COMMON_MIN_NOTES and r["containing"] > share * r["notes"]
        }
        return [w for w in words if w.lower() not in common]

    async def expand_links(
        self, ids: Sequence[str], scope: Scope, per_hit: int, exclude_ids: Sequence[str]
    ) -> list[LinkedNote]:
        if not ids or per_hit <= 0:
            return []
        rows = await self.run_auto(
            "search/expand_links", ids=list(ids), **scope.params(), per_hit=per_hit, exclude_ids=list(exclude_ids)
        )
        return await mapped(rows, linked_note_from_record)

    # --- memory that changes over time (issue 28; store/updates.py, cypher/updates/) ---------------

    async def supersede(
        self,
        newer_id: str,
        older_id: str,
        scope: Scope,
        *,
        at: datetime,
        reason: str,
        p_yes: float | None,
        caused_by: str,
    ) -> bool:
        from graphmem.store import updates

        return await updates.supersede(
            self, newer_id, older_id, scope, at=at, reason=reason, p_yes=p_yes, caused_by=caused_by
        )

    async def conflict(
        self,
        note_id: str,
        other_id: str,
        scope: Scope,
        *,
        at: datetime,
        reason: str,
        p_yes: float | None,
        caused_by: str,
    ) -> bool:
        from graphmem.store import updates

        return await updates.conflict(
            self, note_id, other_id, scope, at=at, reason=reason, p_yes=p_yes, caused_by=caused_by
        )

    async def timeline(self, ids: Sequence[str], scope: Scope) -> list[TimelineRow]:
        from graphmem.store import updates

        return await updates.timeline(self, ids, scope)

    async def undo_updates(self, note_id: str, scope: Scope, *, dry_run: bool = False) -> int:
        from graphmem.store import updates

        return await updates.undo(self, note_id, scope, dry_run=dry_run)

    async def chains(self, scope: Scope, limit: int = 1000) -> list[tuple[TimelineEntry, list[TimelineEntry]]]:
        from graphmem.store import updates

        return await updates.chains(self, scope, limit)

    async def derive(self, note_id: str, source_ids: Sequence[str], scope: Scope) -> list[str]:
        from graphmem.store import updates

        return await updates.derive(self, note_id, source_ids, scope)


def _plain(records: Sequence[Record]) -> Rows:
    """Records as dicts of their values. Every query returns maps, lists and scalars (no nodes), so
    the driver's recursive ``Record.data()`` conversion, a third of a big search's time, is not needed."""
    return [dict(zip(r.keys(), r, strict=True)) for r in records]


X = TypeVar("X")


async def mapped(items: Sequence[X], convert: Callable[[X], T]) -> list[T]:
    """``convert`` over ``items``, yielding to the event loop every ``_YIELD_EVERY``: mapping a big
    answer (hundreds of notes of tens of KB) in one go held the loop for 100 ms and more, and every
    other request (``/health`` too) waited (issue 16)."""
    out: list[T] = []
    for i, item in enumerate(items):
        if i and not i % _YIELD_EVERY:
            await asyncio.sleep(0)
        out.append(convert(item))
    return out


def _hit_rows(rows: Rows, score: str) -> tuple[int, Rows]:
    """(rows the index gave, the hit rows best first) of a search query that returns one row per hit
    (one row with a null note when none is kept)."""
    hits = sorted((r for r in rows if r["note"] is not None), key=lambda r: -float(r[score]))
    return (int(rows[0]["fetched"]) if rows else 0), hits


def _scored(key: str) -> Callable[[dict[str, Any]], tuple[Note, float]]:
    return lambda row: (note_from_record(row["note"]), float(row[key]))


def _text_match(row: dict[str, Any]) -> TextMatch:
    cosine = row["cosine"]
    return TextMatch(note_from_record(row["note"]), float(row["score"]), None if cosine is None else float(cosine))


def _written(links: Sequence[Link], rows: Rows, now: Any, caused_by: str) -> list[Link]:
    """The links ``links/create`` reported as written, with the defaults the query applied."""
    done = {(r["target_id"], r["type"]) for r in rows}
    return [
        x.model_copy(update={"created_at": x.created_at or now, "caused_by": x.caused_by or caused_by})
        for x in links
        if (x.target_id, x.type.value) in done
    ]


__all__ = ["Neo4jNoteStore", "QueryTable", "lucene_query"]
