"""Test doubles built from real library classes (a LangChain chat model, an HTTP server), not mocks."""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
from collections.abc import Awaitable, Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graphmem.service.linking import prompts

Responder = Callable[[list[BaseMessage]], AIMessage]

_NOTE = re.compile(r"<note>(.*?)</note>", re.DOTALL)


def noted(messages: Sequence[BaseMessage]) -> list[str]:
    """The note texts a prompt shows (between <note> tags), in order."""
    return _NOTE.findall(str(messages[-1].content))


def judged_reply(p_yes: float) -> AIMessage:
    """A one-token yes/no answer with OpenAI-style log-probabilities, as llama.cpp servers send them."""
    p_yes = min(max(p_yes, 1e-6), 1 - 1e-6)
    top = [{"token": "yes", "logprob": math.log(p_yes)}, {"token": "no", "logprob": math.log(1 - p_yes)}]
    top.sort(key=lambda t: -float(t["logprob"]))  # type: ignore[arg-type]
    return AIMessage(
        content=str(top[0]["token"]),
        response_metadata={"logprobs": {"content": [{**top[0], "top_logprobs": top}]}},
        usage_metadata={"input_tokens": 80, "output_tokens": 1, "total_tokens": 81},
    )


def pairwise_responder(
    related: Callable[[str, str], float],
    *,
    reason: Callable[[str, str], str] = lambda a, b: "the same thing",
    context: Callable[[str, str], str] | None = None,
    enrich: Callable[[str], dict[str, Any]] | None = None,
) -> Responder:
    """A model for the pairwise decision: ``related(earlier, later)`` gives P(yes) for two note texts;
    ``reason`` and ``context`` write the link phrase and the earlier note's new context."""
    fallback = amem_responder()

    def respond(messages: list[BaseMessage]) -> AIMessage:
        step = step_of(messages)
        if step == "related":
            a, b = noted(messages)
            return judged_reply(related(a, b))
        if step == "reason":
            a, b = noted(messages)
            return text_reply(reason(a, b))
        if step == "evolve_one":
            a, b = noted(messages)
            return text_reply(context(a, b) if context else "")
        if step == "enrich" and enrich is not None:
            return tool_reply("NoteEnrichment", enrich(noted(messages)[0]))
        return fallback(messages)

    return respond


