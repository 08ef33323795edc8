"""Export and import of a scope's notes as JSON-able records (JSONL on the CLI), round-trip exact.

A record is the note's JSON (without its scope: an import writes into the caller's scope) plus its
outgoing links and its outgoing supersessions, conflicts and derivations (``updates``; issue 28).
Functions of the store port and an embedding function, not of the service. What import cannot keep:
an update's own ``created_at`` (it gets the import's time; ``at``, the time it holds from, is kept).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from graphmem.config import Settings
from graphmem.errors import InvalidInputError
from graphmem.models import Link, Note, Scope
from graphmem.models.timeline import CONFLICTS_WITH, DERIVED_FROM, SUPERSEDES, TimeRelation
from graphmem.ports import NoteStore
from graphmem.service.text import check_note_text, embed_text, validate_content

Embed = Callable[[Sequence[str]], Awaitable[list[list[float]]]]

RECORD_FIELDS = (
    "id",
    "content",
    "event_time",
    "event_time_text",
    "created_at",
    "updated_at",
    "keywords",
    "tags",
    "context",
    "category",
    "source_id",
    "metadata",
    "enrichment",
    "retrieval_count",
    "last_accessed",
    "version",
    "embedding",
    "links",
    "updates",
)
_LINK_FIELDS = {"target_id", "type", "reason", "strength", "created_at", "caused_by"}
_PAGE = 500


def record_of(note: Note, links: Sequence[Link], updates: Sequence[TimeRelation] = ()) -> dict[str, Any]:
    """The export record of a note: its JSON without the scope, plus its outgoing links and updates."""
    rec = note.model_dump(mode="json", exclude={"scope"})
    rec["links"] = [link.model_dump(mode="json", include=_LINK_FIELDS) for link in links]
    rec["updates"] = [u.model_dump(mode="json") for u in updates]
    return rec


def updates_of(record: dict[str, Any], note: Note) -> list[TimeRelation]:
    """The supersessions, conflicts and derivations of an export record; InvalidInputError if malformed."""
    try:
        return [TimeRelation.model_validate(raw) for raw in record.get("updates") or []]
    except ValueError as exc:
        raise InvalidInputError(f"note {note.id}: bad updates: {exc}") from None


def links_of(record: dict[str, Any], note: Note) -> list[Link]:
    """The links of an export record, from ``note``; InvalidInputError for a malformed one."""
    links = []
    for raw in record.get("links") or []:
        try:
            if not isinstance(raw, dict):
                raise ValueError("not a link record")
            fields = {k: raw[k] for k in _LINK_FIELDS if k in raw}
            links.append(Link.model_validate({**fields, "source_id": note.id, "reason": raw.get("reason") or ""}))
        except (KeyError, ValueError) as exc:
            raise InvalidInputError(f"note {note.id}: bad link {raw!r:.80}: {exc}") from None
    return links


async def export_records(store: NoteStore, scope: Scope) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset = 0
    updates = await store.time_relations(scope)
    while True:
        page = await store.export(scope, limit=_PAGE, offset=offset)
        out.extend(record_of(note, links, updates.get(note.id, ())) for note, links in page)
        if len(page) < _PAGE:
            return out
        offset += _PAGE


async def import_records(
    store: NoteStore, embed: Embed, settings: Settings, records: list[dict[str, Any]], scope: Scope
) -> int:
    """Write exported records into ``scope``. Notes first (ids kept, existing ones skipped), then
    links, then supersessions, conflicts and derivations; the store writes each only when its target
    is a note of ``scope`` too."""
    notes: list[Note] = []
    vectors: list[list[float] | None] = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict) or "content" not in rec:
            raise InvalidInputError(f"record {i}: not a graphmem note record")
        unknown = set(rec) - set(RECORD_FIELDS) - {"user_id", "agent_id", "run_id", "scope"}
        if unknown:
            raise InvalidInputError(f"record {i}: unknown fields {sorted(unknown)}")
        try:
            note = Note(
                scope=scope,
                **{
                    k: rec[k]
                    for k in RECORD_FIELDS
                    if k in rec and k not in ("embedding", "links") and rec[k] is not None
                },
            )
            note.content = validate_content(note.content, settings.max_content_chars)
            check_note_text(note)
        except (ValueError, TypeError) as exc:
            raise InvalidInputError(f"record {i}: {exc}") from None
        notes.append(note)
        vectors.append(rec.get("embedding"))
    links = [links_of(rec, note) for rec, note in zip(records, notes, strict=True)]
    updates = [updates_of(rec, note) for rec, note in zip(records, notes, strict=True)]
    expected = settings.vector_dimensions
    missing = [i for i, v in enumerate(vectors) if v is None or len(v) != expected]
    if missing:
        fresh = await embed([embed_text(notes[i], settings.embed_text_variant) for i in missing])
        for i, v in zip(missing, fresh, strict=True):
            vectors[i] = v
    for start in range(0, len(notes), 1000):
        await store.add_many(
            notes[start : start + 1000],
            [v for v in vectors[start : start + 1000] if v is not None],
            settings.embed_text_variant,
        )
    for note, note_links in zip(notes, links, strict=True):
        if note_links:
            await store.create_links(note.id, scope, note_links, caused_by=note.id)
    for note, note_updates in zip(notes, updates, strict=True):
        await _write_updates(store, note, note_updates, scope)
    return len(notes)


async def _write_updates(store: NoteStore, note: Note, updates: Sequence[TimeRelation], scope: Scope) -> None:
    sources = [u.target_id for u in updates if u.type == DERIVED_FROM]
    if sources:
        await store.derive(note.id, sources, scope)
    for u in updates:
        if u.type not in (SUPERSEDES, CONFLICTS_WITH):
            continue
        write = store.supersede if u.type == SUPERSEDES else store.conflict
        await write(
            note.id,
            u.target_id,
            scope,
            at=u.at or note.event_time or note.created_at,
            reason=u.reason or "",
            p_yes=u.p_yes,
            caused_by=u.caused_by or note.id,
        )
