"""The chat model the service calls. The service never starts a process for it.

It is handed in ready (``chat_model=``), or as a future the edge resolves in a worker thread while
it starts the local model (REST and MCP lifespans: requests that need no LLM are served meanwhile),
or as ``OnFirstUse`` (started when a call first needs it: a run that may need no model, such as an
evaluation whose answers are all stored, starts none), or, when nothing is given, built from the settings: a client for the configured endpoint (OpenAI,
a compatible server, or the local model's port, which ``graphmem llm start`` serves).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel

from graphmem.config import Settings
from graphmem.llm.calls import LLMCaller
from graphmem.llm.clients import make_chat_model, structured_method
from graphmem.llm.progress import release_chat_model


@dataclass(frozen=True)
class OnFirstUse:
    """A model whose ``start`` runs when a call first needs it, once."""

    start: Callable[[], Awaitable[BaseChatModel | None]]


# A ready model (or a ready caller, with its own retry policy), one that is starting (None when it
# resolves: build it from the settings), or one to start on first use.
ChatModelSource = BaseChatModel | LLMCaller | asyncio.Future[BaseChatModel | None] | OnFirstUse | None

_LOCAL_HINT = "is the local model running? Start it with `graphmem llm start` (GRAPHMEM_LOCAL_LLM_PORT)"


class ChatModelSlot:
    def __init__(self, settings: Settings, source: ChatModelSource = None) -> None:
        self._settings = settings
        self._source = source
        self._caller: LLMCaller | None = source if isinstance(source, LLMCaller) else None
        self._built = False  # the slot built the model itself (from the settings): it owns its client

    @property
    def starting(self) -> bool:
        return isinstance(self._source, asyncio.Future) and not self._source.done()

    def status(self) -> str:
        """ "ready", "starting" (the edge is still starting it), "failed: ..." or "on first use"."""
        if self._caller is not None:
            return "ready"
        if isinstance(self._source, OnFirstUse):
            return "on first use"
        if isinstance(self._source, asyncio.Future):
            if not self._source.done():
                return "starting"
            if self._source.cancelled():
                return "failed: start cancelled"
            exc = self._source.exception()
            return "ready" if exc is None else f"failed: {exc}"[:300]
        return "ready" if self._source is not None else "on first use"

    async def caller(self) -> LLMCaller:
        """The LLM caller; waits (without blocking the event loop) for a model that is starting, and
        raises what its start raised."""
        if self._caller is None:
            if isinstance(self._source, OnFirstUse):  # set before any await: concurrent callers share one start
                self._source = asyncio.ensure_future(self._source.start())
            source = self._source
            model = await source if isinstance(source, asyncio.Future) else source
            assert not isinstance(model, LLMCaller | OnFirstUse)  # a caller is used as given; a start ran above
            if self._caller is None:  # another task may have built it while this one waited
                self._caller = self._build(model)
        return self._caller

    def _build(self, model: BaseChatModel | None) -> LLMCaller:
        s = self._settings
        self._built = model is None
        return LLMCaller(
            model if model is not None else make_chat_model(s),
            method=structured_method(s, chat_model=model),  # a local model says which server it talks to
            max_retries=s.llm_max_retries,
            repair_attempts=s.llm_repair_attempts,
            unavailable_hint=_LOCAL_HINT if model is None and s.resolved_llm_provider == "local" else "",
        )

    def cancel(self) -> None:
        """Stop waiting for a model still starting (the start itself runs on in its thread)."""
        if isinstance(self._source, asyncio.Future) and not self._source.done():
            self._source.cancel()

    async def aclose(self) -> None:
        """``cancel``, then stop what the model's client runs on this event loop (the local model's
        ``/metrics`` poll task, pooled connections); a client the slot built itself is closed, one
        handed in stays usable (its owner may pass it to another service)."""
        self.cancel()
        if self._caller is not None:
            await release_chat_model(self._caller.model, close=self._built)
