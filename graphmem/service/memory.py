"""AsyncMemoryService: the A-MEM algorithm on a note store (``ports.NoteStore``).

add:    construct (validate; LLM: keywords, context, tags; embed)        -> add_steps.py, construct.py
        -> decide links and evolution (neighbours in scope; a LinkDecider;
           proposals validated into an EvolutionPlan)                     -> add_steps.py, linking/
        -> re-embed evolved neighbours -> ONE write transaction (note, typed links, neighbour
           versions and updates)                                          -> add_steps.py
search: vector top-k in scope, + one hop along typed links, optionally fused with full-text (by score)
                                                                          -> retrieve.py
ask:    search -> context within a token budget -> answer (LLM)          -> answer_context.py

The LLM proposes, this service decides, the store (Cypher) executes. This module holds the
lifecycle and the public methods: they validate, delegate and account; each step lives in its own
module, the add's in one object (``AddSteps``, ``svc.steps``).
"""

from __future__ import annotations

import asyncio
import functools
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from langchain_core.embeddings import Embeddings
from pydantic import ValidationError

from graphmem.config import Settings, load_settings
from graphmem.errors import InvalidInputError, NoteNotFoundError
from graphmem.llm.calls import LLMCaller
from graphmem.llm.prompts import answer_messages
from graphmem.models import (
    LIMITS,
    MANUAL_CAUSE,
    AddResult,
    AskResult,
    EnrichmentStatus,
    EvolutionPlan,
    IngestItem,
    IngestReport,
    IngestStatus,
    Link,
    LinkType,
    Note,
    NoteInput,
    NoteVersion,
    RollbackResult,
    Scope,
    SearchFilters,
    SearchHit,
    SearchMode,
    UndoResult,
    Usage,
    VersionDiff,
    check_bound,
    check_id,
    utcnow,
    validate_content,
)
from graphmem.models.timeline import ConsolidationResult, Synthesis
from graphmem.ports import HistoryStore, ItemStore, NoteStore
from graphmem.service import bulk, ingest, retrieve, transfer, updates, versions
from graphmem.service.add_steps import AddSteps
from graphmem.service.answer_context import AskContext, build_context
from graphmem.service.chat_model import ChatModelSlot, ChatModelSource
from graphmem.service.items import ItemService
from graphmem.service.linking import MAX_REASON_CHARS, LinkDecider, decider_for
from graphmem.service.stats import RetrievalStats

Progress = Callable[[int, int], None]

__all__ = ["AsyncMemoryService", "NoteInput", "Progress", "SearchMode"]


