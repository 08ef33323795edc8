"""The chat model from Settings: every provider through ``langchain_openai.ChatOpenAI``.

Providers (``Settings.resolved_llm_provider``):
- ``local``: the managed llama.cpp server (``graphmem.local.llm_server.LocalLLM``), no key.
- ``openai``: api.openai.com (or ``GRAPHMEM_LLM_BASE_URL``) with ``GRAPHMEM_LLM_API_KEY``/``OPENAI_API_KEY``.
- ``compatible``: any OpenAI-compatible server at ``GRAPHMEM_LLM_BASE_URL`` (vLLM, Ollama, LM Studio...).

Client retries are off (``max_retries=0``): graphmem retries with tenacity, one retry layer.
Nothing here counts tokens with tiktoken (it downloads BPE files on first use); token usage comes
from the response's ``usage_metadata``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from graphmem.config import Settings

if TYPE_CHECKING:
    from graphmem.local.llm_server import LocalLLM

ResolvedMethod = Literal["json_schema", "function_calling", "json_mode"]

# The OpenAI client refuses to start without a key; local servers ignore it.
_NO_KEY = SecretStr("not-needed")


def structured_method(settings: Settings) -> ResolvedMethod:
    """The ``with_structured_output`` method to use.

    ``auto`` is ``json_schema`` (strict, server-enforced) on OpenAI and ``function_calling``
    elsewhere: llama-cpp-python answers ``json_schema`` with HTTP 500 and turns a forced tool
    choice into a grammar built from the pydantic schema, and most compatible servers support
    tools while ``json_schema`` support varies.
    """
    if settings.structured_output_method != "auto":
        return settings.structured_output_method
    return "json_schema" if settings.resolved_llm_provider == "openai" else "function_calling"


def make_chat_model(settings: Settings, *, local: LocalLLM | None = None) -> BaseChatModel:
    """Build the chat model for ``settings.resolved_llm_provider``; no network I/O.

    Args:
        settings: LLM settings (``llm_*``, ``local_*``).
        local: for the local provider, the managed server; its ``ensure_running()`` must have
            been called (or be called by the caller) before the first request. Built from
            ``settings`` when omitted.

    Returns:
        A ``ChatOpenAI`` with temperature, max tokens, timeout and seed from settings.
    """
    provider = settings.resolved_llm_provider
    common: dict[str, Any] = {
        "temperature": settings.llm_temperature,
        "max_tokens": settings.llm_max_tokens,
        "timeout": settings.llm_timeout,
        "seed": settings.llm_seed,
        "max_retries": 0,
        "use_responses_api": False,  # Chat Completions everywhere: the one API local servers speak
    }
    if provider == "local":
        if local is None:
            from graphmem.local.llm_server import LocalLLM

            local = LocalLLM(settings)
        return ChatOpenAI(
            base_url=local.base_url,
            api_key=_NO_KEY,
            model=local.model_name,
            # ChatOpenAI sends only `max_completion_tokens`, which llama-cpp-python ignores:
            # without `max_tokens` a looping small model would generate until the context is full.
            extra_body={"max_tokens": settings.llm_max_tokens},
            **common,
        )
    key = settings.llm_api_key
    if provider == "openai":
        return ChatOpenAI(
            base_url=settings.llm_base_url,  # None: api.openai.com
            api_key=key,
            model=settings.llm_model,
            **common,
        )
    return ChatOpenAI(
        base_url=settings.llm_base_url,
        api_key=key or _NO_KEY,
        model=settings.llm_model,
        extra_body={"max_tokens": settings.llm_max_tokens},  # older servers know only max_tokens
        **common,
    )
