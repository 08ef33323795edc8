"""The REST API against the real Neo4j, through its ASGI app (httpx), with a scripted chat model."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from neo4j import AsyncGraphDatabase
from pydantic import SecretStr

from graphmem.errors import ConfigError, LocalServiceError
from graphmem.interfaces.rest import create_app, parse_api_keys
from graphmem.models import Scope
from graphmem.service.memory import AsyncMemoryService
from graphmem.store.neo4j_store import Neo4jNoteStore
from tests.fakes import EVOLVED_SUFFIX, ScriptedChatModel, amem_responder, step_of

pytestmark = pytest.mark.asyncio(loop_scope="session")

KEY = "test-key-0123456789abcdef"
BOUND_KEY = "bound-key-0123456789abcdef"


def client_for(app: Any, **headers: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api", headers=headers)


@pytest.fixture
async def api(
    scope: Scope, make_service: Any, settings: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, AsyncMemoryService]]:
    """A client with a valid key whose requests name the test scope by headers.

    `scope` comes first so that its cleanup runs after the service is closed: the scope's blocking
    cleanup must not run while a search's background write (retrieval counts) waits for this loop.
    """
    keys = f"{KEY},{BOUND_KEY}={scope.user_id}/bound"
    svc, _ = await make_service(api_keys=SecretStr(keys), auth_disabled=False)
    app = create_app(svc.settings, svc)
    async with client_for(app, **{"X-API-Key": KEY, "X-User-Id": scope.user_id}) as client:
        yield client, svc
    bound = Scope(user_id=scope.user_id, agent_id="bound")  # not covered by the `scope` cleanup
    for note in await svc.list(bound, limit=100):
        await svc.delete(note.id, bound)


async def test_refuses_to_start_without_keys(settings: Any) -> None:
    with pytest.raises(ConfigError, match="GRAPHMEM_API_KEYS"):
        create_app(settings.model_copy(update={"api_keys": None, "auth_disabled": False}))
    with pytest.raises(ConfigError, match="shorter than 16"):
        create_app(settings.model_copy(update={"api_keys": SecretStr("short"), "auth_disabled": False}))
    with pytest.raises(ConfigError, match="invalid scope"):
        parse_api_keys(f"{KEY}=bad user/x")
    assert parse_api_keys(f" {KEY} , {BOUND_KEY}=u1/a1 ") == {KEY: None, BOUND_KEY: Scope(user_id="u1", agent_id="a1")}


async def test_auth_header_and_bearer(api: Any, scope: Scope, caplog: pytest.LogCaptureFixture) -> None:
    client, _ = api
    caplog.set_level(logging.DEBUG)
    transport = client._transport
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as anon:
        r = await anon.get("/v1/notes", headers={"X-User-Id": scope.user_id})
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert "X-API-Key" in r.json()["error"]["message"]
        wrong = "wrong-key-that-is-long-enough"
        r = await anon.get("/v1/notes", headers={"X-User-Id": scope.user_id, "X-API-Key": wrong})
        assert r.status_code == 401 and r.json()["error"]["message"] == "invalid API key"
        r = await anon.get("/v1/notes", headers={"X-User-Id": scope.user_id, "Authorization": f"Bearer {KEY}"})
        assert r.status_code == 200
        r = await anon.get("/health")  # no auth, no data
        assert r.status_code == 200 and r.json()["status"] == "ok" and "notes" not in r.json()
    logged = "\n".join(rec.getMessage() for rec in caplog.records)
    assert KEY not in logged and wrong not in logged


async def test_notes_crud_links_history(api: Any, scope: Scope) -> None:
    client, _ = api
    r = await client.post(
        "/v1/notes",
        json={
            "content": "Melanie runs a pottery studio in Portland.",
            "note_id": "pottery-1",
            "event_time": "2023-05-08",
            "metadata": {"source": "chat"},
        },
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["created"] is True and body["note"]["id"] == "pottery-1"
    assert body["note"]["keywords"] and body["note"]["tags"] == ["conversation", "personal"]
    assert "embedding" not in body["note"] and body["note"]["scope"]["user_id"] == scope.user_id
    assert body["usage"]["llm_calls"] == 1

    again = await client.post("/v1/notes", json={"content": "anything", "note_id": "pottery-1"})
    assert again.status_code == 200 and again.json()["created"] is False

    second = await client.post(
        "/v1/notes", json={"content": "Melanie's pottery studio sells bowls at the Portland market."}
    )
    assert second.status_code == 201
    second_id = second.json()["note"]["id"]
    assert [(x["target_id"], x["type"]) for x in second.json()["links"]] == [("pottery-1", "SUPPORTS")]

    r = await client.get("/v1/notes/pottery-1")
    assert r.status_code == 200 and r.json()["context"].endswith(EVOLVED_SUFFIX)
    assert r.json()["metadata"] == {"source": "chat"} and r.json()["version"] == 2

    page = (await client.get("/v1/notes", params={"limit": 1})).json()
    assert page["total"] == 2 and len(page["notes"]) == 1 and page["next_offset"] == 1
    page2 = (await client.get("/v1/notes", params={"limit": 1, "offset": 1})).json()
    assert page2["next_offset"] is None
    assert {page["notes"][0]["id"], page2["notes"][0]["id"]} == {"pottery-1", second_id}

    links = (await client.get(f"/v1/notes/{second_id}/links")).json()["links"]
    assert [(x["source_id"], x["target_id"], x["type"]) for x in links] == [(second_id, "pottery-1", "SUPPORTS")]
    made = await client.post(
        f"/v1/notes/{second_id}/links", json={"target_id": "pottery-1", "type": "ELABORATES", "reason": "detail"}
    )
    assert made.status_code == 201 and made.json()["type"] == "ELABORATES"

    upd = await client.put(
        "/v1/notes/pottery-1", json={"content": "Melanie runs a ceramics studio in Portland, Oregon."}
    )
    assert upd.status_code == 200 and upd.json()["note"]["version"] == 3
    patched = await client.patch("/v1/notes/pottery-1", json={"content": "Melanie runs a ceramics studio in Portland."})
    assert patched.status_code == 200 and patched.json()["note"]["version"] == 4
    history = (await client.get("/v1/notes/pottery-1/history")).json()["versions"]
    assert [v["version"] for v in history] == [1, 2, 3]
    assert history[0]["content"] == "Melanie runs a pottery studio in Portland."
    assert [v["changed_by"] for v in history] == [second_id, "update", "update"]

    assert (await client.delete("/v1/notes/pottery-1")).status_code == 204
    gone = await client.get("/v1/notes/pottery-1")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"
    assert (await client.delete("/v1/notes/pottery-1")).status_code == 404
    assert (await client.get(f"/v1/notes/{second_id}/links")).json()["links"] == []


async def test_conversation_turn_follows_the_previous_one(api: Any, scope: Scope) -> None:
    client, _ = api
    first = await client.post("/v1/notes", json={"content": "Ada adopted a kitten.", "note_id": "turn-1"})
    assert first.status_code == 201, first.text
    turn = await client.post("/v1/notes", json={"content": "Its name is Pixel.", "follows": "turn-1"})
    assert turn.status_code == 201, turn.text
    assert ("turn-1", "FOLLOWS") in [(x["target_id"], x["type"]) for x in turn.json()["links"]]
    before = (await client.get("/v1/notes")).json()["total"]
    lost = await client.post("/v1/notes", json={"content": "x", "follows": "no-such-turn"})
    assert lost.status_code == 404 and "no-such-turn" in lost.json()["error"]["message"]
    assert (await client.get("/v1/notes")).json()["total"] == before  # nothing written


async def test_bulk_add_in_order_per_item_outcomes_and_safe_resend(api: Any, scope: Scope) -> None:
    client, _ = api
    p = scope.user_id
    body = {
        "notes": [
            {"content": "Ada adopted a kitten.", "note_id": f"{p}-t1", "event_time": "2023-05-08"},
            {"content": "Ada's kitten is called Pixel.", "note_id": f"{p}-t2", "follows": f"{p}-t1"},
            {"content": "   "},
            {"content": "Pixel sleeps on Ada's laptop.", "follows": "no-such-turn"},
        ],
        "concurrency": 2,
    }
    r = await client.post("/v1/notes/bulk", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert [x["status"] for x in out["items"]] == ["added", "added", "failed", "failed"]
    assert out["summary"]["added"] == 2 and out["summary"]["failed"] == 2
    second = out["items"][1]
    assert {(x["target_id"], x["type"]) for x in second["links"]} >= {(f"{p}-t1", "FOLLOWS")}
    assert second["enrichment"] == "done" and "embedding" not in str(out)
    assert "empty" in out["items"][2]["error"] and "no-such-turn" in out["items"][3]["error"]
    again = await client.post("/v1/notes/bulk", json=body)  # a client resending after a timeout
    assert [x["status"] for x in again.json()["items"]] == ["existing", "existing", "failed", "failed"]
    assert (await client.get("/v1/notes")).json()["total"] == 2
    too_many = await client.post("/v1/notes/bulk", json={"notes": [{"content": "x"}] * 1001})
    assert too_many.status_code == 422
    other = await client.post(
        "/v1/notes/bulk", json={**body, "agent_id": "elsewhere"}, headers={"X-API-Key": BOUND_KEY}
    )
    assert other.status_code == 403


async def test_search_and_ask(api: Any) -> None:
    client, _ = api
    for text in ("Gina's bakery sells sourdough bread on Sundays.", "Jon opened a dance studio downtown."):
        assert (await client.post("/v1/notes", json={"content": text, "enrich": False})).status_code == 201
    r = await client.post("/v1/search", json={"query": "sourdough bakery", "k": 1, "mode": "hybrid"})
    assert r.status_code == 200, r.text
    hits = r.json()["hits"]
    assert hits[0]["note"]["content"].startswith("Gina's bakery") and "vector" in hits[0]["found_by"]
    assert "embedding" not in hits[0]["note"]
    r = await client.post("/v1/search", json={"query": "bread", "filters": {"tags_any": ["nope"]}})
    assert r.status_code == 200 and r.json()["hits"] == []
    r = await client.post("/v1/ask", json={"question": "When does Gina sell bread?", "k": 2, "token_budget": 200})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["answer"] == "scripted answer" and body["notes"] and body["context_tokens"] > 0
    assert body["usage"]["llm_calls"] == 1


async def test_scope_rules(api: Any, scope: Scope) -> None:
    client, _ = api
    transport = client._transport
    mine = (await client.post("/v1/notes", json={"content": "Caroline likes hiking.", "enrich": False})).json()["note"][
        "id"
    ]
    async with httpx.AsyncClient(transport=transport, base_url="http://api", headers={"X-API-Key": KEY}) as c:
        r = await c.get(f"/v1/notes/{mine}")
        assert r.status_code == 422 and r.json()["error"]["code"] == "missing_scope"
        r = await c.get(f"/v1/notes/{mine}", params={"user_id": scope.user_id})
        assert r.status_code == 200
        other = await c.get(f"/v1/notes/{mine}", headers={"X-User-Id": scope.user_id + "-other"})
        assert other.status_code == 404  # never revealed to another scope
        r = await c.get(f"/v1/notes/{mine}", params={"user_id": scope.user_id}, headers={"X-User-Id": "someone"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "conflicting_scope"
        r = await c.post("/v1/search", json={"query": "hiking", "user_id": "bad user"})
        assert r.status_code == 422 and "user_id" in r.json()["error"]["message"]
    async with httpx.AsyncClient(transport=transport, base_url="http://api", headers={"X-API-Key": BOUND_KEY}) as b:
        added = await b.post("/v1/notes", json={"content": "A note through the bound key.", "enrich": False})
        assert added.status_code == 201
        assert added.json()["note"]["scope"] == {"user_id": scope.user_id, "agent_id": "bound", "run_id": "default"}
        r = await b.get(f"/v1/notes/{mine}")  # bound scope is user/bound/default: not the default agent's note
        assert r.status_code == 404
        r = await b.get("/v1/notes", headers={"X-User-Id": "someone-else"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"


async def test_bad_requests_get_clear_4xx(api: Any, scope: Scope) -> None:
    client, svc = api
    cases: list[tuple[str, str, dict[str, Any], int, str]] = [
        ("POST", "/v1/notes", {"content": ""}, 422, "empty"),
        ("POST", "/v1/notes", {"content": "x" * (svc.settings.max_content_chars + 1)}, 422, "over the limit"),
        ("POST", "/v1/notes", {"content": "bad\x00bytes"}, 422, "control characters"),
        ("POST", "/v1/notes", {"content": "ok", "note_id": "has space"}, 422, "note id"),
        ("POST", "/v1/notes", {"content": "ok", "colour": "red"}, 422, "colour"),
        ("POST", "/v1/notes", {"content": "ok", "metadata": {"k": 1}}, 422, "metadata"),
        ("POST", "/v1/notes", {}, 422, "content"),
        ("POST", "/v1/search", {"query": "x", "mode": "psychic"}, 422, "mode"),
        ("POST", "/v1/search", {"query": "x", "k": 0}, 422, "k"),
        ("POST", "/v1/ask", {"question": "   "}, 422, "empty"),
        ("GET", "/v1/notes?limit=0", {}, 422, "limit"),
        ("GET", "/v1/notes/bad%20id", {}, 422, "note id"),
        ("POST", "/v1/notes/nope/links", {"target_id": "nope2", "type": "LOVES"}, 422, "type"),
        ("GET", "/v1/notes/does-not-exist/history", {}, 404, "does-not-exist"),
        ("PUT", "/v1/notes/does-not-exist", {"content": "new"}, 404, "does-not-exist"),
        ("GET", "/v1/nowhere", {}, 404, "Not Found"),
        ("DELETE", "/v1/search", {}, 405, "Method Not Allowed"),
    ]
    for method, url, body, code, words in cases:
        r = await client.request(method, url, json=body if method in ("POST", "PUT") else None)
        assert r.status_code == code, (method, url, r.text)
        assert words.lower() in r.json()["error"]["message"].lower(), (url, r.json())
    r = await client.post("/v1/notes", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and "not valid JSON" in r.json()["error"]["message"]
    r = await client.post("/v1/notes", content=b"x" * 2_000_000, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted while streaming
        for _ in range(40):
            yield b" " * 50_000

    r = await client.post("/v1/notes", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


async def test_llm_and_store_failures_are_502_and_503(scope: Scope, make_service: Any, settings: Any) -> None:
    def broken(messages: list[BaseMessage]) -> Any:
        if step_of(messages) == "answer":
            return ConnectionError("LLM endpoint unreachable")
        return amem_responder()(messages)

    svc, _ = await make_service(broken, llm_max_retries=0, auth_disabled=True)
    async with client_for(create_app(svc.settings, svc), **{"X-User-Id": scope.user_id}) as client:
        await client.post("/v1/notes", json={"content": "Tim collects stamps.", "enrich": False})
        r = await client.post("/v1/ask", json={"question": "What does Tim collect?"})
        assert r.status_code == 502 and r.json()["error"]["code"] == "llm_failed"

    down = settings.model_copy(
        update={"neo4j_uri": "bolt://127.0.0.1:1", "auth_disabled": True, "neo4j_connect_timeout": 1.0}
    )
    driver = AsyncGraphDatabase.driver(down.neo4j_uri, connection_timeout=1.0, max_transaction_retry_time=0.5)
    dead = AsyncMemoryService(
        down, Neo4jNoteStore(driver, "neo4j", down.neo4j_uri), svc.embedder, ScriptedChatModel(amem_responder())
    )
    try:
        async with client_for(create_app(down, dead), **{"X-User-Id": scope.user_id}) as client:
            r = await client.get("/v1/notes")
            assert r.status_code == 503 and r.json()["error"]["code"] == "store_unavailable"
            assert "NEO4J_URI" in r.json()["error"]["message"]
            r = await client.get("/health")
            assert r.status_code == 503 and r.json()["status"] == "unavailable"
    finally:
        await dead.close()


async def test_openapi_schema(api: Any) -> None:
    client, _ = api
    schema = (await client.get("/openapi.json")).json()
    assert {
        "/v1/notes",
        "/v1/notes/{note_id}",
        "/v1/search",
        "/v1/ask",
        "/v1/notes/{note_id}/history",
        "/v1/notes/{note_id}/links",
        "/v1/notes/bulk",
        "/health",
        "/v1/status",
    } <= set(schema["paths"])
    assert set(schema["components"]["securitySchemes"]) == {"APIKeyHeader", "HTTPBearer"}
    assert "embedding" not in schema["components"]["schemas"]["NoteOut"]["properties"]
    assert set(schema["paths"]["/v1/notes/{note_id}"]) == {"get", "put", "patch", "delete"}


async def test_health_answers_while_the_local_model_starts(settings: Any, scope: Scope) -> None:
    """The app starts the model in a worker thread: /health and LLM-free routes answer meanwhile, and
    a request that needs the model waits for it instead of freezing the event loop."""
    started, release = threading.Event(), threading.Event()

    def slow_start(_: Any) -> BaseChatModel:  # a local model still loading, until released
        started.set()
        release.wait(60)
        return ScriptedChatModel(amem_responder())

    app = create_app(settings.model_copy(update={"auth_disabled": True}), chat_model_start=slow_start)
    try:
        async with app.router.lifespan_context(app), client_for(app, **{"X-User-Id": scope.user_id}) as client:
            assert await asyncio.to_thread(started.wait, 30)
            health = await client.get("/health")
            assert health.status_code == 200 and (await client.get("/v1/status")).json()["llm"] == "starting"
            raw = await client.post("/v1/notes", json={"content": "Ana tunes her violin.", "enrich": False})
            assert raw.status_code == 201  # no LLM needed: served while the model starts
            enriched = asyncio.create_task(client.post("/v1/notes", json={"content": "Ana's violin is old."}))
            await asyncio.sleep(0.3)
            assert not enriched.done()  # waits for the model...
            assert (await client.get("/health")).status_code == 200  # ...without blocking the loop
            release.set()
            answer = await enriched
            assert answer.status_code == 201 and answer.json()["note"]["enrichment"] == "done"
            assert (await client.get("/v1/status")).json()["llm"] == "ready"
    finally:
        release.set()


async def test_a_failed_model_start_is_reported_and_only_llm_calls_fail(settings: Any, scope: Scope) -> None:
    def broken_start(_: Any) -> BaseChatModel:
        raise LocalServiceError("the local LLM server exited during start-up")

    app = create_app(settings.model_copy(update={"auth_disabled": True}), chat_model_start=broken_start)
    async with app.router.lifespan_context(app), client_for(app, **{"X-User-Id": scope.user_id}) as client:
        while (await client.get("/v1/status")).json()["llm"] == "starting":
            await asyncio.sleep(0.05)
        health = (await client.get("/v1/status")).json()
        assert health["status"] == "ok" and health["llm"].startswith("failed: the local LLM server exited")
        assert (await client.post("/v1/notes", json={"content": "Stored raw.", "enrich": False})).status_code == 201
        enriched = await client.post("/v1/notes", json={"content": "Needs the model."})
        assert enriched.status_code == 503 and enriched.json()["error"]["code"] == "local_service_unavailable"


async def test_a_trailing_newline_is_not_a_valid_scope_or_id(api: Any, scope: Scope) -> None:
    """Issue 16 item 2: `?user_id=zz%0A` and `"note_id": "x\\n"` were accepted (201)."""
    client, svc = api
    transport = client._transport
    async with httpx.AsyncClient(transport=transport, base_url="http://api", headers={"X-API-Key": KEY}) as c:
        r = await c.post(f"/v1/notes?user_id={scope.user_id}%0A", json={"content": "newline scope", "enrich": False})
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_scope", r.text
    r = await client.post("/v1/notes", json={"content": "newline id", "note_id": "x\n", "enrich": False})
    assert r.status_code == 422 and "note id" in r.json()["error"]["message"], r.text
    assert await svc.count(scope) == 0


async def test_another_scopes_id_is_neither_refused_nor_revealed(api: Any, scope: Scope) -> None:
    """Issue 16 item 1: with ids unique across all scopes, a key bound to one scope got 409 "already in
    use" for another scope's id and 201 for an unused one: an existence oracle across tenants."""
    client, svc = api
    theirs = Scope(user_id=scope.user_id + "-other")
    await svc.add("Their note: the vault code is 4711.", theirs, note_id="shared-1", enrich=False)
    try:
        async with httpx.AsyncClient(
            transport=client._transport, base_url="http://api", headers={"X-API-Key": BOUND_KEY}
        ) as b:
            taken = await b.post("/v1/notes", json={"content": "mine", "note_id": "shared-1", "enrich": False})
            unused = await b.post("/v1/notes", json={"content": "mine", "note_id": "unused-1", "enrich": False})
            assert (taken.status_code, unused.status_code) == (201, 201), taken.text
            assert taken.json()["note"]["scope"]["agent_id"] == "bound" and "4711" not in taken.text
            again = await b.post("/v1/notes", json={"content": "other text", "note_id": "shared-1"})
            assert again.status_code == 200 and again.json()["note"]["content"] == "mine"  # idempotent in its scope
        kept = await svc.get("shared-1", theirs)
        assert kept.content == "Their note: the vault code is 4711." and kept.version == 1
    finally:
        await svc.delete("shared-1", theirs)


