"""The chat model from Settings: every provider through ``langchain_openai.ChatOpenAI``.

Providers (``Settings.resolved_llm_provider``):
- ``local``: the llama.cpp server at ``127.0.0.1:GRAPHMEM_LOCAL_LLM_PORT``, no key. This module
  does not start it: ``graphmem llm start`` or the edge (``graphmem.local.chat_model``) does.
- ``openai``: api.openai.com (or ``GRAPHMEM_LLM_BASE_URL``) with ``GRAPHMEM_LLM_API_KEY``/``OPENAI_API_KEY``.
- ``compatible``: any OpenAI-compatible server at ``GRAPHMEM_LLM_BASE_URL`` (vLLM, Ollama, LM Studio...).

Client retries are off (``max_retries=0``): graphmem retries with tenacity, one retry layer.
Nothing here counts tokens with tiktoken (it downloads BPE files on first use); token usage comes
from the response's ``usage_metadata``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from graphmem.config import ResolvedMethod, Settings
from graphmem.llm.progress import local_async_client
from graphmem.redaction import register_secret

LOCAL_HOST = "127.0.0.1"  # the local model listens on loopback only
# In a local chat model's metadata: which server it talks to (llama-server or llama-cpp-python),
# so that the service picks the structured-output method that server supports.
LOCAL_SERVER_KEY = "graphmem_local_server"


# The OpenAI client refuses to start without a key; local servers ignore it.
_NO_KEY = SecretStr("not-needed")


def structured_method(
    settings: Settings, *, local_server: str | None = None, chat_model: BaseChatModel | None = None
) -> ResolvedMethod:
    """The ``with_structured_output`` method to use.

    ``auto`` is ``json_schema`` on OpenAI (strict, server-enforced) and on the local llama-server
    (it turns ``response_format``'s schema into a grammar that constrains every token; a forced
    tool choice, which is what ``function_calling`` sends, it reads as ``auto`` and constrains
    nothing until the model opens a tool call), ``function_calling`` on the llama-cpp-python
    server (it answers ``json_schema`` with HTTP 500 and turns a forced tool choice into a grammar)
    and on other compatible servers (most support tools; ``json_schema`` support varies).

    Args:
        settings: ``structured_output_method``, the provider, ``local_llm_server``.
        local_server: for the local provider, the server that answers (``LocalLLM.server``);
            default: the one ``chat_model`` was made for (``make_chat_model(local_server=...)``),
            else the one ``GRAPHMEM_LOCAL_LLM_SERVER`` names (``auto``: llama-server).
        chat_model: the model the method is for.
    """
    if settings.structured_output_method != "auto":
        return settings.structured_output_method
    provider = settings.resolved_llm_provider
    if provider == "local":
        served_by = (getattr(chat_model, "metadata", None) or {}).get(LOCAL_SERVER_KEY)
        server = local_server or served_by or settings.local_llm_server
        return "function_calling" if server == "llama-cpp-python" else "json_schema"
    return "json_schema" if provider == "openai" else "function_calling"


def local_base_url(settings: Settings) -> str:
    """The OpenAI-compatible endpoint of the local model server."""
    return f"http://{LOCAL_HOST}:{settings.local_llm_port}/v1"


def make_chat_model(
    settings: Settings, *, base_url: str | None = None, model: str | None = None, local_server: str | None = None
) -> BaseChatModel:
    """Build the chat model for ``settings.resolved_llm_provider``; no network I/O, no process.

    Args:
        settings: LLM settings (``llm_*``, ``local_*``).
        base_url: the endpoint; default ``GRAPHMEM_LLM_BASE_URL``, or for the local provider the
            local server's (``local_base_url``).
        model: the model name to send; default ``GRAPHMEM_LLM_MODEL``, or for the local provider
            ``GRAPHMEM_LOCAL_MODEL`` (the server runs one model and answers any name with it;
            ``graphmem.local.chat_model`` passes the exact alias).
        local_server: for the local provider, the server that answers (``LocalLLM.server``),
            recorded in the model's metadata for ``structured_method``.

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
        url = base_url or local_base_url(settings)
        return ChatOpenAI(
            base_url=url,
            api_key=_NO_KEY,
            model=model or settings.local_model,
            # ChatOpenAI sends only `max_completion_tokens`, which llama-cpp-python ignores:
            # without `max_tokens` a looping small model would generate until the context is full.
            extra_body={"max_tokens": settings.llm_max_tokens}
            | ({} if settings.local_llm_cache_prompt else {"cache_prompt": False}),
            # Async calls time out when the server stops progressing, not after llm_timeout in all
            # (a busy machine is slow, not broken), and an abandoned call is cancelled on the server.
            http_async_client=local_async_client(
                url.removesuffix("/v1"), stall_timeout=settings.llm_timeout, max_wait=settings.local_llm_max_wait
            ),
            metadata={LOCAL_SERVER_KEY: local_server} if local_server else None,
            **common,
        )
    key = settings.llm_api_key
    if key is not None:
        register_secret(key.get_secret_value())  # upstream errors may echo it (redaction.redact)
    if provider == "openai":
        return ChatOpenAI(
            base_url=base_url or settings.llm_base_url,  # None: api.openai.com
            api_key=key,
            model=model or settings.llm_model,
            **common,
        )
    return ChatOpenAI(
        base_url=base_url or settings.llm_base_url,
        api_key=key or _NO_KEY,
        model=model or settings.llm_model,
        extra_body={"max_tokens": settings.llm_max_tokens},  # older servers know only max_tokens
        **common,
    )
