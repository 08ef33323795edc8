"""Store items: key-value items in namespaces (the LangGraph store's data)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from graphmem.models.notes import Scope

# --- store items (key-value items in namespaces: the LangGraph store) -----------------------------

ItemOperator = Literal["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]
ITEM_OPERATORS: tuple[ItemOperator, ...] = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


@dataclass(frozen=True)
class LeafCondition:
    """A filter condition the store evaluates itself (pushed into Cypher): the scalar leaf of an
    item's value at ``head`` (kind and path, encoded) compared with ``entry`` (head + the encoded
    operand), both in the encoding of ``ItemWrite.leaves``."""

    op: ItemOperator
    head: str
    entry: str


@dataclass(frozen=True)
class ItemFilter:
    """A compiled item filter: the conditions the store applies (``pushed``) and whether some
    conditions are left for the service to check on the values the store returns (``residual``:
    list or object equality, null, very large integers)."""

    pushed: tuple[LeafCondition, ...] = ()
    residual: bool = False


@dataclass
class ItemWrite:
    """One store item to write (insert or replace, in one transaction): the value as JSON text,
    its scalar leaves for filters, the embedding of its indexed text (None: not indexed), its TTL."""

    scope: Scope
    namespace: tuple[str, ...]
    key: str
    value_json: str
    leaves: list[str]
    embedding: list[float] | None
    ttl_minutes: float | None


@dataclass
class ItemRecord:
    """A stored item: namespace, key and value (as JSON text; the service parses it)."""

    scope: Scope
    namespace: tuple[str, ...]
    key: str
    value_json: str
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    ttl_minutes: float | None = None
    score: float | None = None


@dataclass
class StoredItem:
    """An item as the service returns it (value parsed)."""

    scope: Scope
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float | None = None
