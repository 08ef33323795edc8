"""Structured output with ``json_schema`` (the local llama-server's method) through langchain-openai's
real HTTP client, against a loopback OpenAI-compatible stub."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from graphmem.llm.calls import LLMCaller
from graphmem.llm.outputs import NoteEnrichment
from graphmem.models import Usage
from graphmem.service.linking import EvolutionDecision
from tests.fakes import OpenAIStub, completion

pytestmark = pytest.mark.asyncio(loop_scope="session")

ENRICHMENT = {"keywords": ["violin", "lessons"], "context": "Music practice on Tuesdays.", "tags": ["music"]}


def chat(stub: OpenAIStub) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=stub.base_url,
        api_key="x",
        model="stub",
        max_retries=0,
        timeout=10,
        extra_body={"max_tokens": 77},  # as make_chat_model sets it for local servers
    )


def replies(*bodies: dict[str, Any]) -> Iterator[tuple[int, dict[str, str], Any]]:
    for body in bodies:
        yield 200, {}, body


def cut_off(text: str) -> dict[str, Any]:
    body = completion(text=text)
    body["choices"][0]["finish_reason"] = "length"
    return body


async def test_the_schema_goes_in_response_format_and_the_reply_is_parsed() -> None:
    answers = replies(completion(text=json.dumps(ENRICHMENT)))
    with OpenAIStub(lambda body: next(answers)) as stub:
        caller = LLMCaller(chat(stub), method="json_schema")
        usage = Usage()
        parsed, rejected = await caller.structured(NoteEnrichment, [HumanMessage("note")], usage)
    assert parsed == NoteEnrichment.model_validate(ENRICHMENT) and rejected == []
    assert usage.repairs == 0 and usage.llm_calls == 1 and usage.input_tokens == 50
    sent = stub.requests[0]
    assert sent["max_tokens"] == 77  # the model's own extra_body is kept
    assert "tools" not in sent and "tool_choice" not in sent
    fmt = sent["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "NoteEnrichment"
    assert fmt["json_schema"]["schema"] == NoteEnrichment.model_json_schema()


async def test_a_value_outside_the_schema_keeps_the_valid_items() -> None:
    """A grammar does not bound numbers (the 0.5B answered strength 10), nor does it stop a bad
    enum value from another server: the reply is kept, the bad item dropped, nothing raised (the
    SDK's parse() raised)."""
    decision = {
        "links": [
            {"target_id": "n-1", "reason": "same dog", "type": "SAME_TOPIC", "strength": 10},
            {"target_id": "n-2", "reason": "the walk", "type": "ELABORATES", "strength": 0.6},
            {"target_id": "n-3", "reason": "odd", "type": "LOVES", "strength": 0.5},
        ],
        "neighbour_updates": [],
    }
    answers = replies(completion(text=json.dumps(decision)))
    with OpenAIStub(lambda body: next(answers)) as stub:
        parsed, rejected = await LLMCaller(chat(stub), method="json_schema").structured(
            EvolutionDecision, [HumanMessage("new note")], Usage()
        )
    assert parsed is not None and [(x.target_id, x.strength) for x in parsed.links] == [("n-1", 1.0), ("n-2", 0.6)]
    assert len(rejected) == 1 and "n-3" in rejected[0]
    assert len(stub.requests) == 1


async def test_a_cut_off_reply_is_repaired_not_raised() -> None:
    """finish_reason "length": the SDK's parse() raised LengthFinishReasonError; now the caller asks again."""
    answers = replies(cut_off('{"keywords": ["violin", "lessons", "Tuesday'), completion(text=json.dumps(ENRICHMENT)))
    with OpenAIStub(lambda body: next(answers)) as stub:
        usage = Usage()
        parsed, _ = await LLMCaller(chat(stub), method="json_schema", repair_attempts=1).structured(
            NoteEnrichment, [HumanMessage("note")], usage
        )
    assert parsed == NoteEnrichment.model_validate(ENRICHMENT)
    assert usage.repairs == 1 and len(stub.requests) == 2
    retry = stub.requests[1]
    assert "too long" in retry["messages"][-1]["content"]
    assert retry["response_format"]["type"] == "json_schema"
