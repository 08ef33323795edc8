"""Agentic bulk ingest: many A-MEM adds at once, in A-MEM's order within each scope.

A-MEM adds one note at a time: two LLM calls (construction, then link/evolution), and each note
waits for the one before it. Here up to ``concurrency`` notes are in flight at once, over all scopes
(a note holds its place from construction to its write). Per note ``i`` of a scope:

1. construct (LLM enrichment + embedding): concurrent, in any order;
2. decide links and evolution (``AddSteps.decide_links``) once every earlier note of the
   scope is constructed. The candidates are A-MEM's: the nearest of every earlier note of the scope,
   stored or still in flight (their enrichment and embedding are known before they are written),
   never a later one. Concurrent;
3. write, in input order: note ``i`` is written once every earlier note of its scope was written
   or failed, with its links and evolutions, as ``add`` writes; the consecutive later notes whose
   plans are ready go into the same statement and transaction (``_write_group``), in order.

Scopes are independent: their notes interleave freely.

Two in-flight notes that evolve the same neighbour. Both decisions saw the neighbour as it was; they
are applied in order. When the later note is written, its planned update is re-checked against the
neighbour's stored state (``rebase``): if the earlier note (or anyone) evolved it meanwhile, the
update is applied on top of that result (in a group write, on the state this ingest left it in,
which the statement checks against the stored version; a mismatch rolls the group back and its
notes are written one by one against the stored state): a field the later note did not change keeps the current
value; tags and keywords get the later note's additions and removals; a context both changed takes
the later note's, as sequential A-MEM's later evolution would; an update left with nothing to
change is dropped (reported in ``rejected``). Every evolution keeps the values it replaced as a
NoteVersion, so no version is lost: the history holds the original, the earlier note's result, and
the current values.

Resumable: every item has a stable id (its ``note_id``; else derived from the scope and its
``source_id``, or from its content and how often that content came before in the batch), and items
whose id is already stored in the scope are skipped (status ``existing``): an interrupted ingest,
run again, continues without duplicates. An item is acknowledged (``on_item``, status ``added``)
only after its transaction committed. An error fails its item, not the batch; when Neo4j is
unreachable no further items are started and the rest are reported ``skipped``. FOLLOWS links to
earlier items are written with the note; pairs whose target comes later in the batch, and those of
items a previous run stored, are written (MERGE) at the end.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from graphmem.errors import (
    GraphmemError,
    InvalidInputError,
    LocalServiceError,
    StaleWriteError,
    StoreUnavailableError,
)
from graphmem.models import (
    AddResult,
    ConstructedNote,
    EnrichmentStatus,
    EvolutionPlan,
    IngestItem,
    IngestReport,
    IngestStatus,
    NeighbourEvolution,
    Note,
    NoteInput,
    Scope,
    Usage,
    check_id,
)
from graphmem.service.add_steps import AddSteps, GroupWrite

log = logging.getLogger(__name__)

OnItem = Callable[[IngestItem], None]
_LOOKUP_CHUNK = 5000
_GROUP_MAX = 32  # notes per write statement: bounds a statement's size and a failed group's redo


def derive_id(scope: Scope, item: NoteInput, occurrence: int) -> str | None:
    """The item's note id: given, or derived from the scope and the source id, or from the content
    and its ``occurrence`` (how many equal contents came before in the batch). None for content that
    is no text (the item then fails validation)."""
    if item.note_id is not None:
        return item.note_id
    if item.source_id is not None:
        key = f"source\x1f{scope}\x1f{item.source_id}"
    elif isinstance(item.content, str):
        key = f"content\x1f{scope}\x1f{occurrence}\x1f{item.content.strip()}"
    else:
        return None
    return "in-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _merge_words(base: Sequence[str], mine: Sequence[str], current: Sequence[str]) -> list[str]:
    """Three-way merge of a word list: ``mine`` changed ``base``; apply its additions and removals to
    ``current`` (case-insensitively, keeping current's order)."""
    low_base, low_mine = {w.lower() for w in base}, {w.lower() for w in mine}
    if low_base == low_mine:
        return list(current)
    removed = low_base - low_mine
    out: list[str] = []
    seen: set[str] = set()
    for w in [*current, *(w for w in mine if w.lower() not in low_base)]:
        if w.lower() not in removed and w.lower() not in seen:
            out.append(w)
            seen.add(w.lower())
    return out


def rebase(update: NeighbourEvolution, current: Note) -> NeighbourEvolution | None:
    """A planned evolution, decided on ``update.before``, applied on top of the neighbour's current
    state (an earlier note evolved it meanwhile); None when nothing is left to change."""
    base = update.before
    context = update.context if update.context != base.context else current.context
    tags = _merge_words(base.tags, update.tags, current.tags)
    keywords = _merge_words(base.keywords, update.keywords, current.keywords)
    if (context, tags, keywords) == (current.context, current.tags, current.keywords):
        return None
    return NeighbourEvolution(before=current, context=context, tags=tags, keywords=keywords)


def _same_state(a: Note, b: Note) -> bool:
    return (a.version, a.context, a.tags, a.keywords) == (b.version, b.context, b.tags, b.keywords)


def _evolved(u: NeighbourEvolution, version: int) -> Note:
    """The neighbour as an evolution leaves it."""
    return u.before.model_copy(update={**u.after(), "version": version})


@dataclass
class _Ready:
    """A note whose plan is ready, waiting for its turn to write; ``done`` gets (result, rebased,
    notes in its write statement) once its transaction committed."""

    index: int
    built: ConstructedNote
    plan: EvolutionPlan
    embedded: dict[str, list[float]]
    done: asyncio.Future[tuple[AddResult, int, int]]

    def fail(self, exc: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exc)


@dataclass
class _Frontier:
    """Indices of one scope's batch settled in order: ``upto`` is the first not yet settled."""

    upto: int = 0
    settled: set[int] = field(default_factory=set)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def settle(self, index: int) -> None:
        if index < self.upto or index in self.settled:  # settled already
            return
        self.settled.add(index)
        if index != self.upto:
            return
        while self.upto in self.settled:
            self.settled.discard(self.upto)
            self.upto += 1
        async with self.changed:
            self.changed.notify_all()

    async def reach(self, index: int) -> None:
        """Wait until every index before ``index`` is settled."""
        async with self.changed:
            await self.changed.wait_for(lambda: self.upto >= index)


class _Batch:
    """What the scopes of one ingest share: the places in flight, the settings, the stop flag.

    Places are shared fairly: while several scopes have items to start, none holds more than its
    share (``concurrency`` over those scopes, at least one), so every scope moves at once instead
    of the first taking every place."""

    def __init__(self, steps: AddSteps, concurrency: int, enrich: bool | None, on_item: OnItem | None) -> None:
        self.steps = steps
        self.capacity = concurrency
        self.in_use = 0
        self.holding: dict[int, int] = {}  # places per scope run
        self.admitting: set[int] = set()  # scope runs with items still to start
        self.changed = asyncio.Condition()
        self.enrich = steps.settings.enable_enrichment if enrich is None else enrich
        self.on_item = on_item
        self.stopped: str | None = None  # why no further items start

    def _share(self) -> int:
        return max(1, -(-self.capacity // max(1, len(self.admitting))))

    async def acquire(self, run: int) -> None:
        async with self.changed:
            await self.changed.wait_for(lambda: self.in_use < self.capacity and self.holding[run] < self._share())
            self.in_use += 1
            self.holding[run] += 1

    async def release(self, run: int) -> None:
        async with self.changed:
            self.in_use -= 1
            self.holding[run] -= 1
            self.changed.notify_all()

    async def joined(self, run: int) -> None:
        async with self.changed:
            self.holding[run] = 0
            self.admitting.add(run)
            self.changed.notify_all()

    async def admitted_all(self, run: int) -> None:
        async with self.changed:
            self.admitting.discard(run)
            self.changed.notify_all()

    def report(self, item: IngestItem) -> None:
        if self.on_item is not None:
            try:
                self.on_item(item)
            except Exception:  # a progress display must not fail the ingest
                log.exception("ingest progress callback failed")


class _ScopeRun:
    """One scope's items: construct concurrently, decide after every earlier note is constructed,
    write in order."""

    def __init__(self, batch: _Batch, number: int, scope: Scope, items: Sequence[NoteInput]) -> None:
        self.batch, self.steps, self.scope, self.items = batch, batch.steps, scope, list(items)
        self.store = batch.steps.store
        self.number = number
        self.results: list[IngestItem | None] = [None] * len(self.items)
        seen: dict[str, int] = {}
        self.ids: list[str | None] = []
        for item in self.items:
            text = item.content.strip() if isinstance(item.content, str) else ""
            self.ids.append(derive_id(scope, item, seen.get(text, 0)))
            seen[text] = seen.get(text, 0) + 1
        self.position = {nid: i for i, nid in reversed(list(enumerate(self.ids))) if nid is not None}
        self.constructed, self.written = _Frontier(), _Frontier()
        self.in_flight: dict[int, ConstructedNote] = {}  # constructed, not written yet: candidates
        self.stored_before: set[str] = set()  # ids of the batch a previous run stored
        self.stored_positions: list[int] = []  # their positions, sorted
        self.outside: set[str] = set()  # FOLLOWS targets outside the batch, stored in the scope
        self.warnings: list[str] = []
        self.ready: dict[int, _Ready] = {}  # plans ready, waiting for their turn to write
        self.committed: set[int] = set()  # written by this run (before their items are reported)
        self.known: dict[str, Note] = {}  # neighbours this run evolved, as it left them

    # --- the run ------------------------------------------------------------------------------

    async def run(self) -> list[IngestItem]:
        await self.batch.joined(self.number)
        tasks: set[asyncio.Task[None]] = set()
        try:
            todo = await self._prepare()
            for i in todo:
                if self.batch.stopped is None:
                    await self.batch.acquire(self.number)
                    if self.batch.stopped is None:
                        task = asyncio.create_task(self._one(i))
                        tasks.add(task)
                        task.add_done_callback(tasks.discard)
                        continue
                    await self.batch.release(self.number)  # it stopped while this one waited for a place
                self._finish(i, self._item(i, IngestStatus.SKIPPED, error=f"not attempted: {self.batch.stopped}"))
                await self._settle(i)
            await self.batch.admitted_all(self.number)
            while tasks:
                await asyncio.gather(*list(tasks))
        except BaseException:
            for t in tasks:
                t.cancel()
            raise
        await self._write_deferred_follows()
        return [r for r in self.results if r is not None]

    async def _prepare(self) -> list[int]:
        """Mark invalid, repeated and already stored items; the indices left to add, in order."""
        for start in range(0, len(self.position), _LOOKUP_CHUNK):
            chunk = list(self.position)[start : start + _LOOKUP_CHUNK]
            self.stored_before |= await self.store.existing_ids(chunk, self.scope)
        self.stored_positions = sorted(self.position[nid] for nid in self.stored_before)
        targets = {x.follows for x in self.items if x.follows is not None and x.follows not in self.position}
        valid_targets = sorted(t for t in targets if _valid_id(t))
        for start in range(0, len(valid_targets), _LOOKUP_CHUNK):
            self.outside |= await self.store.existing_ids(valid_targets[start : start + _LOOKUP_CHUNK], self.scope)
        todo: list[int] = []
        for i, nid in enumerate(self.ids):
            error = self._precheck(i, nid)
            if error is not None:
                self._finish(i, self._item(i, IngestStatus.FAILED, error=error))
            elif nid in self.stored_before:
                self._finish(i, self._item(i, IngestStatus.EXISTING))
            else:
                todo.append(i)
                continue
            await self._settle(i)
        return todo

    def _precheck(self, i: int, nid: str | None) -> str | None:
        """Why item ``i`` cannot be added, before any LLM call; None when it can."""
        item = self.items[i]
        if nid is None:
            return f"content must be text, got {type(item.content).__name__}"
        try:
            check_id(nid, "note id")
        except InvalidInputError as exc:
            return str(exc)
        if self.position[nid] != i:
            return f"note id {nid!r} repeats item {self.position[nid]}"
        if item.follows is not None:
            if not _valid_id(item.follows):
                return f"follows: not a note id: {item.follows!r:.60}"
            if item.follows == nid:
                return "a note cannot follow itself"
            if item.follows not in self.position and item.follows not in self.outside:
                return f"follows: no note with id {item.follows!r} in this scope"
        return None

    async def _one(self, i: int) -> None:
        try:
            try:
                result = await self._add(i)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.batch.stopped is None and isinstance(exc, StoreUnavailableError | LocalServiceError):
                    # every later item would fail the same way: stop, name the cause once
                    what = (
                        "the store is unavailable"
                        if isinstance(exc, StoreUnavailableError)
                        else "a local service failed"
                    )
                    self.batch.stopped = f"{what} ({exc})"[:300]
                if not isinstance(exc, GraphmemError):
                    log.exception("ingest item %d failed unexpectedly", i)
                result = self._item(i, IngestStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:500])
            self._finish(i, result)  # before the later notes move on: they read it (FOLLOWS)
        finally:
            await self._settle(i)
            await self.batch.release(self.number)

    async def _add(self, i: int) -> IngestItem:
        started = time.perf_counter()
        item, nid = self.items[i], self.ids[i]
        built = await self.steps.construct_note(
            item.content,
            self.scope,
            note_id=nid,
            event_time=item.event_time,
            category=item.category,
            source_id=item.source_id,
            metadata=item.metadata,
            enrich=self.batch.enrich,
        )
        self.in_flight[i] = built  # a candidate for the later notes from now on
        await self.constructed.settle(i)
        plan, candidates, settled = EvolutionPlan(), [], None
        if self.batch.enrich and built.note.enrichment == EnrichmentStatus.DONE and self.steps.links_enabled:
            await self.constructed.reach(i)  # every earlier note is constructed (or failed)
            # in flight or stored: a note leaves in_flight only once its write committed
            settled = self.written.upto
            earlier = [b for j, b in self.in_flight.items() if j < i]
            neighbours = await self.steps.neighbours(built, in_flight=earlier, exclude_ids=self._stored_after(i))
            candidates = [n.id for n in neighbours]
            plan = await self.steps.decide_links(built, neighbours=neighbours)
        # embedded now, while waiting for the turn to write; a rebased neighbour is embedded again
        embedded = await self.steps.embed_updates(plan, built.usage) if plan.updates else {}
        ready = _Ready(i, built, plan, embedded, asyncio.get_running_loop().create_future())
        self.ready[i] = ready
        try:
            await self.written.reach(i)  # every earlier note is written (or failed): A-MEM's order
            if not ready.done.done():  # no earlier note's group took this one: lead a group
                await self._write_group(ready)
            result, rebased, together = await ready.done
        finally:
            self.ready.pop(i, None)
        result.usage.total_seconds = time.perf_counter() - started
        done = self._from_result(i, result, candidates, rebased)
        done.settled_before, done.written_with = settled, together
        return done

    # --- the ordered write step -------------------------------------------------------------------

    async def _write_group(self, first: _Ready) -> None:
        """Write ``first`` (whose turn it is) and the consecutive later notes whose plans are ready
        too, in order, in one statement and transaction (``write_notes``); their futures get the
        results only after the commit. When the group write fails, each note is written alone, in
        order, its evolutions re-checked against the stored neighbours (``_write_alone``): one bad
        note fails alone, and an evolution by someone outside the ingest is rebased, not lost."""
        group = [first]
        j = first.index + 1
        while len(group) < _GROUP_MAX:
            nxt = self.ready.get(j)
            if nxt is not None and not nxt.done.done():
                group.append(nxt)
            elif j not in self.written.settled:  # not ready yet: the group ends before it
                break
            j += 1  # a note that failed or was stored before does not end the group
        try:
            try:
                await self._write_together(group)
            except asyncio.CancelledError:
                raise
            except StoreUnavailableError as exc:
                for r in group:
                    r.fail(exc)
            except Exception as exc:
                if not isinstance(exc, StaleWriteError):
                    log.warning("ingest write of %d notes failed (%s); writing them one by one", len(group), exc)
                for r in group:
                    await self._write_alone(r)
        finally:
            for r in group:  # cancelled mid-way: the members' tasks must not wait forever
                if not r.done.done():
                    r.done.cancel()

    async def _write_together(self, group: Sequence[_Ready]) -> None:
        """One statement for the group. Evolutions are rebased on what this ingest wrote (``known``,
        and the group's earlier notes), without reading; the statement checks each neighbour's
        version and rolls everything back (StaleWriteError) when someone else changed it."""
        overlay: dict[str, Note] = {}
        writes: list[GroupWrite] = []
        plans: list[tuple[EvolutionPlan, int]] = []
        before: set[int] = set()
        for r in group:
            plan, rebased = self._rebase_known(r.plan, overlay)
            writes.append((r.built, plan, self._follows(r.index, before), r.embedded))
            plans.append((plan, rebased))
            before.add(r.index)
            for u in plan.updates:  # what the statement will have made of the neighbour
                overlay[u.before.id] = _evolved(u, u.before.version + 1)
        results = await self.steps.write_notes(writes)
        for r, (plan, rebased), result in zip(group, plans, results, strict=True):
            self._committed(r, plan, result)
            r.done.set_result((result, rebased, len(group)))

    async def _write_alone(self, r: _Ready) -> None:
        try:
            plan, rebased = await self._rebase(r.plan)
            result = await self.steps.write_note(
                r.built, plan, follows=self._follows(r.index, set()), embedded=r.embedded
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            r.fail(exc)
            return
        self._committed(r, plan, result)
        r.done.set_result((result, rebased, 1))

    def _committed(self, r: _Ready, plan: EvolutionPlan, result: AddResult) -> None:
        """Bookkeeping once a note's transaction committed: it leaves the in-flight set (a later
        note finds it stored), and the neighbours it evolved are known in their new state."""
        self.in_flight.pop(r.index, None)
        if not result.created:
            return
        self.committed.add(r.index)
        versions = {c.note_id: c.after["version"] for c in result.evolved}
        for u in plan.updates:
            if u.before.id in versions:
                self.known[u.before.id] = _evolved(u, int(versions[u.before.id]))

    def _rebase_known(self, plan: EvolutionPlan, overlay: Mapping[str, Note]) -> tuple[EvolutionPlan, int]:
        """``_rebase`` on the neighbour states this ingest wrote (no read); a neighbour it did not
        evolve is taken as the plan saw it, which the write statement checks."""
        if not plan.updates:
            return plan, 0
        updates: list[NeighbourEvolution] = []
        rejected = list(plan.rejected)
        rebased = 0
        for u in plan.updates:
            current = overlay.get(u.before.id) or self.known.get(u.before.id)
            if current is None or _same_state(current, u.before):
                updates.append(u)
                continue
            rebased += 1
            moved = rebase(u, current)
            if moved is None:
                rejected.append(f"update of {u.before.id[:40]!r} dropped: an earlier note already made it")
            else:
                updates.append(moved)
        return EvolutionPlan(links=plan.links, updates=updates, rejected=rejected), rebased

    def _follows(self, i: int, group_before: set[int]) -> str | None:
        """Item ``i``'s FOLLOWS target when it is stored by the time ``i`` is written (an earlier
        note of the same group counts: the statement writes it first)."""
        target = self.items[i].follows
        if target is None:
            return None
        j = self.position.get(target)
        if j is not None and j in group_before:
            return target
        return target if self._written(target, i) else None

    # --- ordering helpers ----------------------------------------------------------------------

    async def _settle(self, i: int) -> None:
        self.in_flight.pop(i, None)
        await self.constructed.settle(i)
        await self.written.settle(i)

    def _stored_after(self, i: int) -> list[str]:
        """Ids of later items that a previous run stored: never candidates of item ``i``."""
        later = self.stored_positions[bisect.bisect_right(self.stored_positions, i) :]
        return [self.ids[j] or "" for j in later]

    def _written(self, target: str, i: int) -> bool:
        """Whether a FOLLOWS target is stored by the time item ``i`` is written."""
        j = self.position.get(target)
        if j is None:
            return target in self.outside
        if j in self.committed:
            return j < i
        result = self.results[j]
        return j < i and result is not None and result.status in (IngestStatus.ADDED, IngestStatus.EXISTING)

    async def _rebase(self, plan: EvolutionPlan) -> tuple[EvolutionPlan, int]:
        """The plan's neighbour updates re-checked against the neighbours' stored state."""
        if not plan.updates:
            return plan, 0
        updates: list[NeighbourEvolution] = []
        rejected = list(plan.rejected)
        rebased = 0
        for u in plan.updates:
            current = await self.store.get(u.before.id, self.scope)
            if current is None:
                rejected.append(f"update of {u.before.id[:40]!r} dropped: that note is not stored")
            elif _same_state(current, u.before):
                updates.append(u)
            else:
                rebased += 1
                moved = rebase(u, current)
                if moved is None:
                    rejected.append(f"update of {u.before.id[:40]!r} dropped: an earlier note already made it")
                else:
                    updates.append(moved)
        return EvolutionPlan(links=plan.links, updates=updates, rejected=rejected), rebased

    async def _write_deferred_follows(self) -> None:
        """FOLLOWS pairs not written with their note: the target came later in the batch, or a
        previous run stored the note (a crash may have cut its pass). MERGE: nothing doubles."""
        pairs = []
        for i, item in enumerate(self.items):
            result = self.results[i]
            if (
                item.follows is None
                or result is None
                or result.status not in (IngestStatus.ADDED, IngestStatus.EXISTING)
            ):
                continue
            if result.status == IngestStatus.ADDED and any(
                x.target_id == item.follows and x.type.value == "FOLLOWS" for x in result.links
            ):
                continue
            j = self.position.get(item.follows)
            target = self.results[j] if j is not None else None
            if j is None or (target is not None and target.status in (IngestStatus.ADDED, IngestStatus.EXISTING)):
                pairs.append((self.ids[i] or "", item.follows))
        if pairs:
            try:
                await self.store.add_follows(pairs, self.scope)
            except GraphmemError as exc:  # the notes are stored; a rerun writes these links
                self.warnings.append(f"{len(pairs)} FOLLOWS links not written ({exc}); run the ingest again")

    # --- results --------------------------------------------------------------------------------

    def _item(self, i: int, status: IngestStatus, *, error: str | None = None) -> IngestItem:
        return IngestItem(index=i, scope=self.scope, note_id=self.ids[i], status=status, error=error)

    def _from_result(self, i: int, result: AddResult, candidates: list[str], rebased: int) -> IngestItem:
        return IngestItem(
            index=i,
            scope=self.scope,
            note_id=result.note.id,
            status=IngestStatus.ADDED if result.created else IngestStatus.EXISTING,
            enrichment=result.note.enrichment,
            links=result.links,
            evolved=result.evolved,
            rejected=result.rejected,
            rebased=rebased,
            candidates=candidates,
            usage=result.usage,
        )

    def _finish(self, i: int, item: IngestItem) -> None:
        self.results[i] = item
        self.batch.report(item)


def _valid_id(value: str) -> bool:
    try:
        check_id(value)
    except InvalidInputError:
        return False
    return True


async def ingest(
    steps: AddSteps,
    batches: Sequence[tuple[Scope, Sequence[NoteInput]]],
    *,
    concurrency: int,
    enrich: bool | None = None,
    on_item: OnItem | None = None,
) -> list[IngestReport]:
    """Agentic bulk ingest of several scopes at once (see the module docstring); one report per
    batch, items in the caller's order."""
    if not isinstance(concurrency, int) or not 1 <= concurrency <= 1024:
        raise InvalidInputError("concurrency must be between 1 and 1024")
    scopes = [scope for scope, _ in batches]
    if len(set(scopes)) != len(scopes):
        raise InvalidInputError("each scope may appear once in a batch list")
    batch = _Batch(steps, concurrency, enrich, on_item)
    runs = [_ScopeRun(batch, n, scope, items) for n, (scope, items) in enumerate(batches)]

    async def timed(run: _ScopeRun) -> IngestReport:
        started = time.perf_counter()
        items = await run.run()
        usage = Usage()
        for x in items:
            if x.status == IngestStatus.ADDED:
                usage.add(x.usage)
        return IngestReport(items=items, seconds=time.perf_counter() - started, usage=usage, warnings=run.warnings)

    tasks = [asyncio.create_task(timed(r)) for r in runs]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:  # one scope failed (or the caller cancelled): stop the others too
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
