"""The MCP server: in-process through the SDK's client, and `graphmem mcp` as a stdio subprocess."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from graphmem.interfaces.mcp_server import create_mcp_server
from graphmem.models import Scope

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture
def other(scope: Scope, graph: Any) -> Iterator[Scope]:
    sc = Scope(user_id=scope.user_id + "-other")
    yield sc
    graph.q("MATCH (n) WHERE n.user_id = $u DETACH DELETE n", u=sc.user_id)


def scoped(settings: Any, scope: Scope, **more: Any) -> Any:
    return settings.model_copy(
        update={"mcp_user_id": scope.user_id, "mcp_agent_id": scope.agent_id, "mcp_run_id": scope.run_id, **more}
    )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_in_process(mode: str, scope: Scope, other: Scope, make_service: Any, settings: Any) -> None:
    svc, _ = await make_service()
    theirs = await svc.add("Other user's note about pottery.", other, enrich=False)
    server = create_mcp_server(scoped(settings, scope), svc)
    async with Client(server, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {
            "add",
            "add_many",
            "search",
            "ask",
            "get",
            "delete",
            "history",
            "rollback",
            "undo_add",
            "consolidate",
        }
        for tool in tools.values():  # the scope is not something a client can pass
            assert not {"user_id", "agent_id", "run_id", "scope"} & set(tool.input_schema["properties"])
        assert tools["search"].annotations.read_only_hint is True
        assert tools["delete"].annotations.destructive_hint is True

        first = await client.call_tool("add", {"content": "Melanie runs a pottery studio in Portland."})
        assert not first.is_error, first.content
        note = first.structured_content["note"]
        assert first.structured_content["created"] is True and note["keywords"]
        second = await client.call_tool(
            "add", {"content": "Melanie's pottery studio sells bowls.", "event_time": "2023-05-08"}
        )
        assert [x["target_id"] for x in second.structured_content["links"]] == [note["id"]]
        assert second.structured_content["evolved"] == [note["id"]]

        found = await client.call_tool("search", {"query": "pottery", "k": 2, "mode": "hybrid"})
        hits = found.structured_content["hits"]
        assert {h["id"] for h in hits} == {note["id"], second.structured_content["note"]["id"]}
        assert theirs.note.id not in {h["id"] for h in hits}  # fixed scope: never another user's notes

        answer = await client.call_tool("ask", {"question": "What does Melanie sell?"})
        assert answer.structured_content["answer"] == "scripted answer" and answer.structured_content["notes"]

        got = await client.call_tool("get", {"note_id": second.structured_content["note"]["id"]})
        assert got.structured_content["note"]["event_time"].startswith("2023-05-08")
        assert got.structured_content["links"][0]["type"] == "SUPPORTS"

        hidden = await client.call_tool("get", {"note_id": theirs.note.id})
        assert hidden.is_error and "no note" in hidden.content[0].text
        kept = await client.call_tool("delete", {"note_id": theirs.note.id})
        assert kept.structured_content == {"id": theirs.note.id, "deleted": False}
        assert (await svc.get(theirs.note.id, other)).id == theirs.note.id

        gone = await client.call_tool("delete", {"note_id": note["id"]})
        assert gone.structured_content == {"id": note["id"], "deleted": True}

        empty = await client.call_tool("add", {"content": "   "})
        assert empty.is_error and "empty" in empty.content[0].text
        bad_k = await client.call_tool("search", {"query": "x", "k": 0})
        assert bad_k.is_error
        bad_id = await client.call_tool("get", {"note_id": "not an id"})
        assert bad_id.is_error and "note id" in bad_id.content[0].text
    assert await svc.count(scope) == 1


async def test_add_many_adds_in_order_and_resends_nothing_twice(scope: Scope, make_service: Any, settings: Any) -> None:
    svc, _ = await make_service()
    server = create_mcp_server(scoped(settings, scope), svc)
    turns = [
        {"content": "Melanie runs a pottery studio in Portland.", "event_time": "2023-05-08"},
        {"content": "Melanie's pottery studio sells bowls at the market."},
        {"content": "   "},
    ]
    async with Client(server) as client:
        first = await client.call_tool("add_many", {"items": turns})
        assert not first.is_error, first.content
        items = first.structured_content["items"]
        assert [x["status"] for x in items] == ["added", "added", "failed"]
        assert items[1]["links"] == 1 and "empty" in items[2]["error"]
        again = await client.call_tool("add_many", {"items": turns[:2]})
        assert [x["status"] for x in again.structured_content["items"]] == ["existing", "existing"]
        assert [x["id"] for x in again.structured_content["items"]] == [x["id"] for x in items[:2]]
        too_many = await client.call_tool("add_many", {"items": [{"content": "x"}] * 101})
        assert too_many.is_error
    assert await svc.count(scope) == 2


async def test_graphmem_mcp_over_stdio(scope: Scope, settings: Any) -> None:
    exe = shutil.which("graphmem", path=str(Path(sys.executable).parent)) or shutil.which("graphmem")
    assert exe, "the graphmem console script is not installed"
    env = {
        **os.environ,
        "NEO4J_URI": settings.neo4j_uri,
        "NEO4J_DATABASE": settings.neo4j_database,
        "GRAPHMEM_MCP_USER_ID": scope.user_id,
        "GRAPHMEM_ENABLE_ENRICHMENT": "false",  # no LLM in this process: raw notes, embeddings only
        # ... and no local model started in the background: `graphmem mcp` starts one for `ask`, and on
        # a developer's machine with the 1.5B built it would start (and leave running) a real server
        "GRAPHMEM_LLM_PROVIDER": "compatible",
        "GRAPHMEM_LLM_BASE_URL": "http://127.0.0.1:9/v1",
    }
    if settings.neo4j_password is not None:
        env["NEO4J_USERNAME"] = settings.neo4j_username
        env["NEO4J_PASSWORD"] = settings.neo4j_password.get_secret_value()
    params = StdioServerParameters(command=exe, args=["mcp"], env=env, cwd=str(Path(__file__).resolve().parents[2]))
    async with Client(params, read_timeout_seconds=120) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {
            "add",
            "add_many",
            "search",
            "ask",
            "get",
            "delete",
            "history",
            "rollback",
            "undo_add",
            "consolidate",
        }
        added = await client.call_tool("add", {"content": "Gina's bakery sells sourdough bread on Sundays."})
        assert not added.is_error, added.content
        note_id = added.structured_content["note"]["id"]
        found = await client.call_tool("search", {"query": "sourdough", "k": 1})
        assert found.structured_content["hits"][0]["id"] == note_id
        got = await client.call_tool("get", {"note_id": note_id})
        assert got.structured_content["note"]["content"].startswith("Gina's bakery")
