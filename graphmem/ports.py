"""The ports the service depends on: what it needs of a note store and of a chat-history store.

``graphmem.store`` (Neo4j) implements both; the service names the adapter only where
``AsyncMemoryService.create`` wires the default one. Tests and benchmarks may wrap or replace a
store through these protocols instead of patching instances. Every method takes the scope it works
in, and the store enforces it itself: no read or write crosses scopes even when the service's own
checks are bypassed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from graphmem.models import (
    FOLLOWS_REASON,
    TEXT_FIELDS,
    AddEffects,
    AddOutcome,
    AddWrite,
    EnrichmentStatus,
    ItemFilter,
    ItemRecord,
    ItemWrite,
    Link,
    LinkedNote,
    Note,
    NoteState,
    NoteVersion,
    Restore,
    Scope,
    SearchFilters,
    SessionInfo,
    StoredMessage,
    TextField,
    TextMatch,
    UndoOutcome,
    UndoWrite,
)
from graphmem.models.timeline import TimelineEntry, TimelineRow, TimeRelation


class NoteStore(Protocol):
    """Notes, typed links, versions and search, confined to scopes."""

    # --- lifecycle ---
    async def verify(self) -> dict[str, str]:
        """Connect; return the server's name, version and edition (StoreUnavailableError otherwise)."""
        ...

    async def close(self) -> None: ...

    # --- writes ---
    async def add(self, write: AddWrite) -> AddOutcome:
        """The note, its links and its neighbours' evolutions in one transaction (idempotent by id;
        ids are unique per scope)."""
        ...

    async def add_group(self, writes: Sequence[AddWrite]) -> list[AddOutcome]:
        """Several adds in one transaction, in order (a later one sees the earlier ones); all or
        nothing: StaleWriteError when an update's ``expected_version`` no longer holds."""
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

    async def find_by_content(self, content: str, scope: Scope) -> str | None: ...

    async def find_by_source(self, source_ids: Sequence[str], scope: Scope) -> dict[str, str]: ...

    async def existing_ids(self, ids: Sequence[str], scope: Scope) -> set[str]:
        """The ids among ``ids`` that are notes of the scope (a resumed ingest skips them)."""
        ...

    async def list_notes(self, scope: Scope, *, limit: int, offset: int) -> list[Note]: ...

    async def export(self, scope: Scope, *, limit: int, offset: int) -> list[tuple[Note, list[Link]]]: ...

    async def count(self, scope: Scope) -> int: ...

    async def pending(self, scope: Scope, limit: int) -> list[str]: ...

    async def history(self, note_id: str, scope: Scope, *, limit: int, offset: int = 0) -> list[NoteVersion]:
        """A page of the note's earlier versions, oldest first."""
        ...

    # --- versions: rollback and undo of an add ---
    async def version(self, note_id: str, scope: Scope, version: int) -> NoteVersion | None:
        """One earlier version of the note (None: no such note in the scope, or no such version)."""
        ...

    async def version_states(
        self, note_id: str, scope: Scope, *, limit: int, offset: int
    ) -> tuple[list[NoteVersion], NoteState] | None:
        """A page of earlier versions and the note's values now, in one read (None: not in the scope)."""
        ...

    async def restore(self, restore: Restore, scope: Scope) -> int | None:
        """The note back to one of its versions, as a new version (None: nothing written, because the
        note is not in the scope, has moved past ``restore.expected_version`` or lacks the version)."""
        ...

    async def add_effects(self, note_id: str, scope: Scope) -> AddEffects:
        """What the add of ``note_id`` left: links touching the note, notes it evolved (for undo)."""
        ...

    async def undo(self, write: UndoWrite) -> UndoOutcome:
        """Remove the add's links, restore the neighbours, delete the note on request: one transaction."""
        ...

    async def links(self, note_id: str, scope: Scope, *, limit: int, offset: int = 0) -> list[Link]:
        """A page of typed links touching the note (both directions), oldest first."""
        ...

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
        self,
        text: str,
        scope: Scope,
        k: int,
        *,
        filters: SearchFilters | None = None,
        over_fetch: int = 4,
        embedding: Sequence[float] | None = None,
        common_share: float | None = None,
        fields: Sequence[TextField] = TEXT_FIELDS,
    ) -> list[TextMatch]:
        """Top-k by BM25 over the query's content words in the note's ``fields`` (stop words dropped,
        and with ``common_share`` the words in more than that share of the scope's notes, counted in
        those fields); with ``embedding``, each match also carries its cosine to it."""
        ...

    async def expand_links(
        self, ids: Sequence[str], scope: Scope, per_hit: int, exclude_ids: Sequence[str]
    ) -> list[LinkedNote]: ...

    # --- memory that changes over time (issue 28; cypher/updates/) ---
    async def supersede(
        self,
        newer_id: str,
        older_id: str,
        scope: Scope,
        *,
        at: datetime,
        reason: str,
        p_yes: float | None,
        caused_by: str,
    ) -> bool:
        """``newer_id`` SUPERSEDES ``older_id`` (both of the scope) and the older note's valid_to; no
        content changes. False when nothing was written (a note missing or of another scope, a cycle)."""
        ...

    async def conflict(
        self,
        note_id: str,
        other_id: str,
        scope: Scope,
        *,
        at: datetime,
        reason: str,
        p_yes: float | None,
        caused_by: str,
    ) -> bool:
        """A CONFLICTS_WITH between two notes of the scope; False when nothing was written."""
        ...

    async def timeline(self, ids: Sequence[str], scope: Scope) -> list[TimelineRow]:
        """Where each note stands in time (supersessions and conflicts within the scope only)."""
        ...

    async def undo_updates(self, note_id: str, scope: Scope, *, dry_run: bool = False) -> int:
        """Remove (``dry_run``: count) the SUPERSEDES / CONFLICTS_WITH the add of ``note_id`` recorded."""
        ...

    async def mark_judged(self, note_id: str, scope: Scope) -> None:
        """Record that the supersession step judged the note (a resumed ingest skips it)."""
        ...

    async def unjudged(self, ids: Sequence[str], scope: Scope) -> set[str]:
        """The notes among ``ids`` the supersession step never judged."""
        ...

    async def clear_updates(self, scope: Scope) -> int:
        """Delete every SUPERSEDES / CONFLICTS_WITH of the scope (not a synthesis's), to judge again."""
        ...

    async def chains(self, scope: Scope, limit: int = 1000) -> list[tuple[TimelineEntry, list[TimelineEntry]]]:
        """The scope's supersession chains: each current note that superseded others, and those notes."""
        ...

    async def derive(self, note_id: str, source_ids: Sequence[str], scope: Scope) -> list[str]:
        """DERIVED_FROM from a synthesis note to its sources (all of the scope); the sources linked."""
        ...

    async def time_relations(self, scope: Scope) -> dict[str, list[TimeRelation]]:
        """The scope's SUPERSEDES, CONFLICTS_WITH and DERIVED_FROM, by the note each starts from (export)."""
        ...


