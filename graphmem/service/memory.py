"""AsyncMemoryService: the A-MEM algorithm on the Neo4j store.

add:    validate -> construct (LLM: keywords, context, tags) -> embed -> neighbours (HNSW, in scope)
        -> link + evolve decision (LLM, real ids) -> validate proposals -> re-embed evolved neighbours
        -> ONE write transaction (note, typed links, neighbour versions and updates).
search: vector top-k in scope, + one hop along typed links, optionally fused with full-text (RRF).
ask:    search -> context within a token budget -> answer (LLM) with notes used and tokens spent.

The LLM proposes, this module decides, the store (Cypher) executes.
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field, ValidationError

from graphmem.config import Settings, load_settings
from graphmem.errors import ConflictError, InvalidInputError, LLMError, NoteNotFoundError
from graphmem.llm.calls import LLMCaller
from graphmem.llm.outputs import EvolutionDecision, NoteEnrichment
from graphmem.llm.prompts import answer_messages, enrich_messages, evolve_messages
from graphmem.models import (
    FOLLOWS_REASON,
    AddResult,
    AskResult,
    EnrichmentStatus,
    Link,
    LinkType,
    NeighbourChange,
    Note,
    NoteVersion,
    Scope,
    SearchHit,
    Usage,
    check_id,
    utcnow,
)
from graphmem.service.context import build_context
from graphmem.service.text import (
    check_note_text,
    embed_text,
    parse_event_time,
    validate_content,
    validate_label,
    validate_metadata,
)
from graphmem.store.neo4j_store import AddWrite, LinkedNote, NeighbourUpdate, Neo4jNoteStore, SearchFilters
from graphmem.store.schema import bootstrap_schema

log = logging.getLogger(__name__)

SearchMode = Literal["vector", "links", "hybrid"]
Progress = Callable[[int, int], None]
_RRF_K = 60  # the usual reciprocal-rank-fusion constant


TOUCH_DELAY = 0.5  # seconds between writes of retrieval statistics


class NoteInput(BaseModel):
    """One note to add in bulk (import, LoCoMo ingest, benchmarks)."""

    content: str
    note_id: str | None = None
    event_time: datetime | str | None = None
    category: str | None = None
    source_id: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    keywords: builtins.list[str] = Field(default_factory=list)
    tags: builtins.list[str] = Field(default_factory=list)
    context: str = ""
    follows: str | None = None  # id of the previous turn (in this batch or already stored): a FOLLOWS link


class AsyncMemoryService:
    """The one service API every interface uses. Create with `await AsyncMemoryService.create()`."""

    def __init__(
        self,
        settings: Settings,
        store: Neo4jNoteStore,
        embedder: Embeddings,
        chat_model: BaseChatModel | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self._chat_model = chat_model
        self._llm: LLMCaller | None = None
        self._local_llm: Any = None
        # Retrieval statistics (A-MEM's retrieval_count) are collected per scope and written at most
        # every TOUCH_DELAY seconds: one write per search cost as much CPU as the search itself.
        self._touched: dict[Scope, Counter[str]] = {}
        self._touch_task: asyncio.Task[None] | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    @classmethod
    async def create(
        cls,
        settings: Settings | None = None,
        *,
        chat_model: BaseChatModel | None = None,
        embedder: Embeddings | None = None,
        bootstrap: bool = True,
    ) -> AsyncMemoryService:
        """Connect to Neo4j (clear error if unreachable), bootstrap the schema, wire the embedder."""
        from graphmem.embeddings import embedding_dimensions, make_embedder

        settings = settings or load_settings()
        store = Neo4jNoteStore.from_settings(settings)
        try:
            await store.verify()
            emb = embedder or make_embedder(settings)
            if bootstrap:
                await bootstrap_schema(store, embedding_dimensions(emb))
        except BaseException:
            await store.close()
            raise
        return cls(settings, store, emb, chat_model)

    async def close(self) -> None:
        if self._touch_task is not None:
            self._touch_task.cancel()
        await self.flush()
        await self.store.close()

    async def __aenter__(self) -> AsyncMemoryService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def llm(self) -> LLMCaller:
        """The LLM, created on first use (the local model starts only when a call needs it)."""
        if self._llm is None:
            from graphmem.llm.clients import make_chat_model, structured_method

            model = self._chat_model
            if model is None:
                local = None
                if self.settings.resolved_llm_provider == "local":
                    from graphmem.local.llm_server import LocalLLM

                    local = self._local_llm = LocalLLM(self.settings)
                    local.ensure_running()
                model = make_chat_model(self.settings, local=local)
            self._llm = LLMCaller(
                model,
                method=structured_method(self.settings),
                max_retries=self.settings.llm_max_retries,
                repair_attempts=self.settings.llm_repair_attempts,
            )
        return self._llm

    # --- helpers --------------------------------------------------------------------------------

    async def _embed(self, texts: Sequence[str], usage: Usage | None = None) -> builtins.list[list[float]]:
        if not texts:
            return []
        started = time.perf_counter()
        vectors = await self.embedder.aembed_documents(list(texts))
        if usage is not None:
            usage.embed_seconds += time.perf_counter() - started
        return vectors

    async def _embed_query(self, text: str, usage: Usage | None = None) -> builtins.list[float]:
        started = time.perf_counter()
        vector = await self.embedder.aembed_query(text)
        if usage is not None:
            usage.embed_seconds += time.perf_counter() - started
        return vector

    def _record_retrieval(self, ids: Iterable[str], scope: Scope) -> None:
        self._touched.setdefault(scope, Counter()).update(ids)
        if self._touch_task is None or self._touch_task.done():
            self._touch_task = asyncio.ensure_future(self._flush_later())

    async def _flush_later(self) -> None:
        await asyncio.sleep(TOUCH_DELAY)
        await self.flush()

    async def flush(self) -> None:
        """Write the retrieval statistics collected since the last write (close() does it too)."""
        pending, self._touched = self._touched, {}
        for scope, counts in pending.items():
            try:
                await self.store.touch(counts, scope)
            except Exception as exc:  # access statistics must never fail a read
                log.warning("could not record retrieval of %d notes: %s", len(counts), exc)

    async def _enrich(self, content: str, usage: Usage) -> NoteEnrichment | None:
        try:
            result, _ = await self.llm.structured(NoteEnrichment, enrich_messages(content), usage)
        except LLMError as exc:
            log.warning("note construction failed, storing raw: %s", exc)
            return None
        if result is None or not result.is_usable():
            return None
        return result

    async def _require(self, note_id: str, scope: Scope) -> Note:
        check_id(note_id, "note id")
        note = await self.store.get(note_id, scope)
        if note is None:
            raise NoteNotFoundError(note_id)
        return note

    def _plan_evolution(
        self, note: Note, neighbours: Sequence[Note], decision: EvolutionDecision, rejected: builtins.list[str]
    ) -> tuple[list[Link], list[tuple[Note, dict[str, Any]]]]:
        """Keep only proposals that target shown neighbours with known types (never stored otherwise)."""
        shown = {n.id: n for n in neighbours}
        by_loose = {_loose_id(n.id): n.id for n in neighbours}
        links: dict[str, Link] = {}
        if self.settings.enable_links:
            for p in decision.links:
                target = by_loose.get(_loose_id(p.target_id))
                if target is None:
                    rejected.append(f"link to unknown id {p.target_id[:40]!r}")
                    continue
                if target in links:
                    continue
                links[target] = Link(
                    source_id=note.id,
                    target_id=target,
                    type=LinkType(p.type),
                    reason=p.reason.strip()[:300],
                    strength=p.strength,
                )
        updates: dict[str, tuple[Note, dict[str, Any]]] = {}
        if self.settings.enable_evolution:
            contexts = {n.id: _norm(n.context) for n in [note, *neighbours] if n.context}
            for u in decision.neighbour_updates:
                target = by_loose.get(_loose_id(u.note_id))
                if target is None:
                    rejected.append(f"update of unknown id {u.note_id[:40]!r}")
                    continue
                old = shown[target]
                # Small models often "evolve" a neighbour by pasting another note's context over its own,
                # which erases what the neighbour was about: such an update is refused as a whole.
                if u.context and any(_norm(u.context) == c for nid, c in contexts.items() if nid != target):
                    rejected.append(f"update of {target[:40]!r} copies another note's context")
                    continue
                new = {
                    "context": (u.context or "").strip()[:500] or old.context,
                    "tags": u.tags or old.tags,
                    "keywords": u.keywords or old.keywords,
                }
                if new == {"context": old.context, "tags": old.tags, "keywords": old.keywords}:
                    continue
                updates[target] = (old, new)
        return list(links.values()), list(updates.values())

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
        usage = Usage()
        content = validate_content(content, self.settings.max_content_chars)
        if note_id is not None:
            check_id(note_id, "note id")
        if follows is not None:
            await self._require(follows, scope)  # a missing or other-scope id is the caller's error
        meta = validate_metadata(metadata)
        ev_time, ev_text = parse_event_time(event_time)
        category = validate_label(category, 200, what="category")
        source_id = validate_label(source_id, 500, what="source_id")

        # Idempotent add: the same id (or, on request, the same content) never makes a second note.
        existing_id = note_id
        if existing_id is None and dedupe_content:
            existing_id = await self.store.find_by_content(content, scope)
        if existing_id is not None:
            existing = await self.store.get(existing_id, scope)
            if existing is not None:
                return AddResult(note=existing, created=False, usage=usage)
            if note_id is not None and await self.store.scope_of(note_id) is not None:
                raise ConflictError(f"note id {note_id!r} is already in use")

        note_kwargs: dict[str, Any] = {} if note_id is None else {"id": note_id}
        note = Note(
            **note_kwargs,
            content=content,
            scope=scope,
            event_time=ev_time,
            event_time_text=ev_text,
            category=category,
            source_id=source_id,
            metadata=meta,
        )
        check_note_text(note)
        do_enrich = self.settings.enable_enrichment if enrich is None else enrich
        if do_enrich:
            enrichment = await self._enrich(content, usage)
            if enrichment is None:
                note.enrichment = EnrichmentStatus.PENDING
            else:
                note.keywords, note.context, note.tags = enrichment.keywords, enrichment.context, enrichment.tags
        else:
            note.enrichment = EnrichmentStatus.RAW

        variant = self.settings.embed_text_variant
        (embedding,) = await self._embed([embed_text(note, variant)], usage)

        links: builtins.list[Link] = []
        changes: builtins.list[tuple[Note, dict[str, Any]]] = []
        rejected: builtins.list[str] = []
        do_evolve = (self.settings.enable_links or self.settings.enable_evolution) and (
            evolve if evolve is not None else do_enrich
        )
        if do_evolve and note.enrichment == EnrichmentStatus.DONE and self.settings.neighbour_k > 0:
            links, changes, rejected = await self._decide(note, embedding, usage)

        if follows is not None:
            links = [l for l in links if not (l.target_id == follows and l.type == LinkType.FOLLOWS)]
            links.append(
                Link(source_id=note.id, target_id=follows, type=LinkType.FOLLOWS, reason=FOLLOWS_REASON, strength=1.0)
            )
        updates = await self._neighbour_updates(changes, usage)
        t0 = time.perf_counter()
        created, written, versions = await self.store.add(
            AddWrite(note=note, embedding=embedding, links=links, updates=updates, variant=variant)
        )
        usage.store_seconds += time.perf_counter() - t0
        if not created:  # a concurrent add of the same id won the race: idempotent, nothing written
            existing = await self.store.get(note.id, scope)
            assert existing is not None
            usage.total_seconds = time.perf_counter() - started
            return AddResult(note=existing, created=False, usage=usage)
        evolved = [
            NeighbourChange(
                note_id=old.id,
                before={"context": old.context, "tags": old.tags, "keywords": old.keywords, "version": old.version},
                after={**new, "version": versions[old.id]},
            )
            for old, new in changes
            if old.id in versions
        ]
        usage.total_seconds = time.perf_counter() - started
        return AddResult(note=note, created=True, links=written, evolved=evolved, rejected=rejected, usage=usage)

    async def _decide(
        self, note: Note, embedding: list[float], usage: Usage
    ) -> tuple[list[Link], list[tuple[Note, dict[str, Any]]], list[str]]:
        t0 = time.perf_counter()
        found = await self.store.vector_search(
            embedding,
            note.scope,
            self.settings.neighbour_k,
            exclude_ids=[note.id],
            over_fetch=self.settings.over_fetch_ratio,
        )
        usage.store_seconds += time.perf_counter() - t0
        neighbours = [n for n, _ in found]
        if not neighbours:  # A-MEM asks even with zero neighbours; nothing could come of it
            return [], [], []
        try:
            decision, rejected = await self.llm.structured(EvolutionDecision, evolve_messages(note, neighbours), usage)
        except LLMError as exc:
            log.warning("link/evolution step failed, note stored without links: %s", exc)
            return [], [], [f"evolution skipped: {exc}"]
        if decision is None:
            return [], [], ["evolution output unusable after repair"]
        links, changes = self._plan_evolution(note, neighbours, decision, rejected)
        return links, changes, rejected

    async def _neighbour_updates(
        self, changes: Sequence[tuple[Note, dict[str, Any]]], usage: Usage
    ) -> builtins.list[NeighbourUpdate]:
        """Re-embed every evolved neighbour now (the original left its index stale for 100 evolutions)."""
        if not changes:
            return []
        variant = self.settings.embed_text_variant
        evolved = [old.model_copy(update=new) for old, new in changes]
        vectors = await self._embed([embed_text(n, variant) for n in evolved], usage)
        return [
            NeighbourUpdate(note_id=n.id, context=n.context, tags=n.tags, keywords=n.keywords, embedding=v)
            for n, v in zip(evolved, vectors, strict=True)
        ]

    async def add_many(
        self,
        items: Sequence[NoteInput],
        scope: Scope,
        *,
        batch_size: int = 1000,
        progress: Progress | None = None,
    ) -> builtins.list[str]:
        """Bulk import without LLM calls (raw mode): validate all, embed in batches, write in chunks.

        Returns the ids of the notes (existing ids are kept, not duplicated). Nothing is written when
        any item is invalid.
        """
        notes: builtins.list[Note] = []
        for i, item in enumerate(items):
            try:
                content = validate_content(item.content, self.settings.max_content_chars)
                ev_time, ev_text = parse_event_time(item.event_time)
                kwargs: dict[str, Any] = {} if item.note_id is None else {"id": item.note_id}
                notes.append(
                    Note(
                        **kwargs,
                        content=content,
                        scope=scope,
                        event_time=ev_time,
                        event_time_text=ev_text,
                        category=item.category,
                        source_id=item.source_id,
                        metadata=validate_metadata(item.metadata),
                        keywords=item.keywords,
                        tags=item.tags,
                        context=item.context,
                        enrichment=EnrichmentStatus.RAW,
                    )
                )
                check_note_text(notes[-1])
            except (InvalidInputError, ValidationError, ValueError) as exc:
                raise InvalidInputError(f"item {i}: {exc}") from None
        pairs = await self._follows_pairs(items, notes, scope)
        variant = self.settings.embed_text_variant
        chunks = [notes[start : start + batch_size] for start in range(0, len(notes), batch_size)]
        done = 0
        # Embed chunk i+1 (a worker thread; onnxruntime releases the GIL) while chunk i is written:
        # the two overlap instead of taking turns.
        next_vectors = (
            asyncio.ensure_future(self._embed([embed_text(n, variant) for n in chunks[0]])) if chunks else None
        )
        try:
            for i, chunk in enumerate(chunks):
                assert next_vectors is not None
                vectors = await next_vectors
                next_vectors = (
                    asyncio.ensure_future(self._embed([embed_text(n, variant) for n in chunks[i + 1]]))
                    if i + 1 < len(chunks)
                    else None
                )
                await self.store.add_many(chunk, vectors, variant)
                done += len(chunk)
                if progress is not None:
                    progress(done, len(notes))
        finally:
            if next_vectors is not None and not next_vectors.done():
                next_vectors.cancel()
        if pairs:  # after all notes, so a turn may follow one later in the batch; MERGE: a rerun repairs
            await self.store.add_follows(pairs, scope)
        return [n.id for n in notes]

    async def _follows_pairs(
        self, items: Sequence[NoteInput], notes: Sequence[Note], scope: Scope
    ) -> builtins.list[tuple[str, str]]:
        """(note, previous turn) pairs of a bulk import; every previous turn must be in the batch or the scope."""
        in_batch = {n.id for n in notes}
        pairs: builtins.list[tuple[str, str]] = []
        for i, (item, note) in enumerate(zip(items, notes, strict=True)):
            if item.follows is None:
                continue
            try:
                check_id(item.follows, "follows")
            except InvalidInputError as exc:
                raise InvalidInputError(f"item {i}: {exc}") from None
            if item.follows == note.id:
                raise InvalidInputError(f"item {i}: a note cannot follow itself")
            pairs.append((note.id, item.follows))
        for target in sorted({t for _, t in pairs} - in_batch):
            if await self.store.get(target, scope) is None:
                raise NoteNotFoundError(target)
        return pairs

    async def update(self, note_id: str, scope: Scope, content: str) -> AddResult:
        """New content: re-enrich, re-embed, keep the previous values as a version."""
        usage = Usage()
        started = time.perf_counter()
        old = await self._require(note_id, scope)
        content = validate_content(content, self.settings.max_content_chars)
        note = old.model_copy(update={"content": content})
        if self.settings.enable_enrichment:
            enrichment = await self._enrich(content, usage)
            if enrichment is None:
                note.enrichment = EnrichmentStatus.PENDING
            else:
                note.keywords, note.context, note.tags = enrichment.keywords, enrichment.context, enrichment.tags
                note.enrichment = EnrichmentStatus.DONE
        (embedding,) = await self._embed([embed_text(note, self.settings.embed_text_variant)], usage)
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
        return AddResult(note=note, created=False, usage=usage)

    async def repair(self, scope: Scope, *, limit: int = 100) -> int:
        """Re-run note construction (and linking) for notes stored raw after an LLM failure."""
        repaired = 0
        for note_id in await self.store.pending(scope, limit):
            usage = Usage()
            note = await self.store.get(note_id, scope)
            if note is None:
                continue
            enrichment = await self._enrich(note.content, usage)
            if enrichment is None:
                continue
            note.keywords, note.context, note.tags = enrichment.keywords, enrichment.context, enrichment.tags
            note.enrichment = EnrichmentStatus.DONE
            (embedding,) = await self._embed([embed_text(note, self.settings.embed_text_variant)], usage)
            await self.store.revise(
                note_id,
                scope,
                content=note.content,
                context=note.context,
                tags=note.tags,
                keywords=note.keywords,
                enrichment=EnrichmentStatus.DONE,
                embedding=embedding,
                changed_by="repair",
            )
            links, _, _ = await self._decide(note, embedding, usage)
            if links:
                await self.store.create_links(note.id, scope, links, caused_by=note.id)
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
        reason = reason.strip()[:300]
        if reason:
            reason = validate_content(reason, 300, what="link reason")
        try:
            link = Link(source_id=source_id, target_id=target_id, type=link_type, reason=reason, strength=strength)
        except ValidationError as exc:
            raise InvalidInputError(exc.errors()[0]["msg"]) from None
        written = await self.store.create_links(source_id, scope, [link], caused_by=source_id)
        if not written:
            raise NoteNotFoundError(target_id)
        return written[0]

    async def import_notes(self, records: Iterable[dict[str, Any]], scope: Scope) -> int:
        """Import records made by export_notes (into this scope); embeddings are reused when present."""
        from graphmem.service.transfer import import_records

        return await import_records(self, list(records), scope)

    # --- reads ----------------------------------------------------------------------------------

    async def get(self, note_id: str, scope: Scope) -> Note:
        return await self._require(note_id, scope)

    async def list(self, scope: Scope, *, limit: int = 50, offset: int = 0) -> builtins.list[Note]:
        if not 1 <= limit <= 1000 or offset < 0:
            raise InvalidInputError("limit must be 1..1000 and offset >= 0")
        return await self.store.list_notes(scope, limit=limit, offset=offset)

    async def count(self, scope: Scope) -> int:
        return await self.store.count(scope)

    async def links(self, note_id: str, scope: Scope) -> builtins.list[Link]:
        await self._require(note_id, scope)
        return await self.store.links(note_id, scope)

    async def history(self, note_id: str, scope: Scope) -> builtins.list[NoteVersion]:
        await self._require(note_id, scope)
        return await self.store.history(note_id, scope)

    async def scopes(self, user_id: str | None = None) -> builtins.list[Scope]:
        if user_id is not None:
            check_id(user_id, "user_id")
        return await self.store.scopes(user_id)

    async def export_notes(self, scope: Scope) -> builtins.list[dict[str, Any]]:
        from graphmem.service.transfer import export_records

        return await export_records(self, scope)

    async def health(self) -> dict[str, Any]:
        server = await self.store.verify()
        return {"status": "ok", "neo4j": server, "notes": await self.store.note_count()}

    async def search(
        self,
        query: str,
        scope: Scope,
        *,
        k: int | None = None,
        mode: SearchMode | None = None,
        filters: SearchFilters | None = None,
        usage: Usage | None = None,
        query_embedding: Sequence[float] | None = None,
    ) -> builtins.list[SearchHit]:
        """Top-k notes of the scope for a query; each hit says how it was found.

        mode: "vector" (HNSW), "links" (vector + one hop along typed links),
        "hybrid" (vector fused with full-text by reciprocal rank, + links; the default).
        """
        k = self.settings.search_k if k is None else k
        if not 1 <= k <= 1000:
            raise InvalidInputError("k must be between 1 and 1000")
        mode = mode or self.settings.search_mode
        if mode not in ("vector", "links", "hybrid"):
            raise InvalidInputError(f"unknown search mode {mode!r}; one of vector, links, hybrid")
        query = validate_content(query, self.settings.max_content_chars, what="query")
        if filters is not None:
            filters = _checked_filters(filters)
        usage = usage or Usage()
        vec = list(query_embedding) if query_embedding is not None else await self._embed_query(query, usage)
        t0 = time.perf_counter()
        over_fetch = self.settings.over_fetch_ratio
        per_hit = self.settings.links_per_hit
        if mode == "links" and per_hit > 0:  # one round trip: the hop runs inside the vector query
            found, linked = await self.store.vector_search_linked(
                vec, scope, k, per_hit, filters=filters, over_fetch=over_fetch
            )
            hits = _attach_links([SearchHit(note=n, score=s, found_by=["vector"]) for n, s in found], linked)
            usage.store_seconds += time.perf_counter() - t0
            if hits:
                self._record_retrieval((h.note.id for h in hits), scope)
            return hits
        vector_search = self.store.vector_search(vec, scope, k, filters=filters, over_fetch=over_fetch)
        if mode == "hybrid":  # both queries at once: Neo4j serves them on two threads
            vector_hits, text_hits = await asyncio.gather(
                vector_search, self.store.fulltext_search(query, scope, k, filters=filters)
            )
            hits = _rrf(
                [SearchHit(note=n, score=s, found_by=["vector"]) for n, s in vector_hits],
                [SearchHit(note=n, score=s, found_by=["fulltext"]) for n, s in text_hits],
                k,
            )
        else:
            hits = [SearchHit(note=n, score=s, found_by=["vector"]) for n, s in await vector_search]
        if mode in ("links", "hybrid") and self.settings.links_per_hit > 0:
            hits = await self._expand(hits, scope)
        usage.store_seconds += time.perf_counter() - t0
        if hits:
            self._record_retrieval((h.note.id for h in hits), scope)
        return hits

    async def _expand(self, hits: builtins.list[SearchHit], scope: Scope) -> builtins.list[SearchHit]:
        """A-MEM's link expansion: each hit is followed by its linked notes (bounded, deduplicated)."""
        ids = [h.note.id for h in hits]
        linked = await self.store.expand_links(ids, scope, self.settings.links_per_hit, exclude_ids=ids)
        return _attach_links(hits, linked)

    async def ask(
        self,
        question: str,
        scope: Scope,
        *,
        k: int | None = None,
        mode: SearchMode | None = None,
        token_budget: int | None = None,
        filters: SearchFilters | None = None,
        instructions: str | None = None,
    ) -> AskResult:
        """Answer from a few relevant notes and their links, within a token budget.

        ``instructions`` are appended to the question in the answer prompt only (not to the search
        query): the LoCoMo evaluation's per-category answer rules use it.
        """
        started = time.perf_counter()
        usage = Usage()
        hits = await self.search(question, scope, k=k, mode=mode, filters=filters, usage=usage)
        ctx = build_context([h.note for h in hits], token_budget or self.settings.context_token_budget)
        used = [hits[i] for i in ctx.used]
        answer = await self.llm.text(answer_messages(question, ctx.text or "(no notes)", instructions), usage)
        usage.total_seconds = time.perf_counter() - started
        return AskResult(question=question, answer=answer.strip(), notes=used, context_tokens=ctx.tokens, usage=usage)


