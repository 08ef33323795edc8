"""Scopes from what LangChain and LangGraph applications pass: namespace labels, runtime context.

An application's user ids are its own (e-mail addresses, names with spaces, any text); a graphmem
scope part is a short id (``models.ID_PATTERN``). ``scope_id`` keeps an id as it is and maps any
other text to ``lg:`` + 40 hex digits of its SHA-256, the same way everywhere (the store's
namespace labels, the middleware's and the tools' runtime context), so one user is one scope.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from graphmem.errors import InvalidInputError
from graphmem.models import ID_PATTERN, Scope

HASHED = "lg:"
_ID_RE = re.compile(ID_PATTERN)
DEFAULT_CONTEXT_KEYS: Mapping[str, str] = {"user_id": "user_id"}


def scope_id(label: str) -> str:
    """The scope id for an application's id: itself when it is a graphmem id, else a hash."""
    if not isinstance(label, str) or not label:
        raise InvalidInputError(f"a scope id comes from non-empty text, got {label!r:.60}")
    if _ID_RE.fullmatch(label) and not label.startswith(HASHED):
        return label
    return HASHED + hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _read(context: Any, name: str) -> Any:
    if isinstance(context, Mapping):
        return context.get(name)
    return getattr(context, name, None)


def scope_from_context(context: Any, keys: Mapping[str, str], base: Scope | None = None) -> Scope:
    """The scope named by a runtime context: ``keys`` maps scope parts (user_id, agent_id, run_id)
    to the context's fields; unmapped parts come from ``base``. A missing field is an error, never
    a fall-back to a shared scope."""
    parts = (base or Scope(user_id="default")).params()
    for part, field in keys.items():
        if part not in parts:
            raise ValueError(f"unknown scope part {part!r}; use user_id, agent_id, run_id")
        value = _read(context, field)
        if value is None or value == "":
            raise InvalidInputError(
                f"the runtime context has no {field!r} (graphmem's {part}); pass it with "
                f"agent.invoke(..., context={{{field!r}: ...}})"
            )
        parts[part] = scope_id(str(value))
    return Scope(**parts)