async def test_concurrent_adds_of_one_id_or_one_content_make_one_note(api: Any, scope: Scope) -> None:
    """Issue 16 item 5: 20 concurrent adds of one note_id gave some callers 409 for their own id (the
    get and scope checks raced); 20 concurrent dedupe_content adds of one text made 18-20 notes."""
    client, svc = api

    async def post(i: int, body: dict[str, Any]) -> httpx.Response:
        await asyncio.sleep(0.003 * i)  # staggered: some callers land between another's checks and write
        return await client.post("/v1/notes", json=body)

    by_id = await asyncio.gather(*(post(i, {"content": f"take {i}", "note_id": "same-1"}) for i in range(20)))
    assert sorted(r.status_code for r in by_id) == [200] * 19 + [201], [r.text for r in by_id if r.status_code >= 300]
    assert len({r.json()["note"]["content"] for r in by_id}) == 1  # every caller sees the one stored note
    deduped = await asyncio.gather(*(post(i, {"content": "same text", "dedupe_content": True}) for i in range(20)))
    assert sorted(r.status_code for r in deduped) == [200] * 19 + [201], [r.text for r in deduped]
    assert len({r.json()["note"]["id"] for r in deduped}) == 1
    assert await svc.count(scope) == 2


async def test_every_number_a_client_sends_is_bounded(api: Any) -> None:
    """Issue 16 item 6: `offset=9223372036854775807` was a 500 (Neo4j's long overflowed), `2**63` too
    (the driver's OverflowError). Every number has a bound (models.LIMITS): out of it is a 422."""
    client, _ = api
    from graphmem.models import LIMITS

    added = await client.post("/v1/notes", json={"content": "A bounded note.", "enrich": False})
    nid = added.json()["note"]["id"]
    for url in (
        f"/v1/notes?offset={2**63 - 1}",
        f"/v1/notes?offset={2**63}",
        f"/v1/notes?offset={LIMITS.offset_max + 1}",
        "/v1/notes?offset=-1",
        f"/v1/notes?limit={LIMITS.page_max + 1}",
        f"/v1/notes?limit={2**64}",
        f"/v1/notes/{nid}/links?limit={LIMITS.links_page_max + 1}",
        f"/v1/notes/{nid}/links?offset={2**63}",
        f"/v1/notes/{nid}/history?limit={LIMITS.history_page_max + 1}",
        f"/v1/notes/{nid}/history?offset={2**63 - 1}",
    ):
        r = await client.get(url)
        assert r.status_code == 422, (url, r.status_code, r.text[:300])
    for path, body in (
        ("/v1/search", {"query": "x", "k": LIMITS.k_max + 1}),
        ("/v1/search", {"query": "x", "k": 2**63}),
        ("/v1/ask", {"question": "x", "k": LIMITS.k_max + 1}),
        ("/v1/ask", {"question": "x", "token_budget": LIMITS.token_budget_max + 1}),
        ("/v1/ask", {"question": "x", "token_budget": 2**70}),
    ):
        r = await client.post(path, json=body)
        assert r.status_code == 422, (path, body, r.status_code, r.text[:300])
    r = await client.get(f"/v1/notes?offset={LIMITS.offset_max}")  # the bound itself is fine
    assert r.status_code == 200 and r.json()["notes"] == []


