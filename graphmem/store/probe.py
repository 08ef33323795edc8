"""Bolt reachability checks, part of the adapter's public API (``graphmem.store``).

Used by the local-server manager (readiness after start, ``status``) and by anything that wants
a clear "cannot reach / refused credentials" message instead of a driver stack trace. Lives in
``store/`` because only this package imports ``neo4j``.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from neo4j import GraphDatabase
from neo4j.exceptions import AuthError, ClientError

from graphmem import queries
from graphmem.errors import StoreUnavailableError
from graphmem.store.errors import DB_NOT_FOUND, CredentialsRefusedError, Target
from graphmem.store.errors import explain as _explain

Auth = tuple[str, str] | None

# After Bolt first answers, how long a missing database may still be "being created" on a fresh
# server before we call it a configuration error (NEO4J_DATABASE naming a database that isn't there).
_DB_GRACE_S = 20.0


class _Process(Protocol):
    """What wait_for_bolt needs of a started process (subprocess.Popen fits)."""

    returncode: Any

    def poll(self) -> int | None: ...


def explain(
    exc: BaseException, uri: str, username: str | None = None, database: str = "neo4j"
) -> StoreUnavailableError:
    """Turn a driver exception into a StoreUnavailableError whose message names the setting to fix
    (the adapter's one translation table, ``store/errors.py``, as for a connection check)."""
    mapped = _explain(exc, Target(uri, username, database), connecting=True)
    assert mapped is not None  # connecting: every failure maps
    return mapped


def check_bolt(uri: str, auth: Auth = None, *, database: str = "neo4j", timeout: float = 5.0) -> None:
    """Connect, authenticate and run a query on ``database``; raise the driver's exception."""
    with GraphDatabase.driver(
        uri, auth=auth, connection_timeout=timeout, connection_acquisition_timeout=timeout
    ) as driver:
        driver.verify_connectivity()
        query = queries.load("schema/server_version")  # any query proves the database serves
        driver.execute_query(query.text, query.bind(), database_=database)


def bolt_answers(uri: str, auth: Auth = None, *, database: str = "neo4j", timeout: float = 2.0) -> bool:
    """True when a Neo4j at ``uri`` accepts these credentials and serves ``database``."""
    try:
        check_bolt(uri, auth, database=database, timeout=timeout)
    except Exception:  # any failure means "not usable now"; callers that need the reason use check_bolt
        return False
    return True


def ensure_reachable(uri: str, auth: Auth = None, *, database: str = "neo4j", timeout: float = 5.0) -> None:
    """check_bolt, with failures translated to StoreUnavailableError (for interfaces and fixtures)."""
    try:
        check_bolt(uri, auth, database=database, timeout=timeout)
    except Exception as exc:
        raise explain(exc, uri, auth[0] if auth else None, database) from None


def wait_for_bolt(
    uri: str,
    auth: Auth = None,
    *,
    database: str = "neo4j",
    timeout: float = 120.0,
    proc: _Process | None = None,
    interval: float = 0.5,
) -> float:
    """Poll until Bolt serves ``database``; return the seconds waited.

    The HTTP port answers before the database is online, so readiness is a real query over Bolt.
    Raises StoreUnavailableError at once on refused credentials (retrying would only trip the
    server's failed-login lock), when ``proc`` exits, or when ``timeout`` passes.
    """
    start = time.monotonic()
    deadline = start + timeout
    first_answer: float | None = None
    last: BaseException | None = None
    username = auth[0] if auth else None
    while True:
        if proc is not None and proc.poll() is not None:
            raise StoreUnavailableError(f"the Neo4j process exited with code {proc.returncode} before Bolt answered")
        try:
            check_bolt(uri, auth, database=database, timeout=min(5.0, max(1.0, interval * 4)))
            return time.monotonic() - start
        except AuthError as exc:
            raise explain(exc, uri, username, database) from None
        except ClientError as exc:
            if exc.code != DB_NOT_FOUND:
                raise explain(exc, uri, username, database) from None
            # A fresh server answers Bolt a moment before it has created its default database.
            first_answer = first_answer or time.monotonic()
            if time.monotonic() - first_answer > _DB_GRACE_S:
                raise explain(exc, uri, username, database) from None
            last = exc
        except Exception as exc:
            last = exc
        if time.monotonic() >= deadline:
            reason = explain(last, uri, username, database) if last else None
            raise StoreUnavailableError(f"Neo4j at {uri} was not ready after {timeout:.0f}s: {reason}")
        time.sleep(interval)


def server_info(uri: str, auth: Auth = None, *, database: str = "neo4j", timeout: float = 3.0) -> dict[str, str]:
    """Name, version and edition of the server (``cypher/schema/server_version``)."""
    query = queries.load("schema/server_version")
    try:
        with GraphDatabase.driver(uri, auth=auth, connection_timeout=timeout) as driver:
            records, _, _ = driver.execute_query(query.text, query.bind(), database_=database)
    except Exception as exc:
        raise explain(exc, uri, auth[0] if auth else None, database) from None
    row = records[0]
    return {"name": str(row["name"]), "version": str(row["version"]), "edition": str(row["edition"])}


__all__ = [
    "Auth",
    "CredentialsRefusedError",
    "bolt_answers",
    "check_bolt",
    "ensure_reachable",
    "explain",
    "server_info",
    "wait_for_bolt",
]
