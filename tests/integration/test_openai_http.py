"""The LLM path through langchain-openai's real HTTP client, against a local OpenAI-compatible stub.

These script tool-call replies: the ``function_calling`` path (llama-cpp-python, compatible servers).
The ``json_schema`` path of the local llama-server: tests/unit/test_llm_json_schema.py.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from graphmem.models import EnrichmentStatus, Scope
from tests.fakes import OpenAIStub, completion

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _script(body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    tools = body.get("tools") or []
    name = tools[0]["function"]["name"] if tools else None
    if name == "NoteEnrichment":
        return (
            200,
            {},
            completion(
                name, {"keywords": ["violin", "lessons"], "context": "Music practice.", "tags": ["music", "hobby"]}
            ),
        )
    if name == "EvolutionDecision":
        return 200, {}, completion(name, {"links": [], "neighbour_updates": []})
    return 200, {}, completion(text="stub answer")


async def test_add_and_ask_through_chat_openai(make_service: Any, scope: Scope) -> None:
    with OpenAIStub(_script) as stub:
        model = ChatOpenAI(base_url=stub.base_url, api_key="test-key", model="stub", max_retries=0, timeout=10)
        svc, _ = await make_service(
            chat_model=model, structured_output_method="function_calling"
        )  # the real client instead of the scripted one
        added = await svc.add("Ana takes violin lessons on Tuesdays.", scope)
        answer = await svc.ask("When does Ana take violin lessons?", scope)
    assert added.note.keywords == ["violin", "lessons"] and added.note.enrichment == EnrichmentStatus.DONE
    assert added.usage.input_tokens == 50 and added.usage.output_tokens == 10
    assert answer.answer == "stub answer" and answer.usage.total_tokens == 60
    first = stub.requests[0]
    assert first["model"] == "stub" and first["tools"][0]["function"]["name"] == "NoteEnrichment"
    assert "violin" in first["messages"][-1]["content"]


async def test_rate_limit_and_server_error_are_retried(make_service: Any, scope: Scope) -> None:
    sequence = iter(
        [
            (429, {"retry-after": "0.1"}, {"error": {"message": "slow down", "type": "rate_limit"}}),
            (500, {}, {"error": {"message": "boom", "type": "server_error"}}),
        ]
    )

    def script(body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        return next(sequence, None) or _script(body)

    with OpenAIStub(script) as stub:
        model = ChatOpenAI(base_url=stub.base_url, api_key="k", model="stub", max_retries=0, timeout=10)
        svc, _ = await make_service(
            chat_model=model, structured_output_method="function_calling", enable_links=False, enable_evolution=False
        )
        added = await svc.add("Leo repairs bicycles.", scope)
    assert added.note.enrichment == EnrichmentStatus.DONE
    assert len(stub.requests) == 3 and added.usage.llm_calls == 3


async def test_endless_server_errors_store_the_note_raw(make_service: Any, scope: Scope) -> None:
    with OpenAIStub(lambda body: (503, {}, {"error": {"message": "down"}})) as stub:
        model = ChatOpenAI(base_url=stub.base_url, api_key="k", model="stub", max_retries=0, timeout=10)
        svc, _ = await make_service(chat_model=model, structured_output_method="function_calling", llm_max_retries=2)
        added = await svc.add("Mia paints watercolours.", scope)
    assert added.created and added.note.enrichment == EnrichmentStatus.PENDING
    assert len(stub.requests) == 3
    assert (await svc.get(added.note.id, scope)).content == "Mia paints watercolours."


async def test_cut_off_tool_call_is_re_asked_without_resending_it(make_service: Any, scope: Scope) -> None:
    """A reply cut at the output limit (broken tool-call JSON, finish_reason "length") is re-asked with
    a shorter-please message; the broken tool call is not sent back, since a server such as
    llama-cpp-python refuses an assistant tool call with no tool result after it (HTTP 500)."""
    evolve_requests: list[dict[str, Any]] = []

    def script(body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        for m in body["messages"]:
            if m["role"] == "assistant" and (m.get("tool_calls") or m.get("content") is None):
                return 500, {}, {"error": {"message": "messages: assistant content must be a string"}}
        tools = body.get("tools") or []
        if not tools or tools[0]["function"]["name"] != "EvolutionDecision":
            return _script(body)
        evolve_requests.append(body)
        shown = re.search(r"Valid neighbour ids: (\S+)", body["messages"][1]["content"])
        assert shown is not None
        link = {"target_id": shown.group(1), "reason": "both about the violin", "type": "SUPPORTS"}
        if len(evolve_requests) == 1:
            cut = completion("EvolutionDecision", {"links": [link, link], "neighbour_updates": []})
            call = cut["choices"][0]["message"]["tool_calls"][0]["function"]
            call["arguments"] = call["arguments"][:70]  # broken JSON, as when max_tokens is hit
            cut["choices"][0]["finish_reason"] = "length"
            return 200, {}, cut
        return 200, {}, completion("EvolutionDecision", {"links": [link], "neighbour_updates": []})

    with OpenAIStub(script) as stub:
        model = ChatOpenAI(base_url=stub.base_url, api_key="k", model="stub", max_retries=0, timeout=10)
        svc, _ = await make_service(chat_model=model, structured_output_method="function_calling")
        first = await svc.add("Ana takes violin lessons on Tuesdays.", scope)
        second = await svc.add("Ana's violin teacher praised her bowing.", scope)
    assert len(evolve_requests) == 2
    repair = evolve_requests[1]["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "user"]
    assert "cut off" in repair[-1]["content"] and "too long" in repair[-1]["content"]
    assert second.usage.repairs == 1
    assert [(link.target_id, link.type.value) for link in second.links] == [(first.note.id, "SUPPORTS")]
