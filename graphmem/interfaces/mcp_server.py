"""MCP server (official ``mcp`` SDK 2.x, ``MCPServer``) exposing graphmem as tools: add, search, ask,
get, delete, and the version tools history, rollback, undo_add. The scope is fixed by settings (``GRAPHMEM_MCP_USER_ID`` / ``_AGENT_ID`` / ``_RUN_ID``):
a client cannot name another scope. Transport: stdio (``graphmem mcp``).

Client configuration (e.g. Claude Desktop, ``mcpServers``)::

    {"graphmem": {"command": "graphmem", "args": ["mcp"],
                  "env": {"GRAPHMEM_MCP_USER_ID": "alice"}}}
"""

# No `from __future__ import annotations`: the SDK reads the tool signatures at runtime.

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from graphmem._version import __version__
from graphmem.config import Settings, load_settings
from graphmem.errors import ConfigError, GraphmemError
from graphmem.local import ChatModelStart, chat_model, start_chat_model
from graphmem.models import LIMITS, NoteInput, Scope, SearchHit, SearchMode
from graphmem.redaction import install_log_redaction, redact
from graphmem.service.memory import AsyncMemoryService

log = logging.getLogger(__name__)

_GET_LINKS = 50  # links `get` shows (a hub note may have thousands; an agent needs the first few)

INSTRUCTIONS = (
    "graphmem is a long-term memory of atomic notes linked by typed relationships. "
    "Use `add` to remember a fact, event or preference (one self-contained statement), `add_many` for several "
    "at once (e.g. a conversation's turns, in order), `search` to find "
    "notes (with their ids), `ask` for an answer written from memory, `get` for one note with its links, "
    "`delete` to forget a note by id. When memory went wrong: `history` shows what changed a note and why, "
    "`rollback` restores an earlier version of it, `undo_add` undoes what adding a note did to other notes."
)


class BulkItem(BaseModel):
    content: str = Field(description="the fact, event or turn to remember")
    event_time: str | None = Field(None, description="when it happened, ISO 8601 or words ('8 May 2023')")


def mcp_scope(settings: Settings) -> Scope:
    try:
        return Scope(user_id=settings.mcp_user_id, agent_id=settings.mcp_agent_id, run_id=settings.mcp_run_id)
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise ConfigError(f"GRAPHMEM_MCP_USER_ID / _AGENT_ID / _RUN_ID: {problems}") from None


def _hit_brief(hit: SearchHit) -> dict[str, Any]:
    out = hit.note.brief()
    out["score"] = round(hit.score, 4)
    out["found_by"] = list(hit.found_by)
    if hit.linked_via:
        out["linked_via"] = [{"from_id": v.from_id, "type": v.type.value, "reason": v.reason} for v in hit.linked_via]
    if hit.timeline is not None and (
        hit.timeline.status != "current" or hit.timeline.history or hit.timeline.conflicts
    ):
        out["timeline"] = hit.timeline.model_dump(mode="json", exclude_defaults=True)  # issue 28
    return out


class _ServiceSlot:
    """The service the tools use: given by the caller, or opened by the server's lifespan."""

    def __init__(self, service: AsyncMemoryService | None) -> None:
        self.service = service

    def get(self) -> AsyncMemoryService:
        if self.service is None:
            raise ToolError("graphmem is not connected yet")
        return self.service


