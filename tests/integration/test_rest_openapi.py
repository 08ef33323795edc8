"""The OpenAPI document tells the truth about errors: every route declares the error statuses it
answers, each with the one error body the API sends ({"error": {...}}), and a request provoking each
error on every route gets a declared status and a body of that schema."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from graphmem.interfaces.rest.app import create_app
from graphmem.interfaces.rest.schemas import ErrorBody
from graphmem.models import Scope

pytestmark = pytest.mark.asyncio(loop_scope="session")

KEY = "openapi-key-0123456789abcdef"
BOUND = "openapi-bound-0123456789abcdef"
MAX_BODY = 4096


@pytest.fixture
async def app(scope: Scope, make_service: Any) -> AsyncIterator[Any]:
    svc, _ = await make_service(api_keys=SecretStr(f"{KEY},{BOUND}={scope.user_id}/bound"), auth_disabled=False)
    yield create_app(svc.settings, svc, max_body_bytes=MAX_BODY)


def routes(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, ops in schema["paths"].items() for method, op in ops.items()]


async def test_every_declared_error_has_the_error_body(app: Any) -> None:
    schema = app.openapi()
    assert "HTTPValidationError" not in schema["components"]["schemas"]  # FastAPI's {"detail": [...]} is gone
    for path, method, op in routes(schema):
        errors = {int(s): r for s, r in op["responses"].items() if int(s) >= 400}
        if path == "/health":
            assert errors[503]["content"]["application/json"]["schema"]["$ref"].endswith("/Health")
            continue
        assert {400, 401, 403, 413, 422, 500, 503} <= set(errors), (method, path)
        for status, response in errors.items():
            ref = response["content"]["application/json"]["schema"]["$ref"]
            assert ref == "#/components/schemas/ErrorBody", (method, path, status)
        if "{note_id}" in path:
            assert 404 in errors, (method, path)


async def test_every_route_answers_only_declared_errors(app: Any, scope: Scope, make_service: Any) -> None:
    schema = app.openapi()
    other = Scope(user_id=scope.user_id + "-o")
    svc = app.state.service
    taken = (await svc.add("someone else's", other, note_id=f"{scope.user_id}-taken", enrich=False)).note.id
    bodies = {
        ("post", "/v1/notes"): {"content": "x"},
        ("post", "/v1/notes/bulk"): {"notes": [{"content": "x"}]},
        ("put", "/v1/notes/{note_id}"): {"content": "x"},
        ("patch", "/v1/notes/{note_id}"): {"content": "x"},
        ("post", "/v1/notes/{note_id}/links"): {"target_id": "nope"},
        ("post", "/v1/search"): {"query": "x"},
        ("post", "/v1/ask"): {"question": "x"},
        ("post", "/v1/notes/{note_id}/rollback"): {"version": 1},
        ("post", "/v1/notes/{note_id}/undo"): {},
        ("post", "/v1/consolidate"): {},
    }
    bad_bodies = {
        ("post", "/v1/notes"): {"content": 5},
        ("post", "/v1/notes/bulk"): {"notes": []},
        ("put", "/v1/notes/{note_id}"): {},
        ("patch", "/v1/notes/{note_id}"): {"content": None},
        ("post", "/v1/notes/{note_id}/links"): {"target_id": "a", "type": "LOVES"},
        ("post", "/v1/search"): {"query": "x", "k": 0},
        ("post", "/v1/ask"): {"question": ""},
        ("post", "/v1/notes/{note_id}/rollback"): {"version": 0},
        ("post", "/v1/notes/{note_id}/undo"): {"delete_note": "perhaps"},
        ("post", "/v1/consolidate"): {"dry_run": "perhaps"},
    }
    seen: dict[tuple[str, str], set[int]] = {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:

        async def send(method: str, path: str, *, headers: dict[str, str], body: Any = None, **kw: Any) -> None:
            url = path.replace("{note_id}", "no-such-note")
            content = None if body is None else (body if isinstance(body, bytes) else None)
            json_body = None if body is None or isinstance(body, bytes) else body
            r = await client.request(method, url, headers=headers, json=json_body, content=content, **kw)
            declared = {int(s) for s in schema["paths"][path][method]["responses"]}
            assert r.status_code in declared, (method, path, r.status_code, r.text)
            if r.status_code >= 400:
                ErrorBody.model_validate(r.json())  # the declared body, exactly
                seen.setdefault((method, path), set()).add(r.status_code)

        me = {"X-API-Key": KEY, "X-User-Id": scope.user_id}
        for path, method, _ in routes(schema):
            if path == "/health" or not path.startswith("/v1"):
                continue
            body = bodies.get((method, path))
            await send(method, path, headers={}, body=body)  # 401: no key
            await send(method, path, headers={"X-API-Key": "wrong-key-0123456789"}, body=body)  # 401
            await send(method, path, headers={"X-API-Key": BOUND, "X-User-Id": "someone-else"}, body=body)  # 403
            await send(method, path, headers={"X-API-Key": KEY}, body=body)  # 422: no scope
            await send(method, path, headers=me, body=body, params={"user_id": "different"})  # 400
            await send(method, path, headers=me, body=body)  # 404 for {note_id}; success or 4xx otherwise
            if body is not None:
                await send(method, path, headers=me, body=bad_bodies[(method, path)])  # 422
                await send(method, path, headers=me, body=b"{" + b" " * MAX_BODY + b"}")  # 413
                await send(method, path, headers=me, body=b"{not json")  # 422
            if method == "get" and path == "/v1/notes":
                await send(method, path, headers=me, params={"limit": 0})  # 422
        # ids are unique per scope (issue 16): another scope's id is a new note here, not a 409
        await send("post", "/v1/notes", headers=me, body={"content": "x", "note_id": taken, "enrich": False})
    scoped = {route: statuses for route, statuses in seen.items() if route != ("get", "/v1/status")}
    assert all({401, 403, 422, 400} <= statuses for statuses in scoped.values()), seen
    assert seen[("get", "/v1/status")] == {401}  # a key, no scope: nothing of a scope to refuse
    assert {404} <= seen[("get", "/v1/notes/{note_id}")] and 413 in seen[("post", "/v1/search")]
    await svc.delete(taken, other)
