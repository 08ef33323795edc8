"""LangChain 1.x objects over graphmem: a retriever, a chat message history and memory tools.

Every object takes a service (``AsyncMemoryService`` for async use, ``MemoryService`` for blocking and
async use; see ``_bridge``) and a ``Scope`` fixed by the application, or, for the tools, read from the
agent's runtime context at each call. The scope is never an argument a model can see or choose.

    retriever = GraphmemRetriever(service=svc, scope=scope, k=5)
    docs = await retriever.ainvoke("what does Caroline like?", mode="hybrid")

    history = GraphmemChatMessageHistory(svc, scope, session_id="s1", remember=True)
    tools = memory_tools(svc, scope)          # remember, recall, link, forget, for one scope
    tools = memory_tools(svc)                 # the same, scope from runtime.context at each call
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from graphmem.errors import GraphmemError, InvalidInputError, NoteNotFoundError
from graphmem.integrations._bridge import MemoryLike, ServiceBridge, as_bridge
from graphmem.integrations._scope import DEFAULT_CONTEXT_KEYS, scope_from_context
from graphmem.models import (
    LinkType,
    Note,
    Scope,
    SearchFilters,
    SearchHit,
    SearchMode,
    StoredMessage,
    check_id,
    check_session_id,
    iso,
)
from graphmem.ports import HistoryStore
from graphmem.service.memory import AsyncMemoryService

__all__ = [
    "GraphmemChatMessageHistory",
    "GraphmemRetriever",
    "hit_to_document",
    "memory_tools",
    "to_filters",
]


# --- documents ------------------------------------------------------------------------------------


def note_metadata(note: Note) -> dict[str, Any]:
    """JSON-friendly note fields for Document.metadata (the note's ``brief`` without its content,
    which is the page content, plus scope and bookkeeping; no embedding)."""
    meta = {k: v for k, v in note.brief().items() if k != "content"}
    meta.update(
        event_time=iso(note.event_time),
        event_time_text=note.event_time_text,
        category=note.category,
        source_id=note.source_id,
        scope=str(note.scope),
        **note.scope.params(),
        updated_at=iso(note.updated_at),
        version=note.version,
        enrichment=note.enrichment.value,
        note_metadata=dict(note.metadata),
    )
    return meta


def hit_to_document(hit: SearchHit) -> Document:
    """A search hit as a LangChain Document: id = note id, page_content = note content."""
    meta = note_metadata(hit.note)
    meta.update(
        score=hit.score,
        found_by=list(hit.found_by),
        links=[link.model_dump(mode="json") for link in hit.links],
        linked_via=[via.model_dump(mode="json") for via in hit.linked_via],
    )
    return Document(id=hit.note.id, page_content=hit.note.content, metadata=meta)


def to_filters(value: SearchFilters | dict[str, Any] | None) -> SearchFilters | None:
    """SearchFilters from a dict with keys tags_any, category, since, until (ISO text or datetime)."""
    if value is None or isinstance(value, SearchFilters):
        return value
    if not isinstance(value, dict):
        raise InvalidInputError("filters must be a dict with keys tags_any, category, since, until")
    try:
        return SearchFilters.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "filters"
        raise InvalidInputError(f"filter {where}: {str(err['msg']).removeprefix('Value error, ')}") from None


# --- retriever ------------------------------------------------------------------------------------


class GraphmemRetriever(BaseRetriever):
    """Notes of one scope for a query (vector, links or hybrid search), as Documents.

    ``k`` is the number of Documents returned (fewer only when the scope has fewer matches). In the
    ``links`` and ``hybrid`` modes a note reached along a typed link comes right after the hit it
    was reached from and counts toward ``k``; with ``include_links=True`` the ``k`` best hits come
    with all their linked notes on top (up to ``GRAPHMEM_LINKS_PER_HIT`` each).
    Per-call overrides go through `invoke` / `ainvoke` keyword arguments: ``k``, ``mode``, ``filters``.
    Sync `invoke` needs a ``MemoryService``; `ainvoke` works with either service.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    service: Any = Field(exclude=True, description="AsyncMemoryService or MemoryService")
    scope: Scope
    k: int | None = None
    mode: SearchMode | None = None
    filters: SearchFilters | dict[str, Any] | None = None
    include_links: bool = False

    _bridge: ServiceBridge = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._bridge = as_bridge(self.service)

    def _work(self, query: str, k: int | None, mode: str | None, filters: Any) -> Any:
        use_k = k if k is not None else self.k
        use_mode = mode if mode is not None else self.mode
        use_filters = to_filters(filters if filters is not None else self.filters)

        async def work(svc: AsyncMemoryService) -> list[Document]:
            hits = await svc.search(query, self.scope, k=use_k, mode=use_mode, filters=use_filters)
            if not self.include_links:
                hits = hits[: use_k if use_k is not None else svc.settings.search_k]
            return [hit_to_document(h) for h in hits]

        return work

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        mode: str | None = None,
        filters: SearchFilters | dict[str, Any] | None = None,
    ) -> list[Document]:
        result: list[Document] = self._bridge.run(self._work(query, k, mode, filters))
        return result

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        mode: str | None = None,
        filters: SearchFilters | dict[str, Any] | None = None,
    ) -> list[Document]:
        result: list[Document] = await self._bridge.arun(self._work(query, k, mode, filters))
        return result


