"""A-MEM's note construction: a validated Note from the caller's input, and its enrichment by the
LLM (keywords, a one-line context, tags), applied in one place for add, update and repair."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graphmem.errors import LLMError
from graphmem.llm.calls import LLMCaller
from graphmem.llm.outputs import NoteEnrichment
from graphmem.llm.prompts import ENRICH_SYSTEM, enrich_messages
from graphmem.models import EnrichmentStatus, Note, Scope, Usage, check_id, validate_content, validate_label
from graphmem.service.grounding import ground
from graphmem.service.text import check_note_text, parse_event_time, validate_metadata
from graphmem.service.wording import content_words

log = logging.getLogger(__name__)


def new_note(
    content: Any,
    scope: Scope,
    *,
    max_chars: int,
    note_id: str | None = None,
    event_time: datetime | str | None = None,
    category: str | None = None,
    source_id: str | None = None,
    metadata: Any = None,
    keywords: Sequence[str] = (),
    tags: Sequence[str] = (),
    context: str = "",
    enrichment: EnrichmentStatus = EnrichmentStatus.DONE,
) -> Note:
    """The Note the input describes, every field checked (InvalidInputError naming the field)."""
    text = validate_content(content, max_chars)
    if note_id is not None:
        check_id(note_id, "note id")
    meta = validate_metadata(metadata)
    ev_time, ev_text = parse_event_time(event_time)
    category = validate_label(category, 200, what="category")
    source_id = validate_label(source_id, 500, what="source_id")
    note = Note(
        **({} if note_id is None else {"id": note_id}),
        content=text,
        scope=scope,
        event_time=ev_time,
        event_time_text=ev_text,
        category=category,
        source_id=source_id,
        metadata=meta,
        keywords=list(keywords),
        tags=list(tags),
        context=context,
        enrichment=enrichment,
    )
    check_note_text(note)
    return note


async def enrich(
    llm: LLMCaller, content: str, usage: Usage, rejected: list[str] | None = None, *, grounded: bool = True
) -> NoteEnrichment | None:
    """The LLM's keywords, context and tags for a note; None when the LLM failed or gave nothing usable.
    Keywords and tags that only echo the instructions are then dropped, and (``grounded``) context
    sentences, keywords and tags the note does not support (``grounding.ground``): each reported in ``rejected``."""
    try:
        result, _ = await llm.structured(NoteEnrichment, enrich_messages(content), usage)
    except LLMError as exc:
        log.warning("note construction failed, storing raw: %s", exc)
        return None
    if result is None or not result.is_usable():
        return None
    for field in ("keywords", "tags"):
        items: list[str] = getattr(result, field)
        echoed = instruction_echoes(items, content, ENRICH_SYSTEM)
        if echoed:
            setattr(result, field, [w for w in items if w not in echoed])
            if rejected is not None:
                rejected.extend(f"{field[:-1]} {w!r} only repeats the instructions" for w in echoed)
    if grounded:
        checked = ground(content, result.context, result.keywords, result.tags)
        result.context, result.keywords, result.tags = checked.context, checked.keywords, checked.tags
        if rejected is not None:
            rejected.extend(checked.refused)
    return result  # usable even when every keyword was an echo: its context stands


def apply_enrichment(note: Note, enrichment: NoteEnrichment | None) -> bool:
    """Write an enrichment into the note (DONE), or mark the note PENDING for ``repair`` when there
    is none. Returns whether the note is enriched."""
    if enrichment is None:
        note.enrichment = EnrichmentStatus.PENDING
        return False
    note.keywords, note.context, note.tags = enrichment.keywords, enrichment.context, enrichment.tags
    note.enrichment = EnrichmentStatus.DONE
    return True


def instruction_echoes(items: Sequence[str], note_text: str, instructions: str) -> list[str]:
    """The keywords or tags that only repeat the instructions: each of their content words is one the
    instructions use, and none is in the note. (The 1.5B model put "atomic memory", from "You build
    atomic memory notes", among the keywords of 2 of the demo's 12 notes.)"""
    said = content_words(instructions)
    own = content_words(note_text)
    echoed = []
    for item in items:
        item_words = content_words(item)
        if item_words and item_words <= said and not item_words & own:
            echoed.append(item)
    return echoed
