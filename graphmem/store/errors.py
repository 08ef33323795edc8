"""Driver failures -> StoreUnavailableError with a message that names the setting to fix.

One table (``_RULES``, first match wins) serves the connection checks (``probe``, ``verify``) and
every query of the adapter, used through the ``translate_errors`` context manager (the shape of
httpx's ``map_exceptions``). What the table does not match is a bug or the caller's error and
passes through unchanged (a Cypher syntax error, a constraint violation, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from neo4j.exceptions import (
    AuthError,
    ClientError,
    ConfigurationError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from graphmem.errors import InvalidInputError, StoreUnavailableError
from graphmem.redaction import redact

DB_NOT_FOUND = "Neo.ClientError.Database.DatabaseNotFound"
# Transactions the server ended (shutdown, time limit): reported as ClientError, never retried.
_TERMINATED = frozenset(
    {
        "Neo.ClientError.Transaction.Terminated",
        "Neo.ClientError.Transaction.LockClientStopped",
        "Neo.ClientError.Transaction.TransactionTimedOut",
        "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
    }
)


class CredentialsRefusedError(StoreUnavailableError):
    """The server answered but refused the credentials (or wants some and got none)."""


@dataclass(frozen=True)
class Target:
    """Which server and settings a message talks about."""

    uri: str
    username: str | None = None
    database: str = "neo4j"


@dataclass(frozen=True)
class _Rule:
    matches: Callable[[BaseException], bool]
    message: Callable[[BaseException, Target], str]
    error: type[StoreUnavailableError] = StoreUnavailableError
    connecting_only: bool = False  # e.g. a ValueError is a bad URI while connecting, a bug later


def _code(exc: BaseException) -> str | None:
    return getattr(exc, "code", None)


def message_of(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return str(text).strip().splitlines()[0][:300]


def _auth_message(exc: BaseException, t: Target) -> str:
    if t.username is None:
        return (
            f"Neo4j at {t.uri} requires authentication: set NEO4J_PASSWORD (and NEO4J_USERNAME if the "
            f"user is not 'neo4j') ({message_of(exc)})"
        )
    return f"Neo4j at {t.uri} refused user {t.username!r}: wrong NEO4J_USERNAME or NEO4J_PASSWORD ({message_of(exc)})"


_RULES: tuple[_Rule, ...] = (
    _Rule(lambda e: isinstance(e, AuthError), _auth_message, CredentialsRefusedError),
    _Rule(
        lambda e: isinstance(e, ClientError) and _code(e) == DB_NOT_FOUND,
        lambda e, t: (
            f"Neo4j at {t.uri} has no database {t.database!r}: set NEO4J_DATABASE to an existing database "
            f"(Community has one, usually 'neo4j')"
        ),
    ),
    _Rule(
        lambda e: isinstance(e, TransientError) or (isinstance(e, Neo4jError) and _code(e) in _TERMINATED),
        lambda e, t: (
            f"Neo4j at {t.uri} could not serve the request ({_code(e)}: the database is starting, stopping or "
            f"overloaded; the driver retried for a few seconds). Retry later; check the server with "
            f"`graphmem neo4j status` (NEO4J_URI)"
        ),
    ),
    _Rule(
        lambda e: isinstance(e, (ServiceUnavailable, SessionExpired, OSError, TimeoutError)),
        lambda e, t: (
            f"cannot reach Neo4j at {t.uri} (NEO4J_URI): {message_of(e)}. Start the local server with "
            f"`graphmem neo4j start`, or point NEO4J_URI at a running Neo4j"
        ),
    ),
    _Rule(
        lambda e: isinstance(e, (ConfigurationError, ValueError)),
        lambda e, t: f"NEO4J_URI={t.uri} is not usable: {message_of(e)}",
        connecting_only=True,
    ),
    _Rule(
        lambda e: isinstance(e, Neo4jError),
        lambda e, t: f"Neo4j at {t.uri} failed the connection check: {message_of(e)}",
        connecting_only=True,
    ),
)


def explain(exc: BaseException, target: Target, *, connecting: bool = False) -> StoreUnavailableError | None:
    """The StoreUnavailableError for a driver failure, or None when it is not about the server."""
    if isinstance(exc, StoreUnavailableError):
        return exc
    for rule in _RULES:
        if rule.matches(exc) and (connecting or not rule.connecting_only):
            return rule.error(redact(rule.message(exc, target)))  # driver text may quote a URI
    if connecting:
        return StoreUnavailableError(
            redact(f"cannot use Neo4j at {target.uri}: {type(exc).__name__}: {message_of(exc)}")
        )
    return None


@contextmanager
def translate_errors(target: Target, *, connecting: bool = False) -> Iterator[None]:
    """Re-raise the driver failures the table knows as StoreUnavailableError, text the driver cannot
    encode (lone surrogates) as InvalidInputError; others unchanged."""
    try:
        yield
    except UnicodeEncodeError:  # the caller's text, refused by the driver's UTF-8 encoder: bad input
        raise InvalidInputError("text is not valid Unicode (lone surrogates); it cannot be stored") from None
    except Exception as exc:
        mapped = explain(exc, target, connecting=connecting)
        if mapped is None or mapped is exc:
            raise
        raise mapped from exc


def retryable(exc: BaseException) -> bool:
    """What the driver retries in a managed transaction: lost connections and retryable transients."""
    if isinstance(exc, (ServiceUnavailable, SessionExpired)):
        return True
    return isinstance(exc, TransientError) and bool(getattr(exc, "is_retryable", lambda: True)())