# --- chat message history -------------------------------------------------------------------------


class GraphmemChatMessageHistory(BaseChatMessageHistory):
    """A conversation kept in Neo4j, message for message, losslessly (``message_to_dict`` JSON).

    Args:
        service: AsyncMemoryService (async API only) or MemoryService (both).
        scope: whose conversation it is; every node carries it.
        session_id: the conversation: any text an application uses (slashes, spaces, any script;
            up to 1,024 characters), stored and found exactly as given.
        remember: also turn each human / AI message with text into a graphmem note (A-MEM add:
            enrichment, links, evolution), each linked to the session's previous one by ``FOLLOWS``.
            Tool messages and AI messages without text are only kept in the history.
        window: `messages` returns only the newest N (the store keeps all). None keeps all.
    """

    def __init__(
        self,
        service: MemoryLike,
        scope: Scope,
        session_id: str,
        *,
        remember: bool = False,
        window: int | None = None,
    ) -> None:
        self._bridge = as_bridge(service)
        self.scope = scope
        self.session_id = check_session_id(session_id)
        self.remember = remember
        self.window = window

    def _store(self, svc: AsyncMemoryService) -> HistoryStore:
        return svc.chats

    async def _read(self, svc: AsyncMemoryService) -> list[BaseMessage]:
        rows = await self._store(svc).messages(self.scope, self.session_id, last=self.window)
        return messages_from_dict([json.loads(r) for r in rows])

    async def _append(self, svc: AsyncMemoryService, messages: Sequence[BaseMessage]) -> None:
        stored = [
            StoredMessage(type=m.type, data_json=json.dumps(message_to_dict(m), ensure_ascii=False)) for m in messages
        ]
        for row in stored:  # a lone surrogate (from a bad decode upstream) cannot be stored as UTF-8
            try:
                row.data_json.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInputError("a chat message is not valid Unicode text (lone surrogates)") from None
        chats = self._store(svc)
        await chats.append(self.scope, self.session_id, stored)
        if not self.remember:
            return
        # Each remembered message FOLLOWS the one before it in the session, as the middleware's turns do:
        # ask fills its budget with a hit's neighbouring turns, and the Browser shows the conversation.
        previous = await chats.last_note(self.scope, self.session_id)
        for m in messages:
            text = str(m.text).strip() if m.type in ("human", "ai") else ""
            if not text:
                continue
            meta = {"role": m.type, "session_id": self.session_id[:1000]}
            if m.name:
                meta["name"] = m.name[:200]
            args: dict[str, Any] = {"source_id": m.id or None, "metadata": meta, "category": "chat"}
            try:
                result = await svc.add(text, self.scope, follows=previous, **args)
            except NoteNotFoundError:  # the previous message's note is gone (forgotten or undone)
                result = await svc.add(text, self.scope, **args)
            previous = result.note.id
            await chats.set_last_note(self.scope, self.session_id, previous)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        result: list[BaseMessage] = self._bridge.run(self._read)
        return result

    async def aget_messages(self) -> list[BaseMessage]:
        result: list[BaseMessage] = await self._bridge.arun(self._read)
        return result

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        messages = list(messages)
        self._bridge.run(lambda svc: self._append(svc, messages))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        messages = list(messages)
        await self._bridge.arun(lambda svc: self._append(svc, messages))

    def clear(self) -> None:
        self._bridge.run(lambda svc: self._store(svc).clear(self.scope, self.session_id))

    async def aclear(self) -> None:
        await self._bridge.arun(lambda svc: self._store(svc).clear(self.scope, self.session_id))