class AsyncMemoryService:
    """The one service API every interface uses. Create with `await AsyncMemoryService.create()`.

    Args:
        settings: every knob (read once, at the edge).
        store: the note store (``ports.NoteStore``).
        embedder: a LangChain ``Embeddings``.
        chat_model: a ready chat model, a future of one (the edge starting the local model), or
            None (a client for the configured endpoint, built on first use).
        chats: the chat-history store, if any.
        items: the store-item store (the LangGraph store), if any.
        link_decider: how links are decided (default: ``linking.decider_for(settings, ...)``, the
            joint or pairwise decision on ``link_model``).
        link_model / enrich_model / answer_model: another chat model (same forms as ``chat_model``)
            for the link decision, the enrichment, the answers; None: ``chat_model``.
    """

    def __init__(
        self,
        settings: Settings,
        store: NoteStore,
        embedder: Embeddings,
        chat_model: ChatModelSource = None,
        *,
        chats: HistoryStore | None = None,
        items: ItemStore | None = None,
        link_decider: LinkDecider | None = None,
        link_model: ChatModelSource = None,
        enrich_model: ChatModelSource = None,
        answer_model: ChatModelSource = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self._chat = ChatModelSlot(settings, chat_model)
        slots = {
            role: self._chat if model is None else ChatModelSlot(settings, model)
            for role, model in (("link", link_model), ("enrich", enrich_model), ("answer", answer_model))
        }
        self._slots = [self._chat, *(x for x in slots.values() if x is not self._chat)]
        self._answer = slots["answer"]
        decider = link_decider or decider_for(settings, slots["link"].caller)
        self.steps = AddSteps(settings, store, embedder, slots["enrich"].caller, decider)
        self._chats = chats
        self._items = (
            None
            if items is None
            else ItemService(items, self.steps.embed, embedder.aembed_query, settings.max_content_chars)
        )
        self._stats = RetrievalStats(store)
        # Big reads (search, pages, export) at once: each may map hundreds of notes of tens of KB on
        # the event loop and hold them until they are sent; more in parallel only queue for the CPU
        # and multiply the memory (issue 16: ten 8.5 MB searches held /health for seconds).
        self._reads = asyncio.Semaphore(settings.max_concurrent_reads)

    # --- lifecycle ------------------------------------------------------------------------------

    @classmethod
    async def create(
        cls,
        settings: Settings | None = None,
        *,
        chat_model: ChatModelSource = None,
        embedder: Embeddings | None = None,
        bootstrap: bool = True,
        migrate_index: bool = False,
        link_decider: LinkDecider | None = None,
        link_model: ChatModelSource = None,
        enrich_model: ChatModelSource = None,
        answer_model: ChatModelSource = None,
    ) -> AsyncMemoryService:
        """Connect to Neo4j (clear error if unreachable), bootstrap the schema, wire the embedder.

        The service starts no process: for the local model, pass ``chat_model`` (e.g. from
        ``graphmem.local.chat_model(settings)``) or run ``graphmem llm start`` first.
        ``migrate_index`` rebuilds a 5.26-style vector index found on a 2026 server (``graphmem
        migrate-index``); without it such an index is refused with that advice.
        ``link_decider``, ``link_model``, ``enrich_model``, ``answer_model``: see the class.
        """
        from graphmem import store as adapter  # the default adapter: the one place the service names it
        from graphmem.embeddings import embedding_dimensions, make_embedder

        settings = settings or load_settings()
        made: list[Embeddings] = []

        def dimensions() -> int:  # asked once Neo4j answered, as before the schema is bootstrapped
            made.append(embedder or make_embedder(settings))
            return embedding_dimensions(made[0])

        note_store, chats, items = await adapter.open_stores(
            settings, dimensions if bootstrap else None, migrate_index=migrate_index
        )
        emb = made[0] if made else (embedder or make_embedder(settings))
        return cls(
            settings,
            note_store,
            emb,
            chat_model,
            chats=chats,
            items=items,
            link_decider=link_decider,
            link_model=link_model,
            enrich_model=enrich_model,
            answer_model=answer_model,
        )

    async def close(self) -> None:
        for slot in self._slots:  # each chat model's background work on this loop (issue 29)
            await slot.aclose()
        await self._stats.close()
        await self.store.close()

    async def __aenter__(self) -> AsyncMemoryService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def llm_caller(self) -> LLMCaller:
        """The LLM the service calls (waits for a chat model that is still starting)."""
        return await self._chat.caller()

    async def answer_caller(self) -> LLMCaller:
        """The LLM that writes answers (``answer_model``, else the service's own)."""
        return await self._answer.caller()

    @property
    def embedder(self) -> Embeddings:
        """The embedder of notes and queries (the add steps' own: replacing it here replaces it there)."""
        return self.steps.embedder

    @embedder.setter
    def embedder(self, embedder: Embeddings) -> None:
        self.steps.embedder = embedder

    @property
    def chats(self) -> HistoryStore:
        """Chat message histories beside the notes (LangChain's ``GraphmemChatMessageHistory``); not
        to be confused with ``history``, a note's earlier versions."""
        if self._chats is None:
            raise RuntimeError("this service was built without a chat-history store")
        return self._chats

    @property
    def histories(self) -> HistoryStore:
        """Deprecated: ``chats`` (the chat histories)."""
        warnings.warn("AsyncMemoryService.histories is deprecated; use .chats", DeprecationWarning, stacklevel=2)
        return self.chats

    @property
    def items(self) -> ItemService:
        """Key-value items in namespaces, with TTL and filters (the LangGraph store's data)."""
        if self._items is None:
            raise RuntimeError("this service was built without an item store")
        return self._items

    async def flush(self) -> None:
        """Write the retrieval statistics collected since the last write (close() does it too)."""
        await self._stats.flush()

    # --- helpers --------------------------------------------------------------------------------

    async def _require(self, note_id: str, scope: Scope) -> Note:
        check_id(note_id, "note id")
        note = await self.store.get(note_id, scope)
        if note is None:
            raise NoteNotFoundError(note_id)
        return note

    # --- writes ---------------------------------------------------------------------------------

    async def add(
        self,
        content: str,
        scope: Scope,
        *,
        note_id: str | None = None,
        event_time: datetime | str | None = None,
        category: str | None = None,
        source_id: str | None = None,
        metadata: dict[str, str] | None = None,
        dedupe_content: bool = False,
        enrich: bool | None = None,
        evolve: bool | None = None,
        follows: str | None = None,
    ) -> AddResult:
        """Add one memory the A-MEM way. Never loses the note: LLM failures store it raw and mark it.

        ``follows``: the id of the note this one comes after in a conversation (the previous turn);
        the note gets a FOLLOWS link to it, so a search that finds one turn can bring its neighbours.
        """
        started = time.perf_counter()
        steps = self.steps
        note = steps.new_note(content, scope, note_id, event_time, category, source_id, metadata)
        if follows is not None:
            await self._require(follows, scope)  # a missing or other-scope id is the caller's error
        # Idempotent add: the same id (or, on request, the same content) never makes a second note.
        # Ids are unique per scope: another scope's note with this id is neither seen nor refused.
        existing_id = note_id
        if existing_id is None and dedupe_content:
            existing_id = await self.store.find_by_content(note.content, scope)
        if existing_id is not None:
            existing = await self.store.get(existing_id, scope)
            if existing is not None:
                return AddResult(note=existing, created=False)
        if note_id is None and dedupe_content:
            # Two adds of one content may both pass the check above before either writes: both take
            # the id derived from the content, so the store's MERGE (unique per scope) makes one note.
            note.id = await steps.content_id(note.content, scope)

        do_enrich = self.settings.enable_enrichment if enrich is None else enrich
        built = await steps.construct(note, do_enrich)
        plan = EvolutionPlan()
        if (evolve if evolve is not None else do_enrich) and note.enrichment == EnrichmentStatus.DONE:
            plan = await steps.decide_links(built)
        result = await steps.write_note(built, plan, follows=follows)
        if self.settings.enable_supersession and result.created and _judged(self, note, evolve, do_enrich):
            result = await updates.record(self.store, await self.llm_caller(), self.settings, built, result)
        result.usage.total_seconds = time.perf_counter() - started
        return result

    async def add_many(
        self,
        items: Sequence[NoteInput],
        scope: Scope,
        *,
        batch_size: int = 1000,
        progress: Progress | None = None,
        usage: Usage | None = None,
    ) -> list[str]:
        """Bulk import without LLM calls (raw mode): validate all, embed in batches, write in chunks.

        Returns the ids of the notes (existing ids are kept, not duplicated). Nothing is written when
        any item is invalid. ``usage`` (optional) collects the seconds spent embedding and writing;
        the two overlap, so they add up to more than the wall time.
        """
        check_bound(batch_size, 1, LIMITS.batch_max, "batch_size")
        return await bulk.add_many(
            self.store,
            self.steps.embed,
            self.settings,
            items,
            scope,
            batch_size=batch_size,
            progress=progress,
            usage=usage,
        )

    async def ingest(
        self,
        items: Sequence[NoteInput],
        scope: Scope,
        *,
        concurrency: int | None = None,
        enrich: bool | None = None,
        on_item: Callable[[IngestItem], None] | None = None,
        on_judged: Callable[[int, int], None] | None = None,
    ) -> IngestReport:
        """Agentic bulk ingest: every item added the A-MEM way (enrichment, links, evolution), up
        to ``concurrency`` notes in flight (default ``GRAPHMEM_INGEST_CONCURRENCY``), in A-MEM's
        order: a note's link candidates are every earlier item (stored or still in flight), never
        a later one, and notes are written in the items' order.

        Resumable and per item: ids already stored in the scope are skipped (an item without
        ``note_id`` gets one derived from the scope and its ``source_id``, or its content), errors
        fail their item only, ``on_item`` hears of each item once its outcome is final (an added
        note is committed). The rules, including two notes evolving one neighbour: ``service/ingest.py``.
        ``enrich=False`` stores the notes raw (no LLM call); the items' keywords, tags and context are
        not used (the LLM writes them). ``on_judged(done, total)`` hears of the supersession pass that
        follows the last item (``ingest_scopes``).
        """
        judged = None if on_judged is None else (lambda _scope, done, total: on_judged(done, total))
        (report,) = await self.ingest_scopes(
            [(scope, items)], concurrency=concurrency, enrich=enrich, on_item=on_item, on_judged=judged
        )
        return report

    async def ingest_scopes(
        self,
        batches: Sequence[tuple[Scope, Sequence[NoteInput]]],
        *,
        concurrency: int | None = None,
        enrich: bool | None = None,
        on_item: Callable[[IngestItem], None] | None = None,
        on_judged: Callable[[Scope, int, int], None] | None = None,
    ) -> list[IngestReport]:
        """``ingest`` of several scopes at once, sharing ``concurrency``: the scopes run in parallel,
        each in its own order. One report per (scope, items) pair, in the same order. Supersession
        (issue 28) runs once the notes are stored, each note judged against the notes before it;
        ``on_judged(scope, done, total)`` hears of that pass's progress (it starts with ``done`` 0)."""
        n = self.settings.resolved_ingest_concurrency if concurrency is None else concurrency
        reports = await ingest.ingest(self.steps, batches, concurrency=n, enrich=enrich, on_item=on_item)
        enriches = self.settings.enable_enrichment if enrich is None else enrich
        if self.settings.enable_supersession and enriches:  # raw ingests call no LLM
            for (scope, _), report in zip(batches, reports, strict=True):
                # A rerun that adds nothing still judges what a stopped run left unjudged.
                pending = await updates.to_judge(self.store, report)
                if not pending:
                    continue
                progress = None if on_judged is None else functools.partial(on_judged, scope)
                await updates.record_ingested(
                    self.store,
                    await self.llm_caller(),
                    self.settings,
                    report,
                    pending,
                    concurrency=n,
                    on_judged=progress,
                )
        return reports

    async def update(self, note_id: str, scope: Scope, content: str) -> AddResult:
        """New content: re-enrich, re-embed, keep the previous values as a version."""
        usage, rejected = Usage(), list[str]()
        started = time.perf_counter()
        old = await self._require(note_id, scope)
        content = validate_content(content, self.settings.max_content_chars)
        note = old.model_copy(update={"content": content})
        version = await self.steps.rewrite(note, usage, rejected, enrich=self.settings.enable_enrichment)
        if version is None:
            raise NoteNotFoundError(note_id)
        note.version = version
        note.updated_at = utcnow()
        usage.total_seconds = time.perf_counter() - started
        return AddResult(note=note, created=False, rejected=rejected, usage=usage)

    async def repair(self, scope: Scope, *, limit: int = 100) -> int:
        """Re-run note construction (and linking) for notes stored raw after an LLM failure."""
        check_bound(limit, 1, LIMITS.repair_max, "repair limit")
        repaired = 0
        for note_id in await self.store.pending(scope, limit):
            note = await self.store.get(note_id, scope)
            if note is not None and await self.steps.repair(note):
                repaired += 1
        return repaired

    async def rejudge_updates(self, scope: Scope, *, concurrency: int | None = None) -> IngestReport:
        """Judge the scope's supersessions and conflicts again with today's rules and model (issue 28):
        what the supersession step recorded is deleted, then each enriched note is judged against the
        notes before it, as an ingest's supersession pass does. No note changes; a synthesis and its
        links stay. For a scope stored before the rules changed, and to measure a change of them on a
        kept ingest (``graphmem eval links --rejudge-updates``). The report: one item per note judged."""
        if not self.settings.enable_supersession:  # judging nothing would only delete
            raise InvalidInputError("supersession is off (GRAPHMEM_ENABLE_SUPERSESSION=false): nothing to judge with")
        n = self.settings.resolved_ingest_concurrency if concurrency is None else concurrency
        started = time.perf_counter()
        records = await self.export_notes(scope)  # oldest first
        report = IngestReport(
            items=[
                IngestItem(
                    index=i, scope=scope, note_id=r["id"], status=IngestStatus.ADDED, enrichment=EnrichmentStatus.DONE
                )
                for i, r in enumerate(records)
                if r.get("enrichment") == EnrichmentStatus.DONE.value and r.get("category") != updates.SYNTHESIS
            ]
        )
        await self.store.clear_updates(scope)
        if report.items:
            llm = await self.llm_caller()
            await updates.record_ingested(self.store, llm, self.settings, report, report.items, concurrency=n)
        report.seconds = time.perf_counter() - started
        return report

    async def delete(self, note_id: str, scope: Scope) -> bool:
        check_id(note_id, "note id")
        return await self.store.delete(note_id, scope)

    async def link(
        self,
        source_id: str,
        target_id: str,
        scope: Scope,
        type: LinkType | str = LinkType.RELATED_TO,
        reason: str = "",
        strength: float = 0.5,
    ) -> Link:
        """A link made by a person or an agent tool (same closed set of types, same scope)."""
        try:
            link_type = LinkType(type)
        except ValueError:
            raise InvalidInputError(
                f"unknown link type {str(type)[:40]!r}; one of {', '.join(t.value for t in LinkType)}"
            ) from None
        await self._require(source_id, scope)
        await self._require(target_id, scope)
        if source_id == target_id:
            raise InvalidInputError("a note cannot link to itself")
        if not isinstance(reason, str):
            raise InvalidInputError("link reason must be text")
        reason = reason.strip()[:MAX_REASON_CHARS]
        if reason:
            reason = validate_content(reason, MAX_REASON_CHARS, what="link reason")
        try:
            link = Link(source_id=source_id, target_id=target_id, type=link_type, reason=reason, strength=strength)
        except ValidationError as exc:
            raise InvalidInputError(exc.errors()[0]["msg"]) from None
        # caused_by "manual": no add made it, so undoing the source's add keeps it.
        written = await self.store.create_links(source_id, scope, [link], caused_by=MANUAL_CAUSE)
        if not written:
            raise NoteNotFoundError(target_id)
        return written[0]

    async def rollback(self, note_id: str, scope: Scope, version: int) -> RollbackResult:
        """The note's content, context, tags and keywords back to an earlier version's, re-embedded
        and written as a new version (``changed_by``: ``rollback:<version>``); history is append-only.
        VersionNotFoundError for a version the note never had, ConflictError if it changed meanwhile."""
        return await versions.rollback(self.store, self.steps.embed, self.steps.embed_text, note_id, scope, version)

    async def undo_add(
        self,
        note_id: str,
        scope: Scope,
        *,
        delete_note: bool = False,
        keep_follows: bool = False,
        dry_run: bool = False,
    ) -> UndoResult:
        """Undo everything the add of ``note_id`` caused, in one transaction: the links it made
        (``caused_by``; with ``keep_follows`` its FOLLOWS link stays) and its evolutions of neighbours,
        each reverted to the version before the add only while nothing changed it since, otherwise
        refused and reported; with ``delete_note`` the note too. ``dry_run``: report, write nothing.
        Works for a note deleted since (its evolutions are still recorded on the neighbours).
        The supersessions and conflicts the add recorded (issue 28) are removed after it (their own
        write; with the note when it is deleted), so the notes it superseded are current again."""
        check_id(note_id, "note id")
        removed = await self.store.undo_updates(note_id, scope, dry_run=True)
        undone = await versions.undo_add(
            self.store,
            self.steps.embed,
            self.steps.embed_text,
            note_id,
            scope,
            delete_note=delete_note,
            keep_follows=keep_follows,
            dry_run=dry_run,
        )
        if removed and not dry_run and not undone.note_deleted:
            removed = await self.store.undo_updates(note_id, scope)
        undone.updates_removed = removed
        return undone

    async def consolidate(self, scope: Scope, *, dry_run: bool = True) -> ConsolidationResult:
        """Consolidation that only adds (issue 28): one synthesis note per supersession chain of the
        scope (the dated history in the notes' own words, no LLM), with DERIVED_FROM links to every
        source; a chain that grew supersedes its earlier synthesis. ``dry_run`` (the default) proposes
        and writes nothing. Sources never change; ``undo_add(id, delete_note=True)`` removes one."""

        async def add(p: Synthesis) -> AddResult:
            return await self.add(
                p.content,
                scope,
                note_id=p.note_id,
                event_time=p.since,
                category=updates.SYNTHESIS,
                metadata={"derived_from": str(len(p.sources))},
                enrich=False,
                evolve=False,
            )

        return await updates.consolidate(self.store, add, scope, dry_run=dry_run)

    async def import_notes(self, records: Iterable[dict[str, Any]], scope: Scope) -> int:
        """Import records made by export_notes (into this scope); embeddings are reused when present."""
        return await transfer.import_records(self.store, self.steps.embed, self.settings, list(records), scope)

    # --- reads ----------------------------------------------------------------------------------

    async def get(self, note_id: str, scope: Scope) -> Note:
        return await self._require(note_id, scope)

    async def _list(self, scope: Scope, *, limit: int = 50, offset: int = 0) -> list[Note]:
        """A page of the scope's notes, newest first (``limit`` up to ``LIMITS.page_max``)."""
        _page(limit, offset, LIMITS.page_max)
        async with self._reads:
            return await self.store.list_notes(scope, limit=limit, offset=offset)

    async def count(self, scope: Scope) -> int:
        return await self.store.count(scope)

    async def find_by_source(self, source_ids: Sequence[str], scope: Scope) -> dict[str, str]:
        """Ids of the scope's notes with these source ids (source id -> note id): resumable ingest."""
        return await self.store.find_by_source(list(source_ids), scope)

    async def links(
        self, note_id: str, scope: Scope, *, limit: int = LIMITS.links_page_max, offset: int = 0
    ) -> list[Link]:
        """A page of the note's typed links (both directions), oldest first."""
        _page(limit, offset, LIMITS.links_page_max)
        await self._require(note_id, scope)
        async with self._reads:
            return await self.store.links(note_id, scope, limit=limit, offset=offset)

    async def history(
        self, note_id: str, scope: Scope, *, limit: int = LIMITS.history_page_max, offset: int = 0
    ) -> list[NoteVersion]:
        """A page of the note's earlier versions, oldest first (the note itself is the newest)."""
        _page(limit, offset, LIMITS.history_page_max)
        await self._require(note_id, scope)
        async with self._reads:
            return await self.store.history(note_id, scope, limit=limit, offset=offset)

    async def history_diff(
        self, note_id: str, scope: Scope, *, limit: int = LIMITS.history_page_max, offset: int = 0
    ) -> list[VersionDiff]:
        """What changed from each version to the next, oldest first, paged by step: a word diff of
        content and context, tags and keywords added and removed, and the cause of each step."""
        return await versions.history_diff(self.store, note_id, scope, limit=limit, offset=offset)

    async def scopes(self, user_id: str | None = None) -> list[Scope]:
        if user_id is not None:
            check_id(user_id, "user_id")
        return await self.store.scopes(user_id)

    async def export_notes(self, scope: Scope) -> list[dict[str, Any]]:
        async with self._reads:
            return await transfer.export_records(self.store, scope)

    async def health(self) -> dict[str, Any]:
        server = await self.store.verify()
        return {"status": "ok", "neo4j": server, "notes": await self.store.note_count(), "llm": self._chat.status()}

    async def search(
        self,
        query: str,
        scope: Scope,
        *,
        k: int | None = None,
        mode: SearchMode | str | None = None,
        filters: SearchFilters | None = None,
        usage: Usage | None = None,
        query_embedding: Sequence[float] | None = None,
        history: bool = False,
        as_of: datetime | str | None = None,
        links_per_hit: int | None = None,
    ) -> list[SearchHit]:
        """Top-k notes of the scope for a query; each hit says how it was found.

        mode: ``SearchMode`` or its value: "vector" (HNSW), "links" (vector + one hop along typed
        links), "hybrid" (vector fused with full-text by score, + links; the default).
        ``query_embedding`` skips embedding the query (benchmarks); ``usage`` collects the time.
        Memory that changes (issue 28): a superseded hit gives its place to its current note, marked
        with the dated history of what it superseded (``SearchHit.timeline``); ``history=True`` keeps
        every hit, marked; ``as_of`` gives the state at that time. ``links_per_hit``: linked notes
        each hit may bring (default: the setting).
        """
        k = check_bound(self.settings.search_k if k is None else k, 1, LIMITS.k_max, "k")
        per_hit = check_bound(
            self.settings.links_per_hit if links_per_hit is None else links_per_hit, 0, 50, "links_per_hit"
        )
        search_mode = SearchMode.parse(mode or self.settings.search_mode)
        query = validate_content(query, self.settings.max_content_chars, what="query")
        if filters is not None and not isinstance(filters, SearchFilters):
            raise InvalidInputError("filters must be a graphmem SearchFilters")
        moment = _moment(as_of)
        usage = usage or Usage()
        if query_embedding is not None:
            vec = list(query_embedding)
        else:
            started = time.perf_counter()
            vec = await self.embedder.aembed_query(query)
            usage.embed_seconds += time.perf_counter() - started
        t0 = time.perf_counter()
        async with self._reads:
            hits = await retrieve.retrieve(
                self.store,
                query,
                vec,
                scope,
                k=k,
                mode=search_mode,
                filters=filters,
                over_fetch=self.settings.over_fetch_ratio,
                per_hit=per_hit,
                pool=self.settings.search_pool,
                text_weight=self.settings.fulltext_weight,
                common_share=self.settings.common_word_share,
                text_fields=self.settings.search_fields,
            )
            hits = await self._in_time(hits, scope, history=history, moment=moment)
        usage.store_seconds += time.perf_counter() - t0
        if hits:
            self._stats.record((h.note.id for h in hits), scope)
        return hits

    async def _in_time(
        self, hits: list[SearchHit], scope: Scope, *, history: bool, moment: datetime | None
    ) -> list[SearchHit]:
        """Hits marked with where they stand in time (``updates.annotate``) when anything asks for it:
        supersession on, every hit's history, or the state at a moment."""
        if self.settings.enable_supersession or history or moment is not None:
            return await updates.annotate(self.store, hits, scope, history=history, as_of=moment)
        return hits

    async def ask(
        self,
        question: str,
        scope: Scope,
        *,
        k: int | None = None,
        mode: SearchMode | str | None = None,
        token_budget: int | None = None,
        filters: SearchFilters | None = None,
        instructions: str | None = None,
        history: bool = False,
        as_of: datetime | str | None = None,
        show_context: bool | None = None,
    ) -> AskResult:
        """Answer from a few relevant notes and their links, within a token budget.

        ``instructions`` are appended to the question in the answer prompt only (not to the search
        query): the LoCoMo evaluation's per-category answer rules use it. ``show_context``: write each
        note's LLM-written context after its content (default: ``answer_shows_context``).
        """
        started = time.perf_counter()
        usage = Usage()
        got = await self.ask_context(
            question,
            scope,
            k=k,
            mode=mode,
            token_budget=token_budget,
            filters=filters,
            history=history,
            as_of=as_of,
            show_context=show_context,
            usage=usage,
        )
        instructions = updates.with_rule(instructions, got.marks, got.asked)
        answer = await self.answer(question, got.text or "(no notes)", instructions=instructions, usage=usage)
        clash = updates.clash_of(got.hits)  # a recorded clash is answered as one (issue 28)
        if clash is not None and clash not in answer:
            answer = f"{answer} ({clash})" if answer else clash
        usage.total_seconds = time.perf_counter() - started
        return AskResult(question=question, answer=answer, notes=got.hits, context_tokens=got.tokens, usage=usage)

    async def ask_context(
        self,
        question: str,
        scope: Scope,
        *,
        k: int | None = None,
        mode: SearchMode | str | None = None,
        token_budget: int | None = None,
        filters: SearchFilters | None = None,
        history: bool = False,
        as_of: datetime | str | None = None,
        show_context: bool | None = None,
        usage: Usage | None = None,
        query_embedding: Sequence[float] | None = None,
    ) -> AskContext:
        """The context ``ask`` gives the answer model for a question, without the answer: what the
        evaluations measure as retrieval is what the answers see. Arguments as for ``ask``;
        ``query_embedding`` skips embedding the question."""
        budget = self.settings.context_token_budget if token_budget is None else token_budget
        check_bound(budget, LIMITS.token_budget_min, LIMITS.token_budget_max, "token budget")
        # The default context keeps a superseded hit, marked, and brings its current note after it; a
        # question about now gets the current notes only, without their earlier values (issue 28).
        default = self.settings.enable_supersession and not history and as_of is None
        asked = updates.asks_about(question) if default else None
        both = default and asked != "now"
        fill = self.settings.answer_fill_links_per_hit
        hits = await self.search(
            question,
            scope,
            k=self.settings.answer_k if k is None else k,
            mode=mode,
            filters=filters,
            usage=usage,
            query_embedding=query_embedding,
            history=history or both,
            as_of=as_of,
            links_per_hit=self.settings.resolved_answer_links_per_hit,
        )
        if both:
            hits = await updates.with_current(self.store, hits, scope)
        if fill:  # the hits' linked notes after every hit, never among them: they take what the hits leave
            async with self._reads:
                extra = await retrieve.linked_after(self.store, hits, scope, fill)
                extra = await self._in_time(extra, scope, history=history or both, moment=_moment(as_of))
            held = {h.note.id for h in hits}
            hits = [*hits, *(h for h in extra if h.note.id not in held)]
        marks = updates.context_marks(hits, with_history=asked != "now")  # current / superseded / clash lines
        ctx = build_context(
            [h.note for h in hits],
            budget,
            marks=marks,
            with_context=self.settings.answer_shows_context if show_context is None else show_context,
        )
        used = [hits[i] for i in ctx.used]
        kept = {h.note.id for h in used}
        return AskContext(
            text=ctx.text,
            hits=used,
            tokens=ctx.tokens,
            marks={i: m for i, m in marks.items() if i in kept},
            asked=asked,
        )

    async def answer(
        self, question: str, context: str, *, instructions: str | None = None, usage: Usage | None = None
    ) -> str:
        """The LLM's short answer to a question from a given context (``ask`` without the search;
        the evaluation's full-conversation baseline)."""
        llm = await self.answer_caller()
        text = await llm.text(answer_messages(question, context, instructions), usage or Usage())
        return text.strip()

    # The public name is ``list``; the method is written as ``_list`` so that ``list`` in the class
    # body stays the builtin (the annotations say ``list[Note]``, not ``builtins.list[Note]``).
    list = _list


def _page(limit: int, offset: int, most: int) -> None:
    check_bound(limit, 1, most, "limit")
    check_bound(offset, 0, LIMITS.offset_max, "offset")


def _judged(svc: AsyncMemoryService, note: Note, evolve: bool | None, enrich: bool) -> bool:
    """Whether an add asks the supersession question (issue 28): as for the link step, only for an
    enriched note (raw mode calls no LLM) and unless the caller turned the step off."""
    return (evolve if evolve is not None else enrich) and note.enrichment == EnrichmentStatus.DONE


def _moment(value: datetime | str | None) -> datetime | None:
    """``as_of`` as a datetime (an ISO date or datetime string is accepted; naive means UTC)."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        raise InvalidInputError(f"as_of is not an ISO date or datetime: {str(value)[:40]!r}") from None
