"""The add's steps as one object: construct, candidates, decide, re-embed, write.

``AddSteps`` is built once per service (``AsyncMemoryService.__init__``) from what the steps need
and nothing more: the note store port, the embedder, the chat model that enriches notes, and the
link decider (``service/linking/``). ``add``, ``update``, ``repair`` and the agentic ingest all go
through it, the way graphiti's bulk functions take a bundle of clients, never the facade:

    construct_note -> neighbours -> decide_links -> (embed_updates) -> write_note / write_notes

Each step is callable on its own (``svc.steps``); nothing is stored before ``write_note``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_core.embeddings import Embeddings

from graphmem.config import Settings
from graphmem.errors import NoteNotFoundError
from graphmem.models import (
    AddOutcome,
    AddResult,
    AddWrite,
    ConstructedNote,
    EnrichmentStatus,
    EvolutionPlan,
    NeighbourUpdate,
    Note,
    Scope,
    Usage,
    new_note_id,
)
from graphmem.ports import NoteStore
from graphmem.service import construct
from graphmem.service.grounding import said
from graphmem.service.linking import LinkDecider, LLMSource
from graphmem.service.linking.plan import (
    evolved_notes,
    lend_words,
    neighbour_changes,
    screen_evolutions,
    with_follows,
)
from graphmem.service.retrieve import COMMON_SHARE
from graphmem.service.text import cosine, embed_text

# One note's write for ``write_notes``: the constructed note, its plan, its FOLLOWS target (or None),
# its neighbours' vectors computed ahead (or None).
GroupWrite = tuple[ConstructedNote, EvolutionPlan, str | None, Mapping[str, Sequence[float]] | None]


class AddSteps:
    """The steps of an add, over the store port, the embedder, the enrichment model and a decider.

    Args:
        settings: the knobs the steps read (enrichment, neighbour_k, over-fetch, embed text).
        store: the note store (``ports.NoteStore``).
        embedder: a LangChain ``Embeddings``.
        enrich_llm: the chat model that enriches notes, asked for when needed.
        decider: how links and evolutions are decided (``linking.decider_for(settings, llm)``).
    """

    def __init__(
        self,
        settings: Settings,
        store: NoteStore,
        embedder: Embeddings,
        enrich_llm: LLMSource,
        decider: LinkDecider,
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.enrich_llm = enrich_llm
        self.decider = decider

    # --- embedding ------------------------------------------------------------------------------

    async def embed(self, texts: Sequence[str], usage: Usage | None = None) -> list[list[float]]:
        if not texts:
            return []
        started = time.perf_counter()
        vectors = await self.embedder.aembed_documents(list(texts))
        if usage is not None:
            usage.embed_seconds += time.perf_counter() - started
        return vectors

    def embed_text(self, note: Note) -> str:
        return embed_text(note, self.settings.embed_text_variant)

    # --- step 1: construct ------------------------------------------------------------------------

    def new_note(
        self,
        content: Any,
        scope: Scope,
        note_id: str | None = None,
        event_time: datetime | str | None = None,
        category: str | None = None,
        source_id: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Note:
        """A validated note from the caller's input (no LLM, nothing stored)."""
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

    async def content_id(self, content: str, scope: Scope) -> str:
        """The id a dedupe_content add takes: derived from the content, so concurrent adds agree. An
        earlier note with this id whose content was changed since (update) moves it to the next one."""
        base = "c-" + hashlib.sha256(content.encode("utf-8")).hexdigest()[:40]
        for n in range(1, 100):
            candidate = base if n == 1 else f"{base}-{n}"
            taken = await self.store.get(candidate, scope)
            if taken is None or taken.content == content:
                return candidate
        return new_note_id()  # 99 rewrites of one content: give up on agreeing, never on storing

    async def enrich(self, note: Note, usage: Usage, rejected: list[str] | None = None) -> bool:
        """The LLM's keywords, context and tags applied to ``note`` (PENDING when the LLM failed);
        whether they were applied."""
        enrichment = await construct.enrich(
            await self.enrich_llm(), note.content, usage, rejected, grounded=self.settings.ground_enrichment
        )
        return construct.apply_enrichment(note, enrichment)

    async def construct(self, note: Note, enrich: bool) -> ConstructedNote:
        """``note`` enriched (or marked RAW when ``enrich`` is off) and embedded. Nothing is stored."""
        usage, rejected = Usage(), list[str]()
        if enrich:
            await self.enrich(note, usage, rejected)
        else:
            note.enrichment = EnrichmentStatus.RAW
        (embedding,) = await self.embed([self.embed_text(note)], usage)
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
        note = self.new_note(content, scope, note_id, event_time, category, source_id, metadata)
        return await self.construct(note, self.settings.enable_enrichment if enrich is None else enrich)

    # --- step 2: candidates and the decision ------------------------------------------------------

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
    ) -> list[Note]:
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
        nearest = [n for n, _ in found]
        if in_flight:
            scored = {n.id: (score, n) for n, score in found}
            for other in in_flight:
                if other.note.id not in scored and other.note.id not in skip and other.note.scope == note.scope:
                    scored[other.note.id] = (cosine(built.embedding, other.embedding), other.note)
            ranked = sorted(scored.values(), key=lambda x: (-x[0], x[1].id))
            nearest = [n for _, n in ranked[: s.neighbour_k]]
        words = await self.word_neighbours(built, skip | {n.id for n in nearest[: s.link_candidates]})
        # the nearest first, then the notes the words find, then the rest of the nearest: the pairwise
        # decider judges the first link_candidates + link_word_candidates of this order
        head, tail = nearest[: s.link_candidates], nearest[s.link_candidates :]
        found_ids = {n.id for n in words}
        return [*head, *words, *(n for n in tail if n.id not in found_ids)]

    async def word_neighbours(self, built: ConstructedNote, skip: set[str]) -> list[Note]:
        """Earlier notes of the scope that share the new note's rarer words (full-text, words common in
        the scope such as the speakers' names left out): the previous mention of the same person,
        place or thing, which the embedding's nearest notes often miss (``link_word_candidates``)."""
        k = self.settings.link_word_candidates
        if k <= 0:
            return []
        note = built.note
        t0 = time.perf_counter()
        hits = await self.store.fulltext_search(
            said(note.content), note.scope, k + len(skip), common_share=COMMON_SHARE
        )
        built.usage.store_seconds += time.perf_counter() - t0
        return [h.note for h in hits if h.note.id not in skip][:k]

    async def decide_links(self, built: ConstructedNote, *, neighbours: Sequence[Note] | None = None) -> EvolutionPlan:
        """Step 2 of an add: the note's nearest neighbours in its scope (or the given candidates,
        see ``neighbours``), the decider's proposals for links and neighbour updates, and the plan
        the service accepts from them (evolved contexts screened). Nothing is stored; the time and
        tokens go to ``built.usage``."""
        if not self.links_enabled:
            return EvolutionPlan()
        usage, note = built.usage, built.note
        if neighbours is None:
            neighbours = await self.neighbours(built)
        if not neighbours:  # A-MEM asks even with zero neighbours; nothing could come of it
            return EvolutionPlan()
        plan = await self.decider.decide(note, neighbours, usage)
        plan = await screen_evolutions(plan, note, neighbours, lambda texts: self.embed(texts, usage))
        return lend_words(plan, note, neighbours) if self.settings.evolution_words else plan

    async def embed_updates(self, plan: EvolutionPlan, usage: Usage | None = None) -> dict[str, list[float]]:
        """The vectors of a plan's evolved neighbours, by the text they embed: ``write_note(...,
        embedded=...)`` then skips the embedding (a concurrent ingest computes them before its turn
        to write comes)."""
        if not self.settings.evolution_reembed:
            return {}
        texts = [self.embed_text(n) for n in evolved_notes(plan)]
        return dict(zip(texts, await self.embed(texts, usage), strict=True))

    # --- the steps of update and repair ----------------------------------------------------------

    async def rewrite(self, note: Note, usage: Usage, rejected: list[str], *, enrich: bool) -> int | None:
        """``update``'s step: ``note`` (with its new content) re-enriched (when ``enrich``) and
        re-embedded, written as a new version (``changed_by`` "update"); the version, or None when
        the note is gone."""
        if enrich:
            await self.enrich(note, usage, rejected)
        (embedding,) = await self.embed([self.embed_text(note)], usage)
        return await self.store.revise(
            note.id,
            note.scope,
            content=note.content,
            context=note.context,
            tags=note.tags,
            keywords=note.keywords,
            enrichment=note.enrichment,
            embedding=embedding,
            changed_by="update",
        )

    async def repair(self, note: Note) -> bool:
        """``repair``'s step: a note stored raw after an LLM failure enriched again, re-embedded and
        written as a new version (``changed_by`` "repair"), then its links decided and written (no
        evolution: its neighbours moved on since). Whether the enrichment succeeded this time."""
        built = ConstructedNote(note=note, embedding=[])
        if not await self.enrich(note, built.usage):
            return False
        (built.embedding,) = await self.embed([self.embed_text(note)], built.usage)
        await self.store.revise(
            note.id,
            note.scope,
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
            await self.store.create_links(note.id, note.scope, plan.links, caused_by=note.id)
        return True

    # --- step 3: the write ----------------------------------------------------------------------

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

    async def write_notes(self, writes: Sequence[GroupWrite]) -> list[AddResult]:
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
        plan = with_follows(plan, note.id, follows)
        evolved = evolved_notes(plan)
        vectors: list[list[float] | None] = [None] * len(evolved)  # None: the neighbour keeps its vector
        if self.settings.evolution_reembed:
            texts = [self.embed_text(n) for n in evolved]
            ready = embedded or {}
            missing = [t for t in texts if t not in ready]
            fresh = dict(zip(missing, await self.embed(missing, usage), strict=True))
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
            evolved=neighbour_changes(plan, outcome.versions),
            rejected=[*built.rejected, *plan.rejected],
            candidates=plan.candidates,
            usage=usage,
        )
