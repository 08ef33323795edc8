"""History diffs, rollback and undo through REST, MCP and the CLI, against the real Neo4j."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from langchain_core.embeddings import Embeddings
from mcp import Client
from pydantic import SecretStr
from typer.testing import CliRunner

from graphmem.config import Settings
from graphmem.interfaces.cli import app as cli
from graphmem.interfaces.mcp_server import create_mcp_server
from graphmem.interfaces.rest import create_app
from graphmem.models import Scope
from graphmem.service.sync import MemoryService
from tests.fakes import EVOLVED_SUFFIX, ScriptedChatModel, amem_responder

on_session_loop = pytest.mark.asyncio(loop_scope="session")

KEY = "versions-key-0123456789abcdef"
POTTERY = "Melanie runs a pottery studio in Portland."
MARKET = "Melanie's pottery studio sells bowls at the Portland market."


@pytest_asyncio.fixture(loop_scope="session")
async def api(scope: Scope, make_service: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    svc, _ = await make_service(api_keys=SecretStr(f"{KEY},bound-{KEY}={scope.user_id}/bound"), auth_disabled=False)
    app = create_app(svc.settings, svc)
    transport = httpx.ASGITransport(app=app)
    headers = {"X-API-Key": KEY, "X-User-Id": scope.user_id}
    async with httpx.AsyncClient(transport=transport, base_url="http://api", headers=headers) as client:
        yield client, svc


@on_session_loop
async def test_rest_history_diff_rollback_and_undo(api: Any, scope: Scope) -> None:
    client, _ = api
    p = scope.user_id
    assert (await client.post("/v1/notes", json={"content": POTTERY, "note_id": f"{p}-a"})).status_code == 201
    b = await client.post("/v1/notes", json={"content": MARKET, "note_id": f"{p}-b"})
    assert b.status_code == 201 and b.json()["evolved"][0]["note_id"] == f"{p}-a"
    assert (
        await client.put(f"/v1/notes/{p}-a", json={"content": "Melanie runs a ceramics studio."})
    ).status_code == 200

    r = await client.get(f"/v1/notes/{p}-a/history/diff")
    assert r.status_code == 200, r.text
    body = r.json()
    assert [(d["from_version"], d["to_version"], d["change"]) for d in body["diffs"]] == [
        (1, 2, "evolution"),
        (2, 3, "update"),
    ]
    assert body["diffs"][0]["cause_note_id"] == f"{p}-b" and body["next_offset"] is None
    content = next(f for f in body["diffs"][1]["fields"] if f["field"] == "content")
    assert {"op": "insert", "text": "ceramics studio."} in content["ops"]
    page = (await client.get(f"/v1/notes/{p}-a/history/diff", params={"limit": 1})).json()
    assert len(page["diffs"]) == 1 and page["next_offset"] == 1
    versions = (await client.get(f"/v1/notes/{p}-a/history", params={"limit": 1, "offset": 1})).json()["versions"]
    assert [v["version"] for v in versions] == [2]

    dry = await client.post(f"/v1/notes/{p}-b/undo", json={"dry_run": True})
    assert dry.status_code == 200 and dry.json()["dry_run"] is True
    assert [(n["note_id"], n["status"]) for n in dry.json()["neighbours"]] == [(f"{p}-a", "refused")]

    rolled = await client.post(f"/v1/notes/{p}-a/rollback", json={"version": 1})
    assert rolled.status_code == 200, rolled.text
    assert rolled.json()["note"]["version"] == 4 and rolled.json()["note"]["content"] == POTTERY
    assert "embedding" not in rolled.json()["note"] and rolled.json()["diff"]["restored_version"] == 1

    undone = await client.post(f"/v1/notes/{p}-b/undo", json={"delete_note": True})
    assert undone.status_code == 200, undone.text
    assert undone.json()["note_deleted"] is True
    assert [(x["source_id"], x["type"]) for x in undone.json()["links_removed"]] == [(f"{p}-b", "SUPPORTS")]
    assert (await client.get(f"/v1/notes/{p}-b")).status_code == 404

    errors = {
        "unknown version": (await client.post(f"/v1/notes/{p}-a/rollback", json={"version": 9}), 404),
        "current version": (await client.post(f"/v1/notes/{p}-a/rollback", json={"version": 4}), 422),
        "version 0": (await client.post(f"/v1/notes/{p}-a/rollback", json={"version": 0}), 422),
        "no body": (await client.post(f"/v1/notes/{p}-a/rollback"), 422),
        "unknown note": (await client.post("/v1/notes/nothing-here/undo", json={}), 404),
        "change label": (await client.post("/v1/notes/update/undo", json={}), 422),
        "bad limit": (await client.get(f"/v1/notes/{p}-a/history/diff", params={"limit": 0}), 422),
        "other scope": (
            await client.post(f"/v1/notes/{p}-a/rollback", json={"version": 1, "agent_id": "elsewhere"}),
            404,
        ),
        "bound key": (
            await client.post(
                f"/v1/notes/{p}-a/undo", json={"agent_id": "default"}, headers={"X-API-Key": f"bound-{KEY}"}
            ),
            403,
        ),
    }
    assert {k: r.status_code for k, (r, _) in errors.items()} == {k: s for k, (_, s) in errors.items()}
    assert errors["unknown version"][0].json()["error"]["message"] == f"note '{p}-a' has no earlier version 9"
    assert (await client.get(f"/v1/notes/{p}-a")).json()["version"] == 4  # the refusals wrote nothing

    spec = (await client.get("/openapi.json")).json()
    assert {"/v1/notes/{note_id}/history/diff", "/v1/notes/{note_id}/rollback", "/v1/notes/{note_id}/undo"} <= set(
        spec["paths"]
    )
    assert "409" in spec["paths"]["/v1/notes/{note_id}/rollback"]["post"]["responses"]


@on_session_loop
async def test_mcp_history_rollback_undo(scope: Scope, make_service: Any, settings: Settings) -> None:
    svc, _ = await make_service(evolution_words=False)
    p = scope.user_id
    a = await svc.add(POTTERY, scope, note_id=f"{p}-a")
    b = await svc.add(MARKET, scope, note_id=f"{p}-b")
    mcp_settings = settings.model_copy(
        update={"mcp_user_id": scope.user_id, "mcp_agent_id": scope.agent_id, "mcp_run_id": scope.run_id}
    )
    async with Client(create_mcp_server(mcp_settings, svc)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"history", "rollback", "undo_add"} <= set(tools)
        assert tools["history"].annotations.read_only_hint is True
        assert tools["undo_add"].annotations.destructive_hint is True

        history = await client.call_tool("history", {"note_id": a.note.id})
        assert not history.is_error, history.content
        [step] = history.structured_content["diffs"]
        assert step["change"] == "evolution" and step["cause_note_id"] == b.note.id
        assert {f["field"] for f in step["fields"]} == {"context", "tags"}

        undone = await client.call_tool("undo_add", {"note_id": b.note.id})
        assert [n["status"] for n in undone.structured_content["neighbours"]] == ["reverted"]
        assert [x["type"] for x in undone.structured_content["links_removed"]] == ["SUPPORTS"]

        rolled = await client.call_tool("rollback", {"note_id": a.note.id, "version": 2})
        assert rolled.structured_content["note"]["version"] == 4
        assert rolled.structured_content["note"]["context"] == a.note.content + EVOLVED_SUFFIX

        missing = await client.call_tool("rollback", {"note_id": a.note.id, "version": 9})
        assert missing.is_error and "no earlier version 9" in missing.content[0].text
        hidden = await client.call_tool("history", {"note_id": "not-in-this-scope"})
        assert hidden.is_error and "no note" in hidden.content[0].text


@pytest.fixture
def seeded(settings: Settings, embedder: Embeddings, scope: Scope) -> Iterator[tuple[str, str]]:
    """Two notes through the blocking service: b's add linked to and evolved a."""
    with MemoryService(settings, chat_model=ScriptedChatModel(amem_responder()), embedder=embedder) as svc:
        a = svc.add(POTTERY, scope, note_id=f"{scope.user_id}-a")
        b = svc.add(MARKET, scope, note_id=f"{scope.user_id}-b")
        yield a.note.id, b.note.id


