"""Managed local services: the Neo4j server and the local LLM server (an app beside the core: it
uses the core's public API only, and the core never imports it).

``chat_model`` is how the edge (CLI commands, the REST and MCP lifespans, the demo) gets a ready
chat model: for the local provider it starts (or reuses) the llama.cpp server first. It blocks for
up to minutes, so async code calls ``start_chat_model``, which runs it in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from graphmem.config import Settings

ChatModelStart = Callable[["Settings"], "BaseChatModel | None"]

log = logging.getLogger(__name__)


def chat_model(settings: Settings) -> BaseChatModel | None:
    """A ready chat model for the local provider (the server started or reused first); None for
    remote providers, whose client the service builds from the settings itself. Blocking."""
    if settings.resolved_llm_provider != "local":
        return None
    from graphmem.llm import make_chat_model
    from graphmem.local.llm_server import LocalLLM

    local = LocalLLM(settings, show_progress=False)
    base_url = local.ensure_running()  # never compiles llama-server: install.sh or `graphmem llm start` does
    return make_chat_model(settings, base_url=base_url, model=local.model_name, local_server=local.server)


def start_chat_model(settings: Settings, start: ChatModelStart = chat_model) -> asyncio.Future[BaseChatModel | None]:
    """``start(settings)`` in a worker thread: the event loop keeps serving while the model starts.
    Pass the future as ``AsyncMemoryService.create(chat_model=...)``; a failed start is logged at
    once and raised to each call that needs the model."""
    future = asyncio.ensure_future(asyncio.to_thread(start, settings))
    future.add_done_callback(_log_failure)
    return future


def _log_failure(future: asyncio.Future[BaseChatModel | None]) -> None:
    if not future.cancelled() and (exc := future.exception()) is not None:
        log.warning("the local LLM did not start: %s", exc)


__all__ = ["ChatModelStart", "chat_model", "start_chat_model"]
