"""Dependencies of the routes: who calls (API key), which service, which scope.

Scope: a key bound to a scope always uses it (asking for another one is 403). Otherwise the request
names it: headers ``X-User-Id`` / ``X-Agent-Id`` / ``X-Run-Id``, query parameters ``user_id`` /
``agent_id`` / ``run_id``, or the same fields in a JSON body; agent and run default to ``default``.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import Depends, Header, Query, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import ValidationError

from graphmem.interfaces.rest.auth import KeyRing, Principal, key_fingerprint
from graphmem.interfaces.rest.errors import ApiError, pydantic_message
from graphmem.interfaces.rest.schemas import ScopeFields
from graphmem.models import Scope
from graphmem.service.memory import AsyncMemoryService

log = logging.getLogger("graphmem.interfaces.rest")

SCOPE_PARTS = ("user_id", "agent_id", "run_id")

api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="an API key")
bearer = HTTPBearer(auto_error=False, description="an API key as a bearer token")


def principal(
    request: Request,
    x_api_key: Annotated[str | None, Depends(api_key_header)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    keys: KeyRing = request.app.state.keys
    if keys.disabled:
        return Principal(name="anonymous")
    given = x_api_key or (credentials.credentials if credentials else None)
    if not given:
        raise ApiError(
            401,
            "unauthorized",
            "missing API key: send X-API-Key or Authorization: Bearer",
            headers={"WWW-Authenticate": "Bearer"},
        )
    found = keys.find(given)
    if found is None:
        log.info("rejected API key %s", key_fingerprint(given))
        raise ApiError(401, "unauthorized", "invalid API key", headers={"WWW-Authenticate": "Bearer"})
    return Principal(name=key_fingerprint(found[0]), scope=found[1])


def service_of(request: Request) -> AsyncMemoryService:
    svc: AsyncMemoryService | None = getattr(request.app.state, "service", None)
    if svc is None:
        raise ApiError(503, "starting", "graphmem is starting; retry in a moment")
    return svc


def merge_scope(given: dict[str, str], source: dict[str, str | None]) -> None:
    for part, value in source.items():
        if value is None:
            continue
        if part in given and given[part] != value:
            raise ApiError(400, "conflicting_scope", f"{part} is given twice with different values")
        given[part] = value


def scope_given(
    x_user_id: Annotated[str | None, Header(max_length=128, description="scope: user id")] = None,
    x_agent_id: Annotated[str | None, Header(max_length=128, description="scope: agent id")] = None,
    x_run_id: Annotated[str | None, Header(max_length=128, description="scope: run id")] = None,
    user_id: Annotated[str | None, Query(max_length=128, description="scope: user id")] = None,
    agent_id: Annotated[str | None, Query(max_length=128, description="scope: agent id")] = None,
    run_id: Annotated[str | None, Query(max_length=128, description="scope: run id")] = None,
) -> dict[str, str]:
    """Scope parts named by headers or query parameters (a JSON body may name them too)."""
    given: dict[str, str] = {}
    merge_scope(given, {"user_id": x_user_id, "agent_id": x_agent_id, "run_id": x_run_id})
    merge_scope(given, {"user_id": user_id, "agent_id": agent_id, "run_id": run_id})
    return given


Auth = Annotated[Principal, Depends(principal)]
Svc = Annotated[AsyncMemoryService, Depends(service_of)]
Given = Annotated[dict[str, str], Depends(scope_given)]


def resolve_scope(who: Principal, given: dict[str, str], body: ScopeFields | None = None) -> Scope:
    """The request's scope: the bound key's, or the one it names (checked)."""
    given = dict(given)
    if body is not None:
        merge_scope(given, {p: getattr(body, p) for p in SCOPE_PARTS})
    if who.scope is not None:
        bound = who.scope.params()
        for part, value in given.items():
            if value != bound[part]:
                raise ApiError(403, "forbidden", f"this API key is bound to scope {who.scope}; {part} differs")
        return who.scope
    if "user_id" not in given:
        raise ApiError(
            422,
            "missing_scope",
            "user_id is required: send the X-User-Id header, a user_id query parameter or a user_id body field",
        )
    try:
        return Scope(**given)
    except ValidationError as exc:
        raise ApiError(422, "invalid_scope", "; ".join(pydantic_message(e) for e in exc.errors())) from None
