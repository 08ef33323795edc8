"""Input checks shared by every vocabulary: ids, bounds (``LIMITS``: every bound on a number or size a client sends), content and labels, time. No I/O."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from graphmem.errors import InvalidInputError

# \Z, not $: under re.match, $ also matches before a final newline ("zz\n" would pass as "zz").
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@\-]{0,127}\Z"
_ID_RE = re.compile(ID_PATTERN)
# C0 control characters other than tab, newline and carriage return, plus DEL: never stored.
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Limits:
    """Bounds on every number and size a client sends, in one place: the service checks them for every
    interface (Python API, CLI, LangChain, LangGraph) and the REST and MCP schemas declare them. They
    also bound the largest answer: hits x (1 + links per hit) notes, pages of notes, links and versions
    (tests/reliability/test_big_answers.py measures the server under the largest)."""

    k_max: int = 100  # search / ask hits (each brings up to GRAPHMEM_LINKS_PER_HIT linked notes)
    page_max: int = 100  # notes per page of a list
    links_page_max: int = 1000  # links per page of a note's links (a link is a few hundred bytes)
    history_page_max: int = 100  # versions per page of a note's history (a version holds the content)
    items_page_max: int = 1000  # LangGraph store items, namespaces or scopes per page
    offset_max: int = 10_000_000  # any offset: Neo4j's SKIP overflows at 2**63 (issue 16)
    token_budget_min: int = 50  # the context `ask` builds, in tokens
    token_budget_max: int = 32_000
    repair_max: int = 1000  # notes one repair call re-enriches
    batch_max: int = 10_000  # notes per bulk write transaction
    metadata_keys: int = 32
    metadata_value_chars: int = 1000


LIMITS = Limits()


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_note_id() -> str:
    return uuid.uuid4().hex


def check_id(value: str, what: str = "id") -> str:
    """Ids and scope parts are short, printable tokens: no spaces, quotes or control characters."""
    if not isinstance(value, str) or not _ID_RE.fullmatch(value):
        raise InvalidInputError(
            f"{what} must be 1-128 characters of letters, digits and _ . : @ -, "
            f"starting with a letter or digit; got {value!r:.60}"
        )
    return value


def check_bound(value: Any, low: int, high: int, what: str) -> int:
    """An integer in [low, high] (bools refused), or InvalidInputError naming the bounds."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{what} must be an integer from {low} to {high}; got {str(value)[:40]}")
    return value


MAX_SESSION_ID_CHARS = 1024


def check_session_id(value: Any) -> str:
    """A chat session id as an application passes it (LangChain's are free text: slashes, spaces,
    any script): non-empty text of at most 1,024 characters, without control characters or lone
    surrogates. Stored and found exactly as given."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"session_id must be non-empty text, got {value!r:.60}")
    if len(value) > MAX_SESSION_ID_CHARS:
        raise InvalidInputError(f"session_id has {len(value)} characters, over the limit of {MAX_SESSION_ID_CHARS}")
    if CONTROL_CHARS.search(value) or "\x00" in value:
        raise InvalidInputError("session_id contains control characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("session_id is not valid Unicode text (lone surrogates)") from None
    return value


def validate_content(value: Any, max_chars: int, *, what: str = "content") -> str:
    """Refuse what cannot be stored text: non-text, empty, oversized, control characters, invalid UTF-8.

    Returns the text stripped of surrounding whitespace.
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{what} is not valid UTF-8 text (lone surrogates)") from None
    if CONTROL_CHARS.search(value):
        raise InvalidInputError(f"{what} contains control characters (binary data?)")
    stripped = value.strip()
    if not stripped:
        raise InvalidInputError(f"{what} is empty")
    if len(stripped) > max_chars:
        raise InvalidInputError(f"{what} has {len(stripped)} characters, over the limit of {max_chars}")
    return stripped


def validate_label(value: Any, max_chars: int, *, what: str) -> str | None:
    """Optional short text (category, source id): None stays None; otherwise checked like content."""
    if value is None:
        return None
    return validate_content(value, max_chars, what=what)


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