def tool_reply(name: str, args: dict[str, Any], *, input_tokens: int = 100, output_tokens: int = 20) -> AIMessage:
    """What a function-calling model returns for `with_structured_output(Schema, method="function_calling")`."""
    return AIMessage(
        content="",
        tool_calls=[{"name": name, "args": args, "id": "call_1", "type": "tool_call"}],
        usage_metadata={
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
    )


def text_reply(text: str, *, input_tokens: int = 100, output_tokens: int = 5) -> AIMessage:
    return AIMessage(
        content=text,
        usage_metadata={
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
    )


def step_of(messages: Sequence[BaseMessage]) -> str:
    """Which A-MEM step a prompt belongs to, read from its system message."""
    system = str(messages[0].content)
    if system == prompts.RELATED_SYSTEM:
        return "related"
    if system == prompts.LINK_REASON_SYSTEM:
        return "reason"
    if system == prompts.EVOLVE_ONE_SYSTEM:
        return "evolve_one"
    if "atomic memory notes" in system:
        return "enrich"
    if "Zettelkasten" in system:
        return "evolve"
    if "answer questions" in system:
        return "answer"
    return "other"


def shown_ids(messages: Sequence[BaseMessage]) -> list[str]:
    """The neighbour ids an evolve prompt offered to the model."""
    text = str(messages[-1].content)
    line = [x for x in text.splitlines() if x.startswith("Valid neighbour ids:")]
    return [x.strip() for x in line[0].split(":", 1)[1].split(",")] if line else []


class ScriptedChatModel(BaseChatModel):
    """A real BaseChatModel whose replies come from a function of the prompt.

    `bind_tools` returns self, so `with_structured_output(..., method="function_calling")` works and
    the scripted AIMessage tool calls go through LangChain's real output parsers.
    """

    responder: Any
    calls: list[list[BaseMessage]] = []  # noqa: RUF012 -- a pydantic field: each instance gets its own list

    def __init__(self, responder: Responder, **kwargs: Any) -> None:
        super().__init__(responder=responder, calls=[], **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append(list(messages))
        reply = self.responder(list(messages))
        if isinstance(reply, BaseException):
            raise reply
        return ChatResult(generations=[ChatGeneration(message=reply)])


# What the scripted model appends to the first neighbour's text as its evolved context: a context that
# stays about its own note, so the evolution guards let it through.
EVOLVED_SUFFIX = " (updated after a related note)"


def same_subject(messages: Sequence[BaseMessage]) -> str:
    """A link reason naming what the new note and the first neighbour shown share (as the guards
    require a reason to name something of both notes): 'same subject: <shared words>'."""
    from graphmem.service.wording import content_words

    new, first = [*noted(messages), "", ""][:2]
    shared = sorted(content_words(new) & content_words(first))
    return "same subject: " + ", ".join(shared[:3]) if shared else "same subject"


def amem_responder(
    *,
    link_type: str = "SUPPORTS",
    evolve: bool = True,
    bad_id: bool = False,
    bad_type: bool = False,
    answer: str = "scripted answer",
) -> Responder:
    """A well-behaved A-MEM model: enriches from the words of the note, links to the first neighbour."""

    def respond(messages: list[BaseMessage]) -> AIMessage:
        step = step_of(messages)
        if step == "enrich":
            words = [w.strip(".,!?<>/").lower() for w in str(messages[-1].content).split() if len(w) > 4]
            return tool_reply(
                "NoteEnrichment",
                {
                    "keywords": words[:4] or ["memory"],
                    "context": "A note about " + " ".join(words[:3]) + ".",
                    "tags": ["conversation", "personal"],
                },
            )
        if step == "evolve":
            ids = shown_ids(messages)
            links = [{"target_id": ids[0], "type": link_type, "reason": same_subject(messages), "strength": 0.8}]
            if bad_id:
                links.append({"target_id": "invented-id-0000", "type": "RELATED_TO", "reason": "x", "strength": 0.5})
            if bad_type:
                links.append({"target_id": ids[-1], "type": "LOVES", "reason": "x", "strength": 0.5})
            updates = (
                [
                    {
                        "note_id": ids[0],
                        "context": noted(messages)[1] + EVOLVED_SUFFIX,
                        "tags": ["evolved", "personal"],
                        "keywords": None,
                    }
                ]
                if evolve
                else []
            )
            return tool_reply("EvolutionDecision", {"links": links, "neighbour_updates": updates})
        return text_reply(answer)

    return respond


class OpenAIStub:
    """A tiny OpenAI-compatible HTTP server on loopback: /v1/chat/completions answers from a script.

    `script` maps the request body to (status, headers, body dict or raw text). Used to drive
    langchain-openai's real HTTP client, including faults (429, 500, malformed JSON).
    """

    def __init__(self, script: Callable[[dict[str, Any]], tuple[int, dict[str, str], Any]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                stub.requests.append(body)
                status, headers, payload = stub.script(body)
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> OpenAIStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def completion(tool_name: str | None = None, args: dict[str, Any] | None = None, text: str = "") -> dict[str, Any]:
    """An OpenAI chat.completion body: a tool call when tool_name is given, else plain text."""
    message: dict[str, Any] = {"role": "assistant", "content": text if tool_name is None else None}
    if tool_name is not None:
        message["tool_calls"] = [
            {"id": "call_1", "type": "function", "function": {"name": tool_name, "arguments": json.dumps(args)}}
        ]
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_name else "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }


# --- gates: force timing in concurrent tests (the agentic ingest) ---

Gate = Callable[[list[BaseMessage]], Awaitable[None]]


class GatedModel(ScriptedChatModel):
    """The scripted model, async: each call first awaits ``gate(messages)`` on the event loop (no
    worker threads, so gates can hold many calls at once)."""

    gate: Any = None

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.gate is not None:
            await self.gate(messages)
        return self._generate(messages, stop, None, **kwargs)


def barrier_gate(step: str, parties: int, timeout: float = 30.0) -> Gate:
    """Hold every call of ``step`` until ``parties`` of them wait together: they are then all in
    flight at once (a scheduler that serialised them would time out here)."""
    barrier = asyncio.Barrier(parties)

    async def gate(messages: list[BaseMessage]) -> None:
        if step_of(messages) == step:
            await asyncio.wait_for(barrier.wait(), timeout)

    return gate


def content_of(messages: list[BaseMessage]) -> str:
    """The NEW note of an evolve prompt (the text between its first <note> tags)."""
    text = str(messages[-1].content)
    return text.split("<note>", 1)[1].split("</note>", 1)[0]


EVOLVED_CONTEXT = {"A": "Maya's grey kitten Pixel is very playful.", "B": "Maya's playful kitten Pixel is grey."}


def evolving_responder(neighbour_id: str) -> Responder:
    """Notes starting with 'A:' or 'B:' evolve the neighbour: each a new context (one the guards let
    through: about the neighbour, in its words) and one more tag."""
    base = amem_responder(evolve=False)

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if step_of(messages) != "evolve":
            return base(messages)
        who = content_of(messages)[:1]
        return tool_reply(
            "EvolutionDecision",
            {
                "links": [{"target_id": neighbour_id, "type": "ELABORATES", "reason": "same cat", "strength": 0.7}],
                "neighbour_updates": [
                    {
                        "note_id": neighbour_id,
                        "context": EVOLVED_CONTEXT[who],
                        "tags": ["conversation", "personal", f"tag-{who.lower()}"],
                        "keywords": None,
                    }
                ],
            },
        )

    return respond