async def test_links_and_history_come_in_pages(api: Any, scope: Scope) -> None:
    """Issue 16 item 7: a note's links (1,998 on one note) and history (300 versions, 2.4 MB) came back
    whole; now in pages of at most LIMITS.links_page_max / history_page_max, with next_offset."""
    client, svc = api
    hub = (await svc.add("The hub note.", scope, note_id="hub", enrich=False)).note.id
    for i in range(5):
        await svc.add(f"Spoke {i}.", scope, note_id=f"spoke-{i}", enrich=False)
        await svc.link(hub, f"spoke-{i}", scope, "RELATED_TO")
        await svc.update(hub, scope, f"The hub note, take {i}.")
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = (await client.get(f"/v1/notes/{hub}/links", params={"limit": 2, "offset": offset})).json()
        assert len(page["links"]) <= 2 and page["limit"] == 2 and page["offset"] == offset
        seen += [x["target_id"] for x in page["links"]]
        offset = page["next_offset"]
    assert sorted(seen) == [f"spoke-{i}" for i in range(5)]
    first = (await client.get(f"/v1/notes/{hub}/history", params={"limit": 3})).json()
    rest = (await client.get(f"/v1/notes/{hub}/history", params={"limit": 3, "offset": 3})).json()
    assert [v["version"] for v in first["versions"]] == [1, 2, 3] and first["next_offset"] == 3
    assert [v["version"] for v in rest["versions"]] == [4, 5] and rest["next_offset"] is None
    assert len((await client.get(f"/v1/notes/{hub}/links")).json()["links"]) == 5  # default page: all of these


