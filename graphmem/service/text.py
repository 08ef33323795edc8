"""Input validation of notes and the text a note is embedded as (the text primitives, one
``CONTROL_CHARS``, live in the domain: ``models.validate_content``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from graphmem.errors import InvalidInputError
from graphmem.models import LIMITS, Note, validate_content, validate_label

_MAX_META_KEYS = LIMITS.metadata_keys
_MAX_META_VALUE = LIMITS.metadata_value_chars
_EVENT_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo session dates: "1:56 pm on 8 May, 2023"
    "%I:%M %p on %d %b, %Y",
    "%d %B %Y",
    "%d %B, %Y",
    "%B %d, %Y",
    "%Y-%m-%d %H:%M",
    "%Y%m%d%H%M",  # A-MEM's default timestamp format
)


def check_note_text(note: Note) -> None:
    """Refuse a note whose free-text fields the database driver cannot encode (lone surrogates) or
    that carry control characters or are oversized: category, source_id, context, keywords, tags.
    Content and metadata are checked where they enter (validate_content, validate_metadata)."""
    note.category = validate_label(note.category, 200, what="category")
    note.source_id = validate_label(note.source_id, 500, what="source_id")
    if note.context.strip():
        note.context = validate_content(note.context, 2000, what="context")
    for what in ("keywords", "tags"):
        words = getattr(note, what)
        if len(words) > 100:
            raise InvalidInputError(f"{what}: more than 100 items")
        setattr(note, what, [validate_content(w, 200, what=what[:-1]) for w in words])


def validate_metadata(metadata: Any) -> dict[str, str]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError("metadata must be an object of string values")
    if len(metadata) > _MAX_META_KEYS:
        raise InvalidInputError(f"metadata has more than {_MAX_META_KEYS} keys")
    out: dict[str, str] = {}
    for key, val in metadata.items():
        if not isinstance(key, str) or not isinstance(val, str):
            raise InvalidInputError("metadata keys and values must be strings")
        out[validate_content(key, 100, what="metadata key")] = validate_content(
            val, _MAX_META_VALUE, what=f"metadata value {key[:30]!r}"
        )
    return out


def parse_event_time(value: datetime | str | None) -> tuple[datetime | None, str | None]:
    """(datetime, original text). Unparseable text is kept as text; naive datetimes are taken as UTC."""
    if value is None:
        return None, None
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)), None
    if not isinstance(value, str):
        raise InvalidInputError("event_time must be a datetime or text")
    text = validate_content(value, 200, what="event_time")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        parsed = None
        for fmt in _EVENT_FORMATS:
            try:
                parsed = datetime.strptime(text, fmt)
                break
            except ValueError:
                continue
    if parsed is not None and parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed, text


def embed_text(note: Note, variant: str) -> str:
    """The text a note is embedded as. One format everywhere (A-MEM's code mixed two).

    full:    content + context + keywords + tags (the paper's concat(c, K, G, X))
    content: content only (the agiresearch library)
    amem:    the A-MEM evaluation code's format
    """
    kw, tags = ", ".join(note.keywords), ", ".join(note.tags)
    if variant == "content":
        return note.content
    if variant == "amem":
        return f"content:{note.content} context:{note.context} keywords: {kw} tags: {tags}"
    parts = [note.content]
    if note.context:
        parts.append(f"context: {note.context}")
    if kw:
        parts.append(f"keywords: {kw}")
    if tags:
        parts.append(f"tags: {tags}")
    return "\n".join(parts)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity, the measure of the vector index (for candidates not in the index yet)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm > 0 else 0.0


__all__ = [
    "check_note_text",
    "cosine",
    "embed_text",
    "parse_event_time",
    "validate_content",
    "validate_label",
    "validate_metadata",
]