# --- tools ----------------------------------------------------------------------------------------


class RememberArgs(BaseModel):
    content: str = Field(description="the fact, event or preference to remember, as one short self-contained text")
    event_time: str | None = Field(None, description="when it happened, if known (ISO date or words like '8 May 2023')")


class RecallArgs(BaseModel):
    query: str = Field(description="what to look for in memory")
    k: int = Field(5, ge=1, le=50, description="how many notes to return")


class LinkArgs(BaseModel):
    source_id: str = Field(description="id of the note the link starts from")
    target_id: str = Field(description="id of the note the link points to")
    type: LinkType = Field(LinkType.RELATED_TO, description="how the source relates to the target")
    reason: str = Field("", description="one short sentence saying why")


class ForgetArgs(BaseModel):
    note_id: str = Field(description="id of the note to delete")


def _line(hit: SearchHit) -> str:
    n = hit.note
    when = n.event_time_text or (n.event_time.date().isoformat() if n.event_time else "")
    head = f"[{n.id}]" + (f" ({when})" if when else "")
    via = f" [linked: {hit.linked_via[0].type.value}]" if hit.linked_via else ""
    ctx = f" - context: {n.context}" if n.context else ""
    return f"{head} {n.content}{ctx}{via}"


def memory_tools(
    service: MemoryLike,
    scope: Scope | None = None,
    *,
    include: Sequence[str] = ("remember", "recall", "link", "forget"),
    search_mode: SearchMode | None = None,
    context_keys: Mapping[str, str] = DEFAULT_CONTEXT_KEYS,
    base: Scope | None = None,
) -> list[BaseTool]:
    """Memory tools for an agent: ``remember`` adds a note (A-MEM: enrich, link, evolve), ``recall``
    searches (text for the model, Documents as the artifact), ``link`` links two notes, ``forget``
    deletes one. Errors (unknown id, empty text, LLM failure) come back to the model as the tool's
    text, not as exceptions.

    The scope is never an argument the model sees. Either the application fixes it (``scope``), or,
    with ``scope=None``, each call reads it from the agent's runtime context (LangGraph's
    ``ToolRuntime``, injected by the tool node): ``context_keys`` maps scope parts to context
    fields (default ``{"user_id": "user_id"}``; other parts from ``base``), so one compiled agent
    serves many users.
    """
    bridge = as_bridge(service)
    runtime_type: Any = None
    if scope is None:
        from langgraph.prebuilt import ToolRuntime  # only the runtime-scoped form needs LangGraph

        runtime_type = ToolRuntime

    def scope_of(runtime: Any) -> Scope:
        if scope is not None:
            return scope
        if runtime is None or getattr(runtime, "context", None) is None:
            raise InvalidInputError(
                "these memory tools read the user from the agent's runtime context; run them in an agent "
                "invoked with context=..."
            )
        return scope_from_context(runtime.context, context_keys, base)

    def both(work_of: Any) -> tuple[Any, Any]:
        """(sync func, coroutine) calling the same async work; graphmem errors become ToolException."""

        def func(runtime: Any = None, **kwargs: Any) -> Any:
            try:
                return bridge.run(work_of(scope_of(runtime), **kwargs))
            except GraphmemError as exc:
                raise ToolException(f"error: {exc}") from exc

        async def coroutine(runtime: Any = None, **kwargs: Any) -> Any:
            try:
                return await bridge.arun(work_of(scope_of(runtime), **kwargs))
            except GraphmemError as exc:
                raise ToolException(f"error: {exc}") from exc

        if runtime_type is not None:  # the tool node injects `runtime`, hidden from the model
            func.__annotations__ = {"runtime": runtime_type, "kwargs": Any, "return": Any}
            coroutine.__annotations__ = {"runtime": runtime_type, "kwargs": Any, "return": Any}
        return func, coroutine

    def remember(scope: Scope, content: str, event_time: str | None = None) -> Any:
        async def work(svc: AsyncMemoryService) -> str:
            result = await svc.add(content, scope, event_time=event_time)
            n = result.note
            if not result.created:
                return f"already remembered as note {n.id}"
            links = ", ".join(f"{x.type.value} {x.target_id}" for x in result.links)
            return (
                f"remembered as note {n.id}"
                + (f"; keywords: {', '.join(n.keywords)}" if n.keywords else "")
                + (f"; linked: {links}" if links else "")
            )

        return work

    def recall(scope: Scope, query: str, k: int = 5) -> Any:
        async def work(svc: AsyncMemoryService) -> tuple[str, list[Document]]:
            hits = await svc.search(query, scope, k=k, mode=search_mode)
            if not hits:
                return "no matching memories", []
            return "\n".join(_line(h) for h in hits), [hit_to_document(h) for h in hits]

        return work

    def link(
        scope: Scope, source_id: str, target_id: str, type: str = LinkType.RELATED_TO.value, reason: str = ""
    ) -> Any:
        async def work(svc: AsyncMemoryService) -> str:
            made = await svc.link(source_id, target_id, scope, LinkType(type), reason)
            return f"linked {made.source_id} -[{made.type.value}]-> {made.target_id}"

        return work

    def forget(scope: Scope, note_id: str) -> Any:
        async def work(svc: AsyncMemoryService) -> str:
            try:
                check_id(note_id, "note id")
            except ValueError as exc:
                raise InvalidInputError(str(exc)) from None
            deleted = await svc.delete(note_id, scope)
            return f"forgot note {note_id}" if deleted else f"no note {note_id} in memory"

        return work

    specs: dict[str, tuple[Any, type[BaseModel], str, str]] = {
        "remember": (remember, RememberArgs, "content", "Store a new memory (a fact, event or preference) for later."),
        "recall": (
            recall,
            RecallArgs,
            "content_and_artifact",
            "Search memory for notes relevant to a query; returns one note per line with its id.",
        ),
        "link": (link, LinkArgs, "content", "Link two remembered notes (by id) with a typed relationship."),
        "forget": (forget, ForgetArgs, "content", "Delete a remembered note by id."),
    }
    tools: list[BaseTool] = []
    for name in include:
        if name not in specs:
            raise ValueError(f"unknown memory tool {name!r}; choose from {', '.join(specs)}")
        work_of, schema, response_format, description = specs[name]
        func, coroutine = both(work_of)
        tools.append(
            StructuredTool.from_function(
                func=func,
                coroutine=coroutine,
                name=name,
                description=description,
                args_schema=schema,
                response_format=response_format,  # type: ignore[arg-type]
                handle_tool_error=True,
            )
        )
    return tools