async def test_health_says_only_up_or_down(api: Any, settings: Any, scope: Scope) -> None:
    """Issue 16 item 12: the unauthenticated /health showed the internal Bolt address and the driver's
    error when Neo4j was down. Now it says up or down; the details need a key (/v1/status)."""
    client, svc = api
    async with httpx.AsyncClient(transport=client._transport, base_url="http://api") as anon:
        up = await anon.get("/health")
        assert up.status_code == 200 and up.json() == {"status": "ok"}
        assert (await anon.get("/v1/status")).status_code == 401
    status = (await client.get("/v1/status")).json()
    assert status["status"] == "ok" and status["neo4j"]["edition"] and status["llm"] and status["version"]

    down = settings.model_copy(
        update={"neo4j_uri": "bolt://127.0.0.1:1", "auth_disabled": True, "neo4j_connect_timeout": 1.0}
    )
    driver = AsyncGraphDatabase.driver(down.neo4j_uri, connection_timeout=1.0, max_transaction_retry_time=0.5)
    dead = AsyncMemoryService(
        down, Neo4jNoteStore(driver, "neo4j", down.neo4j_uri), svc.embedder, ScriptedChatModel(amem_responder())
    )
    try:
        async with client_for(create_app(down, dead)) as c:
            r = await c.get("/health")
            assert r.status_code == 503 and r.json() == {"status": "unavailable"}, r.text
            detail = await c.get("/v1/status")  # auth disabled here: the operator's view
            assert detail.status_code == 200 and detail.json()["status"] == "unavailable"
            assert "NEO4J_URI" in detail.json()["detail"]
    finally:
        await dead.close()


