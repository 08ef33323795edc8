"""The ports the service depends on: what it needs of a note store and of a chat-history store.

``graphmem.store`` (Neo4j) implements both; the service names the adapter only where
``AsyncMemoryService.create`` wires the default one. Tests and benchmarks may wrap or replace a
store through these protocols instead of patching instances. Every method takes the scope it works
in, and the store enforces it itself: no read or write crosses scopes even when the service's own
checks are bypassed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from graphmem.models import (
    FOLLOWS_REASON,
    AddOutcome,
    AddWrite,
    EnrichmentStatus,
    Link,
    LinkedNote,
    Note,
    NoteVersion,
    Scope,
    SearchFilters,
    SessionInfo,
    StoredMessage,
)


class NoteStore(Protocol):
    """Notes, typed links, versions and search, confined to scopes."""

    # --- lifecycle ---
    async def verify(self) -> dict[str, str]:
        """Connect; return the server's name, version and edition (StoreUnavailableError otherwise)."""
        ...

    async def close(self) -> None: ...

    # --- writes ---
    async def add(self, write: AddWrite) -> AddOutcome:
        """The note, its links and its neighbours' evolutions in one transaction (idempotent by id)."""
        ...

    async def add_many(self, notes: Sequence[Note], embeddings: Sequence[Sequence[float]], variant: str) -> list[str]:
        """Bulk write of ready notes; returns the ids created (existing ids are skipped)."""
        ...

    async def add_follows(
        self, pairs: Sequence[tuple[str, str]], scope: Scope, *, reason: str = FOLLOWS_REASON, strength: float = 1.0
    ) -> int:
        """FOLLOWS links (source after target) between notes of the scope; returns the number written."""
        ...

    async def revise(
        self,
        note_id: str,
        scope: Scope,
        *,
        content: str,
        context: str,
        tags: list[str],
        keywords: list[str],
        enrichment: EnrichmentStatus,
        embedding: list[float],
        changed_by: str,
    ) -> int | None:
        """New values and embedding, the old ones kept as a version; the new version (None: not found)."""
        ...

    async def create_links(self, source_id: str, scope: Scope, links: Sequence[Link], caused_by: str) -> list[Link]:
        """The links written: only those whose source and target are notes of the scope."""
        ...

    async def delete(self, note_id: str, scope: Scope) -> bool: ...

    async def touch(self, counts: Mapping[str, int], scope: Scope) -> None:
        """Add to the notes' retrieval counts and set their last access."""
        ...

    # --- reads ---
    async def get(self, note_id: str, scope: Scope, *, with_embedding: bool = False) -> Note | None: ...

    async def scope_of(self, note_id: str) -> Scope | None:
        """Which scope holds an id (ids are global), for the idempotent add's conflict check."""
        ...

    async def find_by_content(self, content: str, scope: Scope) -> str | None: ...

    async def find_by_source(self, source_ids: Sequence[str], scope: Scope) -> dict[str, str]: ...

    async def list_notes(self, scope: Scope, *, limit: int, offset: int) -> list[Note]: ...

    async def export(self, scope: Scope, *, limit: int, offset: int) -> list[tuple[Note, list[Link]]]: ...

    async def count(self, scope: Scope) -> int: ...

    async def pending(self, scope: Scope, limit: int) -> list[str]: ...

    async def history(self, note_id: str, scope: Scope) -> list[NoteVersion]: ...

    async def links(self, note_id: str, scope: Scope) -> list[Link]: ...

    async def scopes(self, user_id: str | None, limit: int = 10_000) -> list[Scope]: ...

    async def note_count(self) -> int: ...

    # --- search ---
    async def vector_search(
        self,
        embedding: Sequence[float],
        scope: Scope,
        k: int,
        *,
        exclude_ids: Sequence[str] = (),
        filters: SearchFilters | None = None,
        over_fetch: int = 4,
    ) -> list[tuple[Note, float]]: ...

    async def vector_search_linked(
        self,
        embedding: Sequence[float],
        scope: Scope,
        k: int,
        per_hit: int,
        *,
        filters: SearchFilters | None = None,
        over_fetch: int = 4,
    ) -> tuple[list[tuple[Note, float]], list[LinkedNote]]:
        """vector_search and expand_links of its hits in one round trip."""
        ...

    async def fulltext_search(
        self, text: str, scope: Scope, k: int, *, filters: SearchFilters | None = None, over_fetch: int = 4
    ) -> list[tuple[Note, float]]: ...

    async def expand_links(
        self, ids: Sequence[str], scope: Scope, per_hit: int, exclude_ids: Sequence[str]
    ) -> list[LinkedNote]: ...


class HistoryStore(Protocol):
    """Chat message histories, per scope and session, stored whole."""

    async def append(self, scope: Scope, session_id: str, messages: Sequence[StoredMessage]) -> int: ...

    async def messages(self, scope: Scope, session_id: str, *, last: int | None = None) -> list[str]: ...

    async def clear(self, scope: Scope, session_id: str) -> int: ...

    async def sessions(self, scope: Scope, *, limit: int = 100) -> list[SessionInfo]: ...


__all__ = ["HistoryStore", "NoteStore"]
