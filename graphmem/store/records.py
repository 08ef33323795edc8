"""Domain objects <-> the maps the Cypher files take and return. Each mapping is written once here.

Reads: every note-returning query projects the same keys (``NOTE_KEYS``; a test runs each query
and compares), as native temporals (``notes/*``) or as ISO-8601 strings (``search/*``, where the
driver's DateTime hydration cost more than the index query); ``native`` reads both.
Writes: explicit property maps (the create queries ``SET n.x = $note.x``, never ``SET n = $map``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic_core import from_json

from graphmem.models import (
    EnrichmentStatus,
    EvolutionTrace,
    Link,
    LinkedNote,
    LinkedVia,
    LinkType,
    Note,
    NoteState,
    NoteVersion,
    Scope,
    SearchFilters,
    SessionInfo,
)

# The note projection of every note-returning query (plus ``embedding`` where a query asks for it).
NOTE_KEYS = frozenset(
    {
        "id",
        "content",
        "user_id",
        "agent_id",
        "run_id",
        "event_time",
        "event_time_text",
        "created_at",
        "updated_at",
        "keywords",
        "tags",
        "context",
        "category",
        "source_id",
        "metadata_json",
        "enrichment",
        "retrieval_count",
        "last_accessed",
        "version",
    }
)
_DEFAULT_STRENGTH = 0.5  # links written before strength existed


def content_sha(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def native(value: Any) -> Any:
    """A temporal as Python: driver types converted, ISO strings (search queries) parsed."""
    if isinstance(value, str):
        return datetime.fromisoformat(value.split("[", 1)[0])  # drop a named zone; the offset stays
    if hasattr(value, "to_native"):
        return value.to_native()
    return value


def note_from_record(rec: Mapping[str, Any]) -> Note:
    metadata_json = rec.get("metadata_json")
    return Note(
        id=rec["id"],
        content=rec["content"],
        scope=Scope(user_id=rec["user_id"], agent_id=rec["agent_id"], run_id=rec["run_id"]),
        event_time=native(rec.get("event_time")),
        event_time_text=rec.get("event_time_text"),
        created_at=native(rec["created_at"]),
        updated_at=native(rec["updated_at"]),
        keywords=list(rec.get("keywords") or []),
        tags=list(rec.get("tags") or []),
        context=rec.get("context") or "",
        category=rec.get("category"),
        source_id=rec.get("source_id"),
        metadata=from_json(metadata_json) if metadata_json else {},  # pydantic-core: 5x json.loads
        enrichment=EnrichmentStatus(rec.get("enrichment") or "done"),
        retrieval_count=rec.get("retrieval_count") or 0,
        last_accessed=native(rec.get("last_accessed")),
        version=rec.get("version") or 1,
        embedding=list(rec["embedding"]) if rec.get("embedding") is not None else None,
    )


def note_params(note: Note, embed_text_variant: str) -> dict[str, Any]:
    """Note -> the property map the create queries read (explicit fields, never `SET n = $map`)."""
    return {
        "id": note.id,
        "content": note.content,
        "content_sha": content_sha(note.content),
        **note.scope.params(),
        "event_time": note.event_time,
        "event_time_text": note.event_time_text,
        "created_at": note.created_at,
        "updated_at": note.updated_at,
        "keywords": note.keywords,
        "tags": note.tags,
        "context": note.context,
        "category": note.category,
        "source_id": note.source_id,
        "metadata_json": json.dumps(note.metadata, sort_keys=True) if note.metadata else None,
        "enrichment": note.enrichment.value,
        "embed_text_variant": embed_text_variant,
        "version": note.version,
        "retrieval_count": note.retrieval_count,
        "last_accessed": note.last_accessed,
    }


def link_row(link: Link) -> dict[str, Any]:
    """A link as ``links/create`` takes it (the source is the query's ``$source_id``)."""
    return {
        "target_id": link.target_id,
        "type": link.type.value,
        "reason": link.reason,
        "strength": link.strength,
        "created_at": link.created_at,
        "caused_by": link.caused_by,
    }


def link_from_record(rec: Mapping[str, Any], source_id: str | None = None) -> Link:
    """A stored relationship as a Link (``links/of_note`` rows, ``notes/export`` link maps)."""
    return Link(
        source_id=source_id if source_id is not None else rec["source_id"],
        target_id=rec["target_id"],
        type=LinkType(rec["type"]),
        reason=rec["reason"] or "",
        strength=_strength(rec["strength"]),
        created_at=native(rec["created_at"]),
        caused_by=rec["caused_by"],
    )


def linked_note_from_record(rec: Mapping[str, Any]) -> LinkedNote:
    """A one-hop row of ``search/expand_links`` or ``search/vector_links``."""
    return LinkedNote(
        from_id=rec["from_id"],
        via=LinkedVia(
            from_id=rec["from_id"],
            type=LinkType(rec["type"]),
            reason=rec["reason"] or "",
            strength=_strength(rec["strength"]),
        ),
        note=note_from_record(rec["note"]),
    )


def version_from_record(rec: Mapping[str, Any]) -> NoteVersion:
    return NoteVersion(
        version=rec["version"],
        content=rec["content"],
        context=rec["context"] or "",
        tags=list(rec["tags"] or []),
        keywords=list(rec["keywords"] or []),
        replaced_at=native(rec["replaced_at"]),
        changed_by=rec["changed_by"],
    )


def state_from_record(rec: Mapping[str, Any]) -> NoteState:
    """A note's versioned values (``versions/states``' current, ``undo/evolutions``' current and after)."""
    return NoteState(
        version=int(rec["version"] or 1),
        content=rec["content"],
        context=rec["context"] or "",
        tags=tuple(rec["tags"] or ()),
        keywords=tuple(rec["keywords"] or ()),
    )


def evolution_from_record(rec: Mapping[str, Any]) -> EvolutionTrace:
    """A row of ``undo/evolutions``: with no version since the evolution, the note is what it wrote."""
    current = state_from_record(rec["current"])
    return EvolutionTrace(
        note_id=rec["note_id"],
        before=version_from_record(rec["before"]),
        after=state_from_record(rec["after"]) if rec["after"] is not None else current,
        current=current,
        later=[(int(x["version"]), x["changed_by"]) for x in rec["later"]],
    )


def session_from_record(rec: Mapping[str, Any]) -> SessionInfo:
    return SessionInfo(
        session_id=rec["session_id"],
        messages=int(rec["messages"] or 0),
        created_at=native(rec["created_at"]),
        updated_at=native(rec["updated_at"]),
    )


def filter_params(filters: SearchFilters | None) -> dict[str, Any]:
    """The search queries' filter parameters: null means "no filter"."""
    f = filters or SearchFilters()
    return {"tags_any": f.tags_any, "category": f.category, "since": f.since, "until": f.until}


def _strength(value: float | None) -> float:
    return value if value is not None else _DEFAULT_STRENGTH