def _loose_id(text: str) -> str:
    """An id as a small model may echo it: quoted, in another case, or with the prompt's "id:" label.
    Only exact matches of a shown id survive this, so nothing unshown can be reached."""
    text = text.strip().strip("\"'`[]<>").strip().lower()
    return text[3:].strip() if text.startswith("id:") else text


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _checked_filters(filters: SearchFilters) -> SearchFilters:
    """Filter values are user text too: refuse what the driver cannot encode (a copy; the caller's stays)."""
    tags = filters.tags_any
    if tags is not None:
        if not isinstance(tags, (list, tuple)):
            raise InvalidInputError("tags filter must be a list of text")
        tags = [validate_content(t, 200, what="tag filter") for t in tags]
    return dataclasses.replace(
        filters, tags_any=tags, category=validate_label(filters.category, 200, what="category filter")
    )


def _attach_links(hits: builtins.list[SearchHit], linked: Sequence[LinkedNote]) -> builtins.list[SearchHit]:
    """Each hit followed by its linked notes: deduplicated, scored as parent score x link strength."""
    by_parent: dict[str, list[SearchHit]] = {}
    seen: dict[str, SearchHit] = {}
    parent_score = {h.note.id: h.score for h in hits}
    for ln in linked:
        if ln.note.id in seen:
            seen[ln.note.id].linked_via.append(ln.via)
            continue
        hit = SearchHit(
            note=ln.note,
            score=parent_score[ln.from_id] * ln.via.strength,
            found_by=["link"],
            linked_via=[ln.via],
        )
        seen[ln.note.id] = hit
        by_parent.setdefault(ln.from_id, []).append(hit)
    out: builtins.list[SearchHit] = []
    for h in hits:
        out.append(h)
        out.extend(by_parent.get(h.note.id, []))
    return out


def _rrf(a: builtins.list[SearchHit], b: builtins.list[SearchHit], k: int) -> builtins.list[SearchHit]:
    """Reciprocal rank fusion: scores of different scales are fused by rank, not by value."""
    fused: dict[str, SearchHit] = {}
    scores: dict[str, float] = {}
    for ranked in (a, b):
        for rank, hit in enumerate(ranked):
            nid = hit.note.id
            scores[nid] = scores.get(nid, 0.0) + 1.0 / (_RRF_K + rank + 1)
            if nid in fused:
                fused[nid].found_by = sorted(set(fused[nid].found_by) | set(hit.found_by))
            else:
                fused[nid] = hit.model_copy()
    ordered = sorted(fused.values(), key=lambda h: scores[h.note.id], reverse=True)[:k]
    for h in ordered:
        h.score = scores[h.note.id]
    return ordered