class HistoryStore(Protocol):
    """Chat message histories, per scope and session, stored whole."""

    async def append(self, scope: Scope, session_id: str, messages: Sequence[StoredMessage]) -> int: ...

    async def messages(self, scope: Scope, session_id: str, *, last: int | None = None) -> list[str]: ...

    async def clear(self, scope: Scope, session_id: str) -> int: ...

    async def sessions(self, scope: Scope, *, limit: int = 100) -> list[SessionInfo]: ...

    async def last_note(self, scope: Scope, session_id: str) -> str | None:
        """The note the session's newest remembered message became, which the next one follows."""
        ...

    async def set_last_note(self, scope: Scope, session_id: str, note_id: str) -> None: ...


class ItemStore(Protocol):
    """Key-value items in namespaces (the LangGraph store), confined to scopes.

    An item is identified by (scope, namespace, key); its value is stored as one JSON text with its
    scalar leaves beside it for filters (``ItemFilter.pushed``). ``live_at`` (None: off) hides items
    whose TTL expired before that time.
    """

    async def write_items(
        self, puts: Sequence[ItemWrite], deletes: Sequence[tuple[Scope, tuple[str, ...], str]]
    ) -> None:
        """Insert or replace ``puts`` and delete ``deletes`` in ONE transaction: all or nothing."""
        ...

    async def get_item(
        self, scope: Scope, namespace: tuple[str, ...], key: str, *, live_at: datetime | None
    ) -> ItemRecord | None: ...

    async def list_items(
        self,
        scope: Scope,
        prefix: tuple[str, ...],
        where: ItemFilter,
        *,
        skip: int,
        limit: int,
        live_at: datetime | None,
    ) -> list[ItemRecord]:
        """Items under a namespace prefix that pass the pushed conditions, newest update first."""
        ...

    async def search_items(
        self,
        scope: Scope,
        prefix: tuple[str, ...],
        where: ItemFilter,
        embedding: Sequence[float],
        *,
        skip: int,
        limit: int,
        live_at: datetime | None,
    ) -> list[ItemRecord]:
        """Indexed items under a namespace prefix that pass the pushed conditions, by cosine (exact)."""
        ...

    async def refresh_items(self, scope: Scope, keys: Sequence[tuple[tuple[str, ...], str]]) -> int:
        """Restart the TTL of these items (those that have one); returns how many."""
        ...

    async def item_namespaces(
        self,
        scope: Scope,
        *,
        prefix: Sequence[str],
        suffix: Sequence[str],
        max_depth: int | None,
        skip: int,
        limit: int,
        live_at: datetime | None,
    ) -> list[tuple[str, ...]]:
        """Distinct namespaces (cut to ``max_depth``) matching prefix and suffix ('*' = any label)."""
        ...

    async def item_scopes(
        self, *, parts: Mapping[str, str | None], prefix: tuple[str, ...], skip: int, limit: int
    ) -> list[Scope]:
        """Scopes (matching the given parts: user_id, agent_id, run_id; None = any) holding items
        under a namespace prefix. Scope ids only: no item crosses scopes."""
        ...

    async def sweep_items(self, now: datetime, *, batch: int) -> int:
        """Delete up to ``batch`` items whose TTL expired before ``now``; returns how many."""
        ...


__all__ = ["HistoryStore", "ItemStore", "NoteStore"]
