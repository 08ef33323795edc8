"""LLM calls with one retry layer (tenacity), output repair, and token/latency accounting.

Transport failures (429 with Retry-After, 5xx, timeouts, resets) are retried with backoff; the
chat model's own retries are off (max_retries=0) so there is exactly one policy. Malformed output
is first repaired locally (fenced JSON, one bad item among good ones), then re-asked a bounded
number of times; after that the caller gets None and degrades (the note is stored raw and marked).
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, TypeVar

import httpx
import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableLambda, RunnableMap, RunnablePassthrough
from pydantic import BaseModel, ValidationError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from graphmem.config import ResolvedMethod
from graphmem.errors import LLMError
from graphmem.llm.outputs import strip_unsafe
from graphmem.llm.prompts import repair_message
from graphmem.models import Usage
from graphmem.redaction import redact

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: rate limits, server errors, timeouts, dropped connections."""
    if isinstance(exc, (openai.RateLimitError, openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return isinstance(exc, (httpx.TimeoutException, httpx.TransportError, TimeoutError, ConnectionError))


def _retry_after(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class _WaitRetryAfter:
    """Honour Retry-After when the server sends one (capped), else exponential backoff with jitter."""

    def __init__(self, cap: float) -> None:
        self._cap = cap
        self._fallback = wait_exponential_jitter(multiplier=0.5, max=cap)

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = _retry_after(exc)
        if after is not None:
            return min(max(after, 0.0), self._cap)
        return float(self._fallback(state))


def extract_json(raw: AIMessage) -> Any:
    """The JSON a model meant to send: tool-call args, or the content (fenced or surrounded by prose)."""
    if raw.tool_calls:
        return raw.tool_calls[0]["args"]
    text = raw.content if isinstance(raw.content, str) else json.dumps(raw.content)
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the reply")
    return json.loads(text[start : end + 1])


def _cut_off(raw: AIMessage) -> bool:
    """The model stopped at its output-token limit (OpenAI-style finish_reason "length")."""
    return raw.response_metadata.get("finish_reason") == "length"


def _has_tool_call(raw: AIMessage) -> bool:
    # langchain moves tool calls whose arguments are not valid JSON to invalid_tool_calls
    return bool(raw.tool_calls or raw.invalid_tool_calls or raw.additional_kwargs.get("tool_calls"))


def _json_schema_runnable(model: BaseChatModel, schema: type[BaseModel]) -> Any:
    """``response_format: json_schema`` sent in the request body, the reply parsed here.

    The same request ``with_structured_output(method="json_schema")`` makes (llama-server turns the
    schema into a grammar that constrains every token; OpenAI enforces it server-side), but through
    the plain completion path: langchain-openai's structured path calls the SDK's ``parse()``, which
    raises on a reply cut off at the output limit and on any value the grammar does not enforce
    (a number's range), losing the reply that repair and ``lenient`` would have used.
    Returns ``{"raw", "parsed", "parsing_error"}`` like ``include_raw=True``.
    """
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": False},
    }
    extra_body = {**(getattr(model, "extra_body", None) or {}), "response_format": response_format}

    def parse(raw: AIMessage) -> BaseModel:
        # Strict: the reply must be the JSON object itself. Anything else (fenced, with prose) goes
        # through the caller's repair path, which extracts it and counts a repair.
        if raw.tool_calls:
            return schema.model_validate(raw.tool_calls[0]["args"])
        return schema.model_validate_json(raw.content if isinstance(raw.content, str) else "")

    parsed = RunnablePassthrough.assign(parsed=itemgetter("raw") | RunnableLambda(parse), parsing_error=lambda _: None)
    unparsed = RunnablePassthrough.assign(parsed=lambda _: None)
    return RunnableMap(raw=model.bind(extra_body=extra_body)) | parsed.with_fallbacks(
        [unparsed], exception_key="parsing_error"
    )


def _record_usage(usage: Usage, raw: BaseMessage | None) -> None:
    meta = getattr(raw, "usage_metadata", None) or {}
    usage.input_tokens += int(meta.get("input_tokens", 0) or 0)
    usage.output_tokens += int(meta.get("output_tokens", 0) or 0)
    details = meta.get("input_token_details") or {}  # "cache_read", or "priority_cache_read" on a tier
    usage.cached_input_tokens += sum(int(v or 0) for k, v in details.items() if k.endswith("cache_read"))


def yes_probability(raw: BaseMessage) -> float:
    """P(yes) / (P(yes) + P(no)) over the first token's top log-probabilities (OpenAI's logprobs
    format, which llama.cpp servers follow); without them, the answer text decides (1 or 0)."""
    logprobs = raw.response_metadata.get("logprobs") if isinstance(raw, AIMessage) else None
    first = (logprobs or {}).get("content") or []
    if first:
        top = first[0].get("top_logprobs") or [first[0]]
        yes = no = 0.0
        for t in top:
            word = str(t.get("token", "")).strip().lower()
            if (word and "yes".startswith(word)) or word.startswith("yes"):
                yes += math.exp(float(t["logprob"]))
            elif word and ("no".startswith(word) or word.startswith("no")):
                no += math.exp(float(t["logprob"]))
        if yes + no > 0:
            return yes / (yes + no)
    content = raw.content if isinstance(raw.content, str) else ""
    return 1.0 if content.strip().lower().startswith("yes") else 0.0


class LLMCaller:
    """Calls one chat model for structured output or text, with retries, repair and accounting."""

    def __init__(
        self,
        model: BaseChatModel,
        *,
        method: ResolvedMethod = "function_calling",
        max_retries: int = 3,
        repair_attempts: int = 1,
        max_wait: float = 30.0,
        unavailable_hint: str = "",
    ) -> None:
        self.model = model
        self.unavailable_hint = unavailable_hint
        self.method = method
        self.max_retries = max_retries
        self.repair_attempts = repair_attempts
        self._wait = _WaitRetryAfter(max_wait)
        self._bound: dict[type[BaseModel], Any] = {}
        self._judge: Any = None

    def _structured(self, schema: type[BaseModel]) -> Any:
        if schema not in self._bound:
            if self.method == "json_schema":
                self._bound[schema] = _json_schema_runnable(self.model, schema)
            else:
                kwargs: dict[str, Any] = {"method": self.method, "include_raw": True}
                self._bound[schema] = self.model.with_structured_output(schema, **kwargs)
        return self._bound[schema]

    async def _invoke(self, runnable: Any, messages: Sequence[BaseMessage], usage: Usage) -> Any:
        """One logical call: transient failures retried here; LLMError when they never stop."""
        try:
            async for attempt in AsyncRetrying(
                retry=retry_if_exception(is_transient),
                stop=stop_after_attempt(self.max_retries + 1),
                wait=self._wait,
                reraise=True,
            ):
                with attempt:
                    started = time.perf_counter()
                    try:
                        return await runnable.ainvoke(list(messages))
                    finally:
                        usage.llm_calls += 1
                        usage.llm_seconds += time.perf_counter() - started
        except Exception as exc:
            # Upstream error text may echo the request's Authorization header or the key (issue 16):
            # the message is redacted here, once, before any log or client sees it.
            if is_transient(exc):
                hint = f" ({self.unavailable_hint})" if self.unavailable_hint else ""
                raise LLMError(
                    redact(f"LLM unavailable after {self.max_retries + 1} attempts: {type(exc).__name__}: {exc}{hint}")
                ) from None
            raise LLMError(redact(f"LLM call failed: {type(exc).__name__}: {exc}")) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def structured(
        self, schema: type[T], messages: Sequence[BaseMessage], usage: Usage
    ) -> tuple[T | None, list[str]]:
        """Return (parsed, rejected item notes); parsed is None when output stayed unusable.

        Raises LLMError only for transport failures that outlived every retry.
        """
        history = list(messages)
        runnable = self._structured(schema)
        for round_no in range(self.repair_attempts + 1):
            out = await self._invoke(runnable, history, usage)
            raw: AIMessage | None = out.get("raw")
            _record_usage(usage, raw)
            parsed = out.get("parsed")
            if isinstance(parsed, schema):
                return parsed, []
            usage.repairs += 1 if round_no == 0 else 0
            error = str(out.get("parsing_error") or "no structured output")
            if raw is not None:
                try:
                    data = extract_json(raw)
                    lenient = getattr(schema, "lenient", None)
                    if lenient is not None:
                        model, rejected = lenient(data)
                        return model, rejected
                    return schema.model_validate(data), []
                except (ValueError, ValidationError, TypeError, KeyError) as exc:
                    error = f"{type(exc).__name__}: {exc}"
                cut = _cut_off(raw)
                if cut:
                    error = f"the reply was cut off at the output limit ({error[:120]})"
                # A tool-call reply is never sent back: without a tool result after it, OpenAI-compatible
                # servers refuse the request (llama-cpp-python: 500), and a cut-off one holds broken JSON.
                if _has_tool_call(raw):
                    history = [*messages, repair_message(error, cut_off=cut)]
                else:
                    history = [*history, raw, repair_message(error, cut_off=cut)]
            log.info("structured output for %s unusable (round %d): %.200s", schema.__name__, round_no, error)
        return None, []

    def _judging(self) -> Any:
        """The model asked for one token and its log-probabilities (a yes/no judgment)."""
        if self._judge is None:
            kwargs: dict[str, Any] = {"logprobs": True, "top_logprobs": 5, "max_tokens": 1}
            extra = getattr(self.model, "extra_body", None)
            if isinstance(extra, dict) and "max_tokens" in extra:  # servers that read only max_tokens
                kwargs["extra_body"] = {**extra, "max_tokens": 1}
            self._judge = self.model.bind(**kwargs)
        return self._judge

    async def yes_probability(self, messages: Sequence[BaseMessage], usage: Usage) -> float:
        """P(yes) of a yes/no question from the first token's log-probabilities; servers that send
        none count a 'yes' answer as 1 and anything else as 0."""
        raw = await self._invoke(self._judging(), messages, usage)
        _record_usage(usage, raw)
        return yes_probability(raw)

    async def text(self, messages: Sequence[BaseMessage], usage: Usage, *, max_tokens: int | None = None) -> str:
        runnable = self.model
        if max_tokens is not None:
            kwargs: dict[str, Any] = {"max_tokens": max_tokens}
            extra = getattr(self.model, "extra_body", None)
            if isinstance(extra, dict) and "max_tokens" in extra:
                kwargs["extra_body"] = {**extra, "max_tokens": max_tokens}
            runnable = self.model.bind(**kwargs)  # type: ignore[assignment]
        raw = await self._invoke(runnable, messages, usage)
        _record_usage(usage, raw)
        content = raw.content
        return strip_unsafe(content if isinstance(content, str) else json.dumps(content))
