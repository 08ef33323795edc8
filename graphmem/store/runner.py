"""The Neo4j query runner: the driver, the query line, and how a named query runs.

Every query is a named file in ``cypher/``, resolved in one place (``Neo4jRunner.query``): at
``verify`` the runner learns the server's version, its query line (``5.26`` or ``2026``) and the
database's default Cypher language, and resolves every name once to that line's file
(``name.2026.cypher`` beside ``name.cypher``, see ``queries``). Writes that belong together run in
one managed transaction (``in_write``), which the driver retries on transient errors (deadlocks,
leader changes); reads in a managed read transaction (``run``) or, on the search path, in one
auto-commit round trip (``run_auto``). Driver failures are translated in ``errors.py``.

The note store is a runner with the note queries (``neo4j_store.py``); the chat-history and item
stores, the schema bootstrap and the benchmark queries take a runner, never the note store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Self, TypeVar

from neo4j import READ_ACCESS, AsyncDriver, AsyncGraphDatabase, AsyncManagedTransaction, Record
from neo4j.exceptions import ClientError
from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential

from graphmem import queries
from graphmem._version import __version__
from graphmem.config import Settings
from graphmem.queries import Query
from graphmem.store.errors import Target, retryable, translate_errors

log = logging.getLogger(__name__)

T = TypeVar("T")
Rows = list[dict[str, Any]]
QueryTable = Callable[[queries.QueryLine], Mapping[str, Query]]

_YIELD_EVERY = 32  # records mapped between two yields to the event loop (a few ms of work)
_READ_RETRY_S = 5.0  # as long as the driver retries managed transactions (max_transaction_retry_time)


def connect(settings: Settings) -> tuple[AsyncDriver, str, str, str | None]:
    """(driver, database, uri, username) for the configured server; no I/O until the first query."""
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
    return driver, settings.neo4j_database, settings.neo4j_uri, username


class Neo4jRunner:
    """Runs named queries over an async driver it owns. No I/O in __init__.

    Args:
        driver: an async driver this runner owns (``close`` closes it).
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
    ) -> None:
        self._driver = driver
        self._db = database
        self._target = Target(uri=uri, username=username, database=database)
        self._resolve = resolve
        # Until verify() learns the server, names resolve to the base (5.26) files.
        self._line: queries.QueryLine | None = None
        self._by_name: Mapping[str, Query] | None = None
        self._server: dict[str, str] | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        driver, database, uri, username = connect(settings)
        return cls(driver, database, uri, username=username)

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
        return plain(await result.fetch(1_000_000))

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
                        return plain(await result.fetch(1_000_000))
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


def plain(records: Sequence[Record]) -> Rows:
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