def create_mcp_server(
    settings: Settings | None = None,
    service: AsyncMemoryService | None = None,
    *,
    chat_model_start: ChatModelStart = chat_model,
) -> MCPServer[Any]:
    """Build the MCP server. With `service` given it is used (and not closed); otherwise the server
    opens one from `settings` when it starts and closes it when it stops. The local model starts
    meanwhile in a worker thread (``chat_model_start``); tools that need it wait for it."""
    settings = settings or (service.settings if service is not None else load_settings())
    scope = mcp_scope(settings)
    slot = _ServiceSlot(service)

    @asynccontextmanager
    async def lifespan(server: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        if slot.service is not None:
            yield {}
            return
        model = start_chat_model(settings, chat_model_start)
        try:
            svc = await AsyncMemoryService.create(settings, chat_model=model)
        except BaseException:
            model.cancel()
            raise
        slot.service = svc
        try:
            yield {}
        finally:
            slot.service = None
            await svc.close()

    server: MCPServer[Any] = MCPServer(
        "graphmem",
        title="graphmem memory",
        description="A-MEM agentic memory on Neo4j",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
        log_level="WARNING",
    )

    async def call(work: Any) -> Any:
        try:
            return await work(slot.get())
        except (GraphmemError, ValueError) as exc:  # ValueError: e.g. a malformed note id
            raise ToolError(redact(str(exc))) from None

    @server.tool(
        description="Remember something: stores it as a note, enriched with keywords, context and tags, "
        "linked to related notes.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    async def add(
        content: Annotated[str, Field(description="the fact, event or preference to remember")],
        event_time: Annotated[
            str | None, Field(description="when it happened, ISO 8601 or words ('8 May 2023')")
        ] = None,
    ) -> dict[str, Any]:
        async def work(svc: AsyncMemoryService) -> dict[str, Any]:
            result = await svc.add(content, scope, event_time=event_time)
            return {
                "created": result.created,
                "note": result.note.brief(),
                "links": [{"target_id": x.target_id, "type": x.type.value, "reason": x.reason} for x in result.links],
                "evolved": [c.note_id for c in result.evolved],
            }

        out: dict[str, Any] = await call(work)
        return out

    @server.tool(
        description="Remember several things at once, in order (e.g. the turns of a conversation): each is "
        "stored as a note like `add` does, linked to related notes, earlier items included. Sending the same "
        "items again stores nothing twice.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    async def add_many(
        items: Annotated[
            list[BulkItem], Field(min_length=1, max_length=100, description="the facts, events or turns, oldest first")
        ],
    ) -> dict[str, Any]:
        async def work(svc: AsyncMemoryService) -> dict[str, Any]:
            report = await svc.ingest([NoteInput(content=x.content, event_time=x.event_time) for x in items], scope)
            return {
                "summary": report.summary(),
                "items": [
                    {"index": x.index, "status": x.status.value, "id": x.note_id, "links": len(x.links)}
                    | ({"error": x.error} if x.error else {})
                    for x in report.items
                ],
            } | ({"warnings": report.warnings} if report.warnings else {})

        out: dict[str, Any] = await call(work)
        return out

    @server.tool(
        description="Search memory: the most relevant notes with ids and scores; linked notes are included.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def search(
        query: Annotated[str, Field(description="what to look for")],
        k: Annotated[int, Field(ge=1, le=LIMITS.k_max, description="number of primary hits")] = 5,
        mode: Annotated[
            SearchMode | None,
            Field(description="vector, links (vector + linked notes) or hybrid (+ full-text)"),
        ] = None,
        history: Annotated[bool, Field(description="every note, superseded ones marked")] = False,
        as_of: Annotated[str | None, Field(description="the state at this ISO date or datetime")] = None,
    ) -> dict[str, Any]:
        async def work(svc: AsyncMemoryService) -> dict[str, Any]:
            hits = await svc.search(query, scope, k=k, mode=mode, history=history, as_of=as_of)
            return {"hits": [_hit_brief(h) for h in hits]}

        out: dict[str, Any] = await call(work)
        return out

    @server.tool(
        description="Answer a question from memory; returns the answer and the notes it used.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def ask(
        question: Annotated[str, Field(description="the question")],
        k: Annotated[int | None, Field(ge=1, le=LIMITS.k_max, description="notes to retrieve")] = None,
        history: Annotated[bool, Field(description="every note, superseded ones marked")] = False,
        as_of: Annotated[str | None, Field(description="the state at this ISO date or datetime")] = None,
    ) -> dict[str, Any]:
        async def work(svc: AsyncMemoryService) -> dict[str, Any]:
            result = await svc.ask(question, scope, k=k, history=history, as_of=as_of)
            return {
                "answer": result.answer,
                "notes": [_hit_brief(h) for h in result.notes],
                "context_tokens": result.context_tokens,
            }

        out: dict[str, Any] = await call(work)
        return out

    @server.tool(
        description="One note by id, with its typed links.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def get(note_id: Annotated[str, Field(description="the note id")]) -> dict[str, Any]:
        async def work(svc: AsyncMemoryService) -> dict[str, Any]:
            note = await svc.get(note_id, scope)
            links = await svc.links(note_id, scope, limit=_GET_LINKS + 1)
            return {
                "note": {**note.brief(), "version": note.version},
                "links": [
                    {"source_id": x.source_id, "target_id": x.target_id, "type": x.type.value, "reason": x.reason}
                    for x in links[:_GET_LINKS]
                ],
                "more_links": len(links) > _GET_LINKS,
            }

        out: dict[str, Any] = await call(work)
        return out

    @server.tool(
        description="Forget a note by id (its links go with it).",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    async def delete(note_id: Annotated[str, Field(description="the note id")]) -> dict[str, Any]:
        async def work(svc: AsyncMemoryService) -> dict[str, Any]:
            return {"id": note_id, "deleted": await svc.delete(note_id, scope)}

        out: dict[str, Any] = await call(work)
        return out

    @server.tool(
        description="A note's history, oldest first: what changed at each step (a word diff of content and "
        "context; tags and keywords added and removed) and why (which note's add evolved it, update, repair, "
        "rollback, undo). Version numbers here are what `rollback` takes.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def history(
        note_id: Annotated[str, Field(description="the note id")],
        limit: Annotated[int, Field(ge=1, le=100, description="steps per page")] = 20,
        offset: Annotated[int, Field(ge=0, le=LIMITS.offset_max, description="steps to skip, oldest first")] = 0,
    ) -> dict[str, Any]:
        async def work(svc: AsyncMemoryService) -> dict[str, Any]:
            diffs = await svc.history_diff(note_id, scope, limit=limit, offset=offset)
            return {
                "note_id": note_id,
                "diffs": [d.model_dump(mode="json") for d in diffs],
                "next_offset": offset + len(diffs) if len(diffs) == limit else None,
            }

        out: dict[str, Any] = await call(work)
        return out

    @server.tool(
        description="Roll a note back to an earlier version (its content, context, tags and keywords). The "
        "rollback is itself a new version, so nothing is lost and it can be rolled back too.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    async def rollback(
        note_id: Annotated[str, Field(description="the note id")],
        version: Annotated[int, Field(ge=1, description="the earlier version to restore (see `history`)")],
    ) -> dict[str, Any]:
        async def work(svc: AsyncMemoryService) -> dict[str, Any]:
            result = await svc.rollback(note_id, scope, version)
            return {
                "note": {**result.note.brief(), "version": result.note.version},
                "restored_version": result.restored_version,
                "diff": result.diff.model_dump(mode="json"),
            }

        out: dict[str, Any] = await call(work)
        return out

    @server.tool(
        description="Undo what adding a note caused: remove the links its add made and revert the notes it "
        "evolved, each only if nothing changed that note since (otherwise refused, with the reason). "
        "delete_note also forgets the note; dry_run only reports what would be undone.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    )
    async def undo_add(
        note_id: Annotated[str, Field(description="the id of the note whose add to undo")],
        delete_note: Annotated[bool, Field(description="delete the note itself too")] = False,
        keep_follows: Annotated[bool, Field(description="keep its FOLLOWS link to the previous turn")] = False,
        dry_run: Annotated[bool, Field(description="report what would be undone; write nothing")] = False,
    ) -> dict[str, Any]:
        async def work(svc: AsyncMemoryService) -> dict[str, Any]:
            result = await svc.undo_add(
                note_id, scope, delete_note=delete_note, keep_follows=keep_follows, dry_run=dry_run
            )
            return result.model_dump(mode="json")

        out: dict[str, Any] = await call(work)
        return out

    @server.tool(
        description="Consolidate memory by adding only: one synthesis note per chain of superseded facts "
        "(their dated history in the notes' own words), linked DERIVED_FROM every source, which never "
        "change. A dry run by default (proposes, writes nothing); undo_add with delete_note removes one.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    async def consolidate(
        dry_run: Annotated[bool, Field(description="propose only; false writes the synthesis notes")] = True,
    ) -> dict[str, Any]:
        async def work(svc: AsyncMemoryService) -> dict[str, Any]:
            return (await svc.consolidate(scope, dry_run=dry_run)).model_dump(mode="json")

        out: dict[str, Any] = await call(work)
        return out

    return server


def run_stdio(settings: Settings | None = None) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    settings = settings or load_settings()
    mcp_scope(settings)  # fail before the transport starts, with a message naming the setting
    server = create_mcp_server(settings)
    install_log_redaction()
    server.run("stdio")
