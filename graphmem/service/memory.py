"""AsyncMemoryService: the A-MEM algorithm on a note store (``ports.NoteStore``).

add:    construct (validate; LLM: keywords, context, tags; embed)        -> construct.py
        -> decide links and evolution (neighbours in scope; LLM, real ids;
           proposals validated into an EvolutionPlan)                     -> evolve.py
        -> re-embed evolved neighbours -> ONE write transaction (note, typed links, neighbour
           versions and updates).
search: vector top-k in scope, + one hop along typed links, optionally fused with full-text (by score)
                                                                          -> retrieve.py
ask:    search -> context within a token budget -> answer (LLM)          -> context.py

The LLM proposes, this service decides, the store (Cypher) executes. This module holds the
lifecycle and the public methods; each step lives in its own module.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    AddOutcome,
    AddResult,
    AddWrite,
    AskResult,
    ConstructedNote,
    EnrichmentStatus,
    EvolutionPlan,
    IngestItem,
    IngestReport,
    IngestStatus,
    Link,
    LinkType,
    NeighbourUpdate,
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
    new_note_id,
    utcnow,
    validate_content,
)
from graphmem.ports import HistoryStore, ItemStore, NoteStore
from graphmem.service import bulk, construct, evolve, ingest, retrieve, transfer, updates, versions
from graphmem.service.chat import ChatModelSlot, ChatModelSource
from graphmem.service.context import build_context
from graphmem.service.items import ItemService
from graphmem.service.stats import RetrievalStats
from graphmem.service.text import cosine, embed_text
from graphmem.timeline import ConsolidationResult, Synthesis

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
        histories: the chat-history store, if any.
        items: the store-item store (the LangGraph store), if any.
    """

    def __init__(
        self,
        settings: Settings,
        store: NoteStore,
        embedder: Embeddings,
        chat_model: ChatModelSource = None,
        *,
        histories: HistoryStore | None = None,
        items: ItemStore | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self._chat = ChatModelSlot(settings, chat_model)
        self._histories = histories
        self._items = (
            None
            if items is None
            else ItemService(items, self._embed, embedder.aembed_query, settings.max_content_chars)
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
    ) -> AsyncMemoryService:
        """Connect to Neo4j (clear error if unreachable), bootstrap the schema, wire the embedder.

        The service starts no process: for the local model, pass ``chat_model`` (e.g. from
        ``graphmem.local.chat_model(settings)``) or run ``graphmem llm start`` first.
        ``migrate_index`` rebuilds a 5.26-style vector index found on a 2026 server (``graphmem
        migrate-index``); without it such an index is refused with that advice.
        """
        from graphmem import store as adapter  # the default adapter: the one place the service names it
        from graphmem.embeddings import embedding_dimensions, make_embedder

        settings = settings or load_settings()
        made: list[Embeddings] = []

        def dimensions() -> int:  # asked once Neo4j answered, as before the schema is bootstrapped
            made.append(embedder or make_embedder(settings))
            return embedding_dimensions(made[0])

        note_store, histories, items = await adapter.open_stores(
            settings, dimensions if bootstrap else None, migrate_index=migrate_index
        )
        emb = made[0] if made else (embedder or make_embedder(settings))
        return cls(settings, note_store, emb, chat_model, histories=histories, items=items)

    async def close(self) -> None:
        self._chat.cancel()
        await self._stats.close()
        await self.store.close()

    async def __aenter__(self) -> AsyncMemoryService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def llm_caller(self) -> LLMCaller:
        """The LLM the service calls (waits for a chat model that is still starting)."""
        return await self._chat.caller()

    @property
    def histories(self) -> HistoryStore:
        """Chat message histories beside the notes (LangChain's ``GraphmemChatMessageHistory``)."""
        if self._histories is None:
            raise RuntimeError("this service was built without a history store")
        return self._histories

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

    async def _embed(self, texts: Sequence[str], usage: Usage | None = None) -> builtins.list[list[float]]:
        if not texts:
            return []
        started = time.perf_counter()
        vectors = await self.embedder.aembed_documents(list(texts))
        if usage is not None:
            usage.embed_seconds += time.perf_counter() - started
        return vectors

    async def _require(self, note_id: str, scope: Scope) -> Note:
        check_id(note_id, "note id")
        note = await self.store.get(note_id, scope)
        if note is None:
            raise NoteNotFoundError(note_id)
        return note

    def _embed_text(self, note: Note) -> str:
        return embed_text(note, self.settings.embed_text_variant)

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
        note = self._new_note(content, scope, note_id, event_time, category, source_id, metadata)
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
            note.id = await self._content_id(note.content, scope)

        do_enrich = self.settings.enable_enrichment if enrich is None else enrich
        built = await self._construct(note, do_enrich)
        plan = EvolutionPlan()
        if (evolve if evolve is not None else do_enrich) and note.enrichment == EnrichmentStatus.DONE:
            plan = await self.decide_links(built)
        result = await self.write_note(built, plan, follows=follows)
        if self.settings.enable_supersession and result.created and _judged(self, note, evolve, do_enrich):
            result = await updates.record(self.store, await self.llm_caller(), self.settings, built, result)
        result.usage.total_seconds = time.perf_counter() - started
        return result

    async def _content_id(self, content: str, scope: Scope) -> str:
        """The id a dedupe_content add takes: derived from the content, so concurrent adds agree. An
        earlier note with this id whose content was changed since (update) moves it to the next one."""
        base = "c-" + hashlib.sha256(content.encode("utf-8")).hexdigest()[:40]
        for n in range(1, 100):
            candidate = base if n == 1 else f"{base}-{n}"
            taken = await self.store.get(candidate, scope)
            if taken is None or taken.content == content:
                return candidate
        return new_note_id()  # 99 rewrites of one content: give up on agreeing, never on storing

    def _new_note(
        self,
        content: Any,
        scope: Scope,
        note_id: str | None,
        event_time: datetime | str | None,
        category: str | None,
        source_id: str | None,
        metadata: dict[str, str] | None,
    ) -> Note:
        return construct.new_note(
            content,
            scope,
            max_chars=self.settings.max_content_chars,
            note_id=note_id,
            event_time=event_time,
            category=category,
            source_id=source_id,
            metadata=metadata,
        )

    async def _construct(self, note: Note, enrich: bool) -> ConstructedNote:
        usage, rejected = Usage(), builtins.list[str]()
        if enrich:
            enrichment = await construct.enrich(await self.llm_caller(), note.content, usage, rejected)
            construct.apply_enrichment(note, enrichment)
        else:
            note.enrichment = EnrichmentStatus.RAW
        (embedding,) = await self._embed([self._embed_text(note)], usage)
        return ConstructedNote(note=note, embedding=embedding, usage=usage, rejected=rejected)

    async def construct_note(
        self,
        content: str,
        scope: Scope,
        *,
        note_id: str | None = None,
        event_time: datetime | str | None = None,
        category: str | None = None,
        source_id: str | None = None,
        metadata: dict[str, str] | None = None,
        enrich: bool | None = None,
    ) -> ConstructedNote:
        """Step 1 of an add: validate the input, enrich it with the LLM (or mark it PENDING when the
        LLM fails, RAW when enrichment is off) and embed it. Nothing is stored."""
        note = self._new_note(content, scope, note_id, event_time, category, source_id, metadata)
        return await self._construct(note, self.settings.enable_enrichment if enrich is None else enrich)

    @property
    def links_enabled(self) -> bool:
        """Whether an add runs the link/evolution step at all (settings: links or evolution, k > 0)."""
        s = self.settings
        return (s.enable_links or s.evolution_enabled) and s.neighbour_k > 0

    async def neighbours(
        self,
        built: ConstructedNote,
        *,
        in_flight: Sequence[ConstructedNote] = (),
        exclude_ids: Sequence[str] = (),
    ) -> builtins.list[Note]:
        """The candidates of the link/evolution step: the note's ``neighbour_k`` nearest notes of its
        scope by cosine, from the store and from ``in_flight`` (notes constructed but not written yet,
        e.g. the earlier notes of a concurrent ingest; a stored copy wins over an in-flight one).
        ``exclude_ids`` are never candidates (e.g. notes that come after this one). Nothing is stored."""
        s, note = self.settings, built.note
        skip = {note.id, *exclude_ids}
        t0 = time.perf_counter()
        found = await self.store.vector_search(
            built.embedding, note.scope, s.neighbour_k, exclude_ids=sorted(skip), over_fetch=s.over_fetch_ratio
        )
        built.usage.store_seconds += time.perf_counter() - t0
        if not in_flight:
            return [n for n, _ in found]
        scored = {n.id: (score, n) for n, score in found}
        for other in in_flight:
            if other.note.id not in scored and other.note.id not in skip and other.note.scope == note.scope:
                scored[other.note.id] = (cosine(built.embedding, other.embedding), other.note)
        ranked = sorted(scored.values(), key=lambda x: (-x[0], x[1].id))
        return [n for _, n in ranked[: s.neighbour_k]]

    async def decide_links(self, built: ConstructedNote, *, neighbours: Sequence[Note] | None = None) -> EvolutionPlan:
        """Step 2 of an add: the note's nearest neighbours in its scope (or the given candidates,
        see ``neighbours``), the LLM's proposals for links and neighbour updates, and the plan the
        service accepts from them. Nothing is stored; the time and tokens go to ``built.usage``."""
        s = self.settings
        if not self.links_enabled:
            return EvolutionPlan()
        usage, note = built.usage, built.note
        if neighbours is None:
            neighbours = await self.neighbours(built)
        if not neighbours:  # A-MEM asks even with zero neighbours; nothing could come of it
            return EvolutionPlan()
        llm = await self.llm_caller()
        if s.resolved_link_decision == "pairwise":
            plan = await evolve.decide_pairwise(
                llm,
                note,
                neighbours,
                usage,
                candidates=s.link_candidates,
                threshold=s.link_threshold,
                links=s.enable_links,
                evolution=s.evolution_enabled,
            )
            plan.candidates = [n.id for n in neighbours[: s.link_candidates]]
        else:
            decision, rejected = await evolve.propose(llm, note, neighbours, usage)
            if decision is None:
                return EvolutionPlan(rejected=rejected, candidates=[n.id for n in neighbours])
            plan = evolve.plan_evolution(
                note, neighbours, decision, links=s.enable_links, evolution=s.evolution_enabled, rejected=rejected
            )
            plan.candidates = [n.id for n in neighbours]
        return await evolve.screen_evolutions(plan, note, neighbours, lambda texts: self._embed(texts, usage))

    async def write_note(
        self,
        built: ConstructedNote,
        plan: EvolutionPlan,
        *,
        follows: str | None = None,
        embedded: Mapping[str, Sequence[float]] | None = None,
    ) -> AddResult:
        """Step 3 of an add: re-embed the evolved neighbours and write the note, its links (plus
        a FOLLOWS link to ``follows``) and the evolutions in one transaction. Idempotent by id.
        ``embedded``: vectors computed ahead, by the text they embed (``embed_updates``); a neighbour
        whose text is not there is embedded here."""
        write, plan = await self._add_write(built, plan, follows, embedded)
        t0 = time.perf_counter()
        outcome = await self.store.add(write)
        built.usage.store_seconds += time.perf_counter() - t0
        return await self._add_result(built, plan, outcome)

    async def write_notes(
        self, writes: Sequence[tuple[ConstructedNote, EvolutionPlan, str | None, Mapping[str, Sequence[float]] | None]]
    ) -> builtins.list[AddResult]:
        """``write_note`` for several notes of one scope in ONE statement and transaction, in order
        (a later note may link to or evolve an earlier one of the same call). Each item: the
        constructed note, its plan, its FOLLOWS target (or None), its vectors computed ahead. An
        update whose neighbour has a ``NeighbourEvolution.before.version`` is checked against it:
        when any neighbour changed meanwhile nothing is written (StaleWriteError)."""
        if not writes:
            return []
        built_plans: list[tuple[ConstructedNote, EvolutionPlan]] = []
        adds: list[AddWrite] = []
        for built, plan, follows, embedded in writes:
            write, full = await self._add_write(built, plan, follows, embedded, checked=True)
            adds.append(write)
            built_plans.append((built, full))
        t0 = time.perf_counter()
        outcomes = await self.store.add_group(adds)
        share = (time.perf_counter() - t0) / len(adds)
        results = []
        for (built, plan), outcome in zip(built_plans, outcomes, strict=True):
            built.usage.store_seconds += share
            results.append(await self._add_result(built, plan, outcome))
        return results

    async def _add_write(
        self,
        built: ConstructedNote,
        plan: EvolutionPlan,
        follows: str | None,
        embedded: Mapping[str, Sequence[float]] | None,
        *,
        checked: bool = False,
    ) -> tuple[AddWrite, EvolutionPlan]:
        """What the store writes for one add (the evolved neighbours re-embedded: the original left the
        index stale for 100 evolutions), and the plan with its FOLLOWS link. ``checked``: each update
        carries the neighbour version it was planned on."""
        usage, note = built.usage, built.note
        plan = evolve.with_follows(plan, note.id, follows)
        evolved = evolve.evolved_notes(plan)
        texts = [self._embed_text(n) for n in evolved]
        ready = embedded or {}
        missing = [t for t in texts if t not in ready]
        fresh = dict(zip(missing, await self._embed(missing, usage), strict=True))
        vectors = [list(ready[t]) if t in ready else fresh[t] for t in texts]
        updates = [
            NeighbourUpdate(
                note_id=n.id,
                context=n.context,
                tags=n.tags,
                keywords=n.keywords,
                embedding=v,
                expected_version=u.before.version if checked else None,
            )
            for n, v, u in zip(evolved, vectors, plan.updates, strict=True)
        ]
        write = AddWrite(
            note=note,
            embedding=built.embedding,
            links=plan.links,
            updates=updates,
            variant=self.settings.embed_text_variant,
        )
        return write, plan

    async def _add_result(self, built: ConstructedNote, plan: EvolutionPlan, outcome: AddOutcome) -> AddResult:
        usage, note = built.usage, built.note
        if not outcome.created:  # a concurrent add of the same id won the race: idempotent, nothing written
            existing = await self.store.get(note.id, note.scope)
            if existing is None:  # deleted again meanwhile
                raise NoteNotFoundError(note.id)
            return AddResult(note=existing, created=False, usage=usage)
        return AddResult(
            note=note,
            created=True,
            links=outcome.links,
            evolved=evolve.neighbour_changes(plan, outcome.versions),
            rejected=[*built.rejected, *plan.rejected],
            candidates=plan.candidates,
            usage=usage,
        )

    async def embed_updates(self, plan: EvolutionPlan, usage: Usage | None = None) -> dict[str, builtins.list[float]]:
        """The vectors of a plan's evolved neighbours, by the text they embed: ``write_note(...,
        embedded=...)`` then skips the embedding (a concurrent ingest computes them before its turn
        to write comes)."""
        texts = [self._embed_text(n) for n in evolve.evolved_notes(plan)]
        return dict(zip(texts, await self._embed(texts, usage), strict=True))

    async def add_many(
        self,
        items: Sequence[NoteInput],
        scope: Scope,
        *,
        batch_size: int = 1000,
        progress: Progress | None = None,
        usage: Usage | None = None,
    ) -> builtins.list[str]:
        """Bulk import without LLM calls (raw mode): validate all, embed in batches, write in chunks.

        Returns the ids of the notes (existing ids are kept, not duplicated). Nothing is written when
        any item is invalid. ``usage`` (optional) collects the seconds spent embedding and writing;
        the two overlap, so they add up to more than the wall time.
        """
        check_bound(batch_size, 1, LIMITS.batch_max, "batch_size")
        return await bulk.add_many(
            self.store, self._embed, self.settings, items, scope, batch_size=batch_size, progress=progress, usage=usage
        )

    async def ingest(
        self,
        items: Sequence[NoteInput],
        scope: Scope,
        *,
        concurrency: int | None = None,
        enrich: bool | None = None,
        on_item: Callable[[IngestItem], None] | None = None,
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
        not used (the LLM writes them).
        """
        (report,) = await self.ingest_scopes([(scope, items)], concurrency=concurrency, enrich=enrich, on_item=on_item)
        return report

    async def ingest_scopes(
        self,
        batches: Sequence[tuple[Scope, Sequence[NoteInput]]],
        *,
        concurrency: int | None = None,
        enrich: bool | None = None,
        on_item: Callable[[IngestItem], None] | None = None,
    ) -> builtins.list[IngestReport]:
        """``ingest`` of several scopes at once, sharing ``concurrency``: the scopes run in parallel,
        each in its own order. One report per (scope, items) pair, in the same order. Supersession
        (issue 28) runs once the notes are stored, each note judged against the notes before it."""
        n = self.settings.resolved_ingest_concurrency if concurrency is None else concurrency
        reports = await ingest.ingest(self, batches, concurrency=n, enrich=enrich, on_item=on_item)
        enriched = any(
            it.status == IngestStatus.ADDED and it.enrichment == EnrichmentStatus.DONE
            for r in reports
            for it in r.items
        )
        if self.settings.enable_supersession and enriched:  # raw ingests call no LLM
            llm = await self.llm_caller()
            for report in reports:
                await updates.record_ingested(self.store, llm, self.settings, report, concurrency=n)
        return reports

    async def update(self, note_id: str, scope: Scope, content: str) -> AddResult:
        """New content: re-enrich, re-embed, keep the previous values as a version."""
        usage, rejected = Usage(), builtins.list[str]()
        started = time.perf_counter()
        old = await self._require(note_id, scope)
        content = validate_content(content, self.settings.max_content_chars)
        note = old.model_copy(update={"content": content})
        if self.settings.enable_enrichment:
            enrichment = await construct.enrich(await self.llm_caller(), content, usage, rejected)
            construct.apply_enrichment(note, enrichment)
        (embedding,) = await self._embed([self._embed_text(note)], usage)
        version = await self.store.revise(
            note_id,
            scope,
            content=content,
            context=note.context,
            tags=note.tags,
            keywords=note.keywords,
            enrichment=note.enrichment,
            embedding=embedding,
            changed_by="update",
        )
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
            if note is None:
                continue
            built = ConstructedNote(note=note, embedding=[])
            enrichment = await construct.enrich(await self.llm_caller(), note.content, built.usage)
            if not construct.apply_enrichment(note, enrichment):
                continue
            (built.embedding,) = await self._embed([self._embed_text(note)], built.usage)
            await self.store.revise(
                note_id,
                scope,
                content=note.content,
                context=note.context,
                tags=note.tags,
                keywords=note.keywords,
                enrichment=EnrichmentStatus.DONE,
                embedding=built.embedding,
                changed_by="repair",
            )
            plan = await self.decide_links(built)
            if plan.links:
                await self.store.create_links(note.id, scope, plan.links, caused_by=note.id)
            repaired += 1
        return repaired

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
        reason = reason.strip()[: evolve.MAX_REASON_CHARS]
        if reason:
            reason = validate_content(reason, evolve.MAX_REASON_CHARS, what="link reason")
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
        return await versions.rollback(self.store, self._embed, self._embed_text, note_id, scope, version)

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
            self._embed,
            self._embed_text,
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
        return await transfer.import_records(self.store, self._embed, self.settings, list(records), scope)

    # --- reads ----------------------------------------------------------------------------------

    async def get(self, note_id: str, scope: Scope) -> Note:
        return await self._require(note_id, scope)

    async def list(self, scope: Scope, *, limit: int = 50, offset: int = 0) -> builtins.list[Note]:
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
    ) -> builtins.list[Link]:
        """A page of the note's typed links (both directions), oldest first."""
        _page(limit, offset, LIMITS.links_page_max)
        await self._require(note_id, scope)
        async with self._reads:
            return await self.store.links(note_id, scope, limit=limit, offset=offset)

    async def history(
        self, note_id: str, scope: Scope, *, limit: int = LIMITS.history_page_max, offset: int = 0
    ) -> builtins.list[NoteVersion]:
        """A page of the note's earlier versions, oldest first (the note itself is the newest)."""
        _page(limit, offset, LIMITS.history_page_max)
        await self._require(note_id, scope)
        async with self._reads:
            return await self.store.history(note_id, scope, limit=limit, offset=offset)

    async def history_diff(
        self, note_id: str, scope: Scope, *, limit: int = LIMITS.history_page_max, offset: int = 0
    ) -> builtins.list[VersionDiff]:
        """What changed from each version to the next, oldest first, paged by step: a word diff of
        content and context, tags and keywords added and removed, and the cause of each step."""
        return await versions.history_diff(self.store, note_id, scope, limit=limit, offset=offset)

    async def scopes(self, user_id: str | None = None) -> builtins.list[Scope]:
        if user_id is not None:
            check_id(user_id, "user_id")
        return await self.store.scopes(user_id)

    async def export_notes(self, scope: Scope) -> builtins.list[dict[str, Any]]:
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
    ) -> builtins.list[SearchHit]:
        """Top-k notes of the scope for a query; each hit says how it was found.

        mode: ``SearchMode`` or its value: "vector" (HNSW), "links" (vector + one hop along typed
        links), "hybrid" (vector fused with full-text by score, + links; the default).
        ``query_embedding`` skips embedding the query (benchmarks); ``usage`` collects the time.
        Memory that changes (issue 28): a superseded hit gives its place to its current note, marked
        with the dated history of what it superseded (``SearchHit.timeline``); ``history=True`` keeps
        every hit, marked; ``as_of`` gives the state at that time.
        """
        k = check_bound(self.settings.search_k if k is None else k, 1, LIMITS.k_max, "k")
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
                per_hit=self.settings.links_per_hit,
                pool=self.settings.search_pool,
                text_weight=self.settings.fulltext_weight,
                common_share=self.settings.common_word_share,
            )
            if self.settings.enable_supersession or history or moment is not None:
                hits = await updates.annotate(self.store, hits, scope, history=history, as_of=moment)
        usage.store_seconds += time.perf_counter() - t0
        if hits:
            self._stats.record((h.note.id for h in hits), scope)
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
    ) -> AskResult:
        """Answer from a few relevant notes and their links, within a token budget.

        ``instructions`` are appended to the question in the answer prompt only (not to the search
        query): the LoCoMo evaluation's per-category answer rules use it.
        """
        started = time.perf_counter()
        usage = Usage()
        budget = self.settings.context_token_budget if token_budget is None else token_budget
        check_bound(budget, LIMITS.token_budget_min, LIMITS.token_budget_max, "token budget")
        # The default context keeps a superseded hit, marked, and brings its current note after it.
        default = self.settings.enable_supersession and not history and as_of is None
        hits = await self.search(
            question, scope, k=k, mode=mode, filters=filters, usage=usage, history=history or default, as_of=as_of
        )
        if default:
            hits = await updates.with_current(self.store, hits, scope)
        marks = updates.context_marks(hits)  # current / superseded / clash lines (issue 28)
        ctx = build_context([h.note for h in hits], budget, marks=marks)
        used = [hits[i] for i in ctx.used]
        del hits  # only the notes in the context stay in memory while the LLM answers
        kept = {h.note.id for h in used}
        instructions = updates.with_rule(instructions, {i: m for i, m in marks.items() if i in kept})
        answer = await self.answer(question, ctx.text or "(no notes)", instructions=instructions, usage=usage)
        clash = updates.clash_of(used)  # a recorded clash is answered as one (issue 28)
        if clash is not None and clash not in answer:
            answer = f"{answer} ({clash})" if answer else clash
        usage.total_seconds = time.perf_counter() - started
        return AskResult(question=question, answer=answer, notes=used, context_tokens=ctx.tokens, usage=usage)

    async def answer(
        self, question: str, context: str, *, instructions: str | None = None, usage: Usage | None = None
    ) -> str:
        """The LLM's short answer to a question from a given context (``ask`` without the search;
        the evaluation's full-conversation baseline)."""
        llm = await self.llm_caller()
        text = await llm.text(answer_messages(question, context, instructions), usage or Usage())
        return text.strip()


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