async def test_an_llm_error_echoing_the_key_reaches_neither_the_client_nor_the_log(
    settings: Any, scope: Scope, embedder: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 16 item 10: an LLM endpoint whose 401/500 body echoes the Authorization header made
    /v1/ask answer 502 with the whole key, and the key was logged at WARNING."""
    from tests.reliability.support import FaultyOpenAI, Reply

    key = "sk-proj-ECHOED-secret-key-5f2a9c71"
    calls: list[int] = []

    def script(body: dict[str, Any]) -> Reply:
        auth = body["_headers"].get("authorization", "")
        calls.append(1)
        if len(calls) % 2:
            return Reply(status=401, body={"error": {"message": f"Bad header Authorization: {auth}"}})
        return Reply(status=500, body={"error": {"message": f"failed: {{'Authorization': '{auth}'}} key={key}"}})

    caplog.set_level(logging.DEBUG, logger="graphmem")
    caplog.set_level(logging.WARNING)
    with FaultyOpenAI(script) as stub:
        llm = settings.model_copy(
            update={
                "llm_provider": "compatible",
                "llm_base_url": stub.base_url,
                "llm_api_key": SecretStr(key),
                "llm_max_retries": 0,
                "auth_disabled": True,
            }
        )
        svc = await AsyncMemoryService.create(llm, embedder=embedder)
        try:
            async with client_for(create_app(llm, svc), **{"X-User-Id": scope.user_id}) as client:
                added = await client.post("/v1/notes", json={"content": "Stored raw when the LLM fails."})
                asked = [await client.post("/v1/ask", json={"question": "anything?"}) for _ in range(2)]
        finally:
            await svc.close()
    assert stub.requests and all(r["_headers"]["authorization"] == f"Bearer {key}" for r in stub.requests)
    assert added.status_code == 201 and added.json()["note"]["enrichment"] == "pending"
    assert [r.status_code for r in asked] == [502, 502] and all("llm_failed" in r.text for r in asked)
    seen = added.text + "".join(r.text for r in asked) + caplog.text + "".join(str(r.args) for r in caplog.records)
    for part in (key, key[-12:]):
        assert part not in seen, part
