"""One table translates driver failures: for a query, only what is about the server; for a
connection check, everything, each message naming the setting to fix."""

from __future__ import annotations

import pytest
from neo4j.exceptions import ClientError, ConstraintError, Neo4jError, ServiceUnavailable

from graphmem.errors import InvalidInputError, StoreUnavailableError
from graphmem.store.errors import CredentialsRefusedError, Target, explain, translate_errors

T = Target(uri="bolt://db:7687", username="neo4j", database="mem")


def neo4j_error(code: str) -> Neo4jError:
    return Neo4jError._hydrate_neo4j(code=code, message="server says no")


@pytest.mark.parametrize(
    ("exc", "kind", "says"),
    [
        (neo4j_error("Neo.ClientError.Security.Unauthorized"), CredentialsRefusedError, "refused user 'neo4j'"),
        (neo4j_error("Neo.ClientError.Database.DatabaseNotFound"), StoreUnavailableError, "no database 'mem'"),
        (neo4j_error("Neo.TransientError.General.DatabaseUnavailable"), StoreUnavailableError, "could not serve"),
        (neo4j_error("Neo.ClientError.Transaction.Terminated"), StoreUnavailableError, "could not serve"),
        (ServiceUnavailable("connection refused"), StoreUnavailableError, "cannot reach Neo4j at bolt://db:7687"),
        (OSError("no route"), StoreUnavailableError, "NEO4J_URI"),
    ],
)
def test_failures_about_the_server_are_translated(exc: Exception, kind: type, says: str) -> None:
    mapped = explain(exc, T)
    assert type(mapped) is kind and says in str(mapped)
    with pytest.raises(kind, match=says), translate_errors(T):
        raise exc


def test_bugs_and_the_callers_errors_pass_through_a_query() -> None:
    for exc in (
        neo4j_error("Neo.ClientError.Statement.SyntaxError"),
        ConstraintError._hydrate_neo4j(code="Neo.ClientError.Schema.ConstraintValidationFailed", message="dup"),
        ValueError("bad parameter"),
    ):
        assert explain(exc, T) is None
        with pytest.raises(type(exc)), translate_errors(T):
            raise exc


def test_a_connection_check_explains_everything() -> None:
    assert "NEO4J_URI=bolt://db:7687 is not usable" in str(explain(ValueError("bad scheme"), T, connecting=True))
    assert "failed the connection check" in str(
        explain(neo4j_error("Neo.ClientError.Statement.SyntaxError"), T, connecting=True)
    )
    assert "requires authentication" in str(
        explain(neo4j_error("Neo.ClientError.Security.Unauthorized"), Target("bolt://db:7687"), connecting=True)
    )


def test_a_translated_error_keeps_its_cause() -> None:
    cause = ServiceUnavailable("down")
    with pytest.raises(StoreUnavailableError) as err, translate_errors(T):
        raise cause
    assert err.value.__cause__ is cause
    assert isinstance(
        ClientError._hydrate_neo4j(code="Neo.ClientError.Database.DatabaseNotFound", message=""), ClientError
    )


def test_text_the_driver_cannot_encode_is_invalid_input() -> None:
    """A lone surrogate reaches the driver's UTF-8 encoder only through a path that skipped
    validation; it is the caller's bad input (422), not a crash."""
    with pytest.raises(InvalidInputError, match="Unicode"), translate_errors(T):
        "\ud800".encode()
