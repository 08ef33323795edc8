"""Bulk import of ready notes (raw: no LLM calls), with embedding and writing overlapped.

Functions of the store port and an embedding function, so a concurrent agentic ingest can reuse
the validation and the FOLLOWS handling.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

from pydantic import ValidationError

from graphmem.config import Settings
from graphmem.errors import InvalidInputError, NoteNotFoundError
from graphmem.models import EnrichmentStatus, Note, NoteInput, Scope, Usage, check_id
from graphmem.ports import NoteStore
from graphmem.service import construct
from graphmem.service.text import embed_text

Embed = Callable[[Sequence[str], Usage | None], Awaitable[list[list[float]]]]
Progress = Callable[[int, int], None]


def notes_of(items: Sequence[NoteInput], scope: Scope, max_chars: int) -> list[Note]:
    """Every item as a validated raw Note; InvalidInputError naming the first bad item."""
    notes: list[Note] = []
    for i, item in enumerate(items):
        try:
            notes.append(
                construct.new_note(
                    item.content,
                    scope,
                    max_chars=max_chars,
                    note_id=item.note_id,
                    event_time=item.event_time,
                    category=item.category,
                    source_id=item.source_id,
                    metadata=item.metadata,
                    keywords=item.keywords,
                    tags=item.tags,
                    context=item.context,
                    enrichment=EnrichmentStatus.RAW,
                )
            )
        except (InvalidInputError, ValidationError, ValueError) as exc:
            raise InvalidInputError(f"item {i}: {exc}") from None
    return notes


async def follows_pairs(
    store: NoteStore, items: Sequence[NoteInput], notes: Sequence[Note], scope: Scope
) -> list[tuple[str, str]]:
    """(note, previous turn) pairs of a bulk import; every previous turn must be in the batch or the scope."""
    in_batch = {n.id for n in notes}
    pairs: list[tuple[str, str]] = []
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
        if await store.get(target, scope) is None:
            raise NoteNotFoundError(target)
    return pairs


async def add_many(
    store: NoteStore,
    embed: Embed,
    settings: Settings,
    items: Sequence[NoteInput],
    scope: Scope,
    *,
    batch_size: int = 1000,
    progress: Progress | None = None,
    usage: Usage | None = None,
) -> list[str]:
    """Validate all, embed in batches, write in chunks, then the FOLLOWS links; the notes' ids."""
    notes = notes_of(items, scope, settings.max_content_chars)
    pairs = await follows_pairs(store, items, notes, scope)
    variant = settings.embed_text_variant
    chunks = [notes[start : start + batch_size] for start in range(0, len(notes), batch_size)]

    def embedding(chunk: Sequence[Note]) -> asyncio.Future[list[list[float]]]:
        return asyncio.ensure_future(embed([embed_text(n, variant) for n in chunk], usage))

    done = 0
    # Embed chunk i+1 (a worker thread; onnxruntime releases the GIL) while chunk i is written:
    # the two overlap instead of taking turns.
    next_vectors = embedding(chunks[0]) if chunks else None
    try:
        for i, chunk in enumerate(chunks):
            assert next_vectors is not None
            vectors = await next_vectors
            next_vectors = embedding(chunks[i + 1]) if i + 1 < len(chunks) else None
            t0 = time.perf_counter()
            await store.add_many(chunk, vectors, variant)
            if usage is not None:
                usage.store_seconds += time.perf_counter() - t0
            done += len(chunk)
            if progress is not None:
                progress(done, len(notes))
    finally:
        if next_vectors is not None and not next_vectors.done():
            next_vectors.cancel()
    if pairs:  # after all notes, so a turn may follow one later in the batch; MERGE: a rerun repairs
        await store.add_follows(pairs, scope)
    return [n.id for n in notes]
