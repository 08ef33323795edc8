"""Export and import of a scope's notes as JSON-able records (JSONL on the CLI), round-trip exact."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from graphmem.errors import InvalidInputError
from graphmem.models import EnrichmentStatus, Link, LinkType, Note, Scope

if TYPE_CHECKING:
    from graphmem.service.memory import AsyncMemoryService

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
)
_PAGE = 500


async def export_records(svc: AsyncMemoryService, scope: Scope) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = await svc.store.export(scope, limit=_PAGE, offset=offset)
        for note, links in page:
            rec = note.model_dump(mode="json", exclude={"scope"})
            rec["links"] = [
                {
                    "target_id": l.target_id,
                    "type": l.type.value,
                    "reason": l.reason,
                    "strength": l.strength,
                    "created_at": l.created_at.isoformat() if l.created_at else None,
                    "caused_by": l.caused_by,
                }
                for l in links
            ]
            out.append(rec)
        if len(page) < _PAGE:
            return out
        offset += _PAGE


def _dt(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


async def import_records(svc: AsyncMemoryService, records: list[dict[str, Any]], scope: Scope) -> int:
    """Write exported records into `scope`. Notes first (ids kept, existing ones skipped), then links."""
    from graphmem.service.text import check_note_text, embed_text, validate_content

    notes: list[Note] = []
    vectors: list[list[float] | None] = []
    dims = None
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
            note.content = validate_content(note.content, svc.settings.max_content_chars)
            check_note_text(note)
        except (ValueError, TypeError) as exc:
            raise InvalidInputError(f"record {i}: {exc}") from None
        notes.append(note)
        emb = rec.get("embedding")
        if emb is not None:
            dims = dims or len(emb)
        vectors.append(emb)
    expected = svc.settings.vector_dimensions
    missing = [i for i, v in enumerate(vectors) if v is None or len(v) != expected]
    if missing:
        fresh = await svc._embed([embed_text(notes[i], svc.settings.embed_text_variant) for i in missing])
        for i, v in zip(missing, fresh, strict=True):
            vectors[i] = v
    for start in range(0, len(notes), 1000):
        await svc.store.add_many(
            notes[start : start + 1000],
            [v for v in vectors[start : start + 1000] if v is not None],
            svc.settings.embed_text_variant,
        )
    for rec, note in zip(records, notes, strict=True):
        links = []
        for l in rec.get("links") or []:
            try:
                links.append(
                    Link(
                        source_id=note.id,
                        target_id=l["target_id"],
                        type=LinkType(l["type"]),
                        reason=l.get("reason") or "",
                        strength=l.get("strength", 0.5),
                        created_at=_dt(l.get("created_at")),
                        caused_by=l.get("caused_by"),
                    )
                )
            except (KeyError, ValueError) as exc:
                raise InvalidInputError(f"note {note.id}: bad link {l!r:.80}: {exc}") from None
        if links:
            await svc.store.create_links(note.id, scope, links, caused_by=note.id)
    return len(notes)


__all__ = ["EnrichmentStatus", "export_records", "import_records"]