def test_cli_history_diff_rollback_and_undo(seeded: tuple[str, str], scope: Scope) -> None:
    a, b = seeded
    runner = CliRunner()
    user = ["--user", scope.user_id]

    shown = runner.invoke(cli, ["history", a, *user, "--diff"])
    assert shown.exit_code == 0, shown.output
    assert f"v1 → v2  evolved by the add of note {b}" in shown.output
    assert "{+evolved+}" in shown.output and "[-" in shown.output  # no colours in a pipe
    assert EVOLVED_SUFFIX.strip() in shown.output

    table = runner.invoke(cli, ["history", a, *user, "--json"])
    assert table.exit_code == 0 and [v["changed_by"] for v in json.loads(table.output)["versions"]] == [b]

    dry = runner.invoke(cli, ["undo", b, *user, "--dry-run"])
    assert dry.exit_code == 0 and "would revert" in dry.output and "nothing written" in dry.output

    undone = runner.invoke(cli, ["undo", b, *user, "--json"])
    assert undone.exit_code == 0, undone.output
    result = json.loads(undone.output)
    assert [n["status"] for n in result["neighbours"]] == ["reverted"] and len(result["links_removed"]) == 1

    rolled = runner.invoke(cli, ["rollback", a, "2", *user])
    assert rolled.exit_code == 0, rolled.output
    assert "now v4" in rolled.output and "rollback to version 2" in rolled.output

    diffs = json.loads(runner.invoke(cli, ["history", a, *user, "--diff", "--json", "--offset", "1"]).output)["diffs"]
    assert [(d["from_version"], d["change"]) for d in diffs] == [(2, "undo"), (3, "rollback")]

    missing = runner.invoke(cli, ["rollback", a, "9", *user])
    assert missing.exit_code != 0
