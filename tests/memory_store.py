"""An in-memory ``ports.NoteStore`` for fast tests of the service (the add steps, the ingest's order
and rebase rules), and a word-hashing embedder to go with it. No Neo4j, no model files.

It keeps the rules the Neo4j store keeps and the service relies on, checked against both stores by
``tests/integration/test_note_store_contract.py``: ids unique per scope, an add idempotent by id and
confined to its scope (links and evolutions reach only notes of the note's scope), every evolution
and revision keeping the values it replaced as a version, a group write applied in order and all or
nothing (``StaleWriteError`` when a neighbour moved past ``expected_version``), vector search by
cosine inside the scope. Full-text search is shared content words (a stand-in for BM25); what the add path does not use
(one-hop search, link expansion, export, rollback and undo) raises ``NotImplementedError``.
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from langchain_core.embeddings import Embeddings

from graphmem.errors import StaleWriteError
from graphmem.models import (
    FOLLOWS_REASON,
    TEXT_FIELDS,
    AddEffects,
    AddOutcome,
    AddWrite,
    EnrichmentStatus,
    Link,
    LinkedNote,
    LinkType,
    NeighbourUpdate,
    Note,
    NoteState,
    NoteVersion,
    Restore,
    Scope,
    SearchFilters,
    TextField,
    TextMatch,
    UndoOutcome,
    UndoWrite,
    utcnow,
)
from graphmem.service.text import cosine
from graphmem.service.wording import content_words

Key = tuple[Scope, str]  # (scope, note id): ids are unique per scope
LinkKey = tuple[Scope, str, str, LinkType]  # (scope, source, target, type): one link per triple


class MemoryNoteStore:
    """``ports.NoteStore`` in dictionaries (see the module docstring for what it implements)."""

    def __init__(self) -> None:
        self.notes: dict[Key, Note] = {}  # each with its embedding
        self.versions: dict[Key, list[NoteVersion]] = {}
        self.link_rows: dict[LinkKey, Link] = {}

    # --- lifecycle ---

    async def verify(self) -> dict[str, str]:
        return {"name": "memory", "version": "0", "edition": "test", "line": "5.26", "language": "none"}

    async def close(self) -> None:
        return None

    # --- writes ---

    async def add(self, write: AddWrite) -> AddOutcome:
        return self._add(write, check_versions=False)

    async def add_group(self, writes: Sequence[AddWrite]) -> list[AddOutcome]:
        saved = copy.deepcopy((self.notes, self.versions, self.link_rows))
        try:
            return [self._add(w, check_versions=True) for w in writes]
        except StaleWriteError:
            self.notes, self.versions, self.link_rows = saved  # all or nothing
            raise

    def _add(self, write: AddWrite, *, check_versions: bool) -> AddOutcome:
        note, scope = write.note, write.note.scope
        if (scope, note.id) in self.notes:
            return AddOutcome(created=False)
        self.notes[(scope, note.id)] = note.model_copy(
            deep=True, update={"embedding": list(write.embedding), "version": 1, "retrieval_count": 0}
        )
        now = utcnow()
        versions: dict[str, int] = {}
        for u in write.updates:
            neighbour = self.notes.get((scope, u.note_id))
            stale = neighbour is None or neighbour.version != u.expected_version
            if check_versions and u.expected_version is not None and stale:
                raise StaleWriteError(f"neighbours changed or gone since the plan: [{u.note_id!r}]")
            if neighbour is not None:
                versions[u.note_id] = self._evolve(neighbour, u, now, caused_by=note.id)
        written = self._links(note.id, scope, write.links, caused_by=note.id, now=now)
        return AddOutcome(created=True, links=written, versions=versions)

    def _evolve(self, n: Note, u: NeighbourUpdate, now: datetime, *, caused_by: str) -> int:
        self._keep_version(n, now, caused_by)
        n.context, n.tags, n.keywords = u.context, list(u.tags), list(u.keywords)
        if u.embedding is not None:  # None: the neighbour keeps its search vector
            n.embedding = list(u.embedding)
        n.version += 1
        n.updated_at = now
        return n.version

    def _keep_version(self, n: Note, now: datetime, changed_by: str) -> None:
        self.versions.setdefault((n.scope, n.id), []).append(
            NoteVersion(
                version=n.version,
                context=n.context,
                tags=list(n.tags),
                keywords=list(n.keywords),
                content=n.content,
                replaced_at=now,
                changed_by=changed_by,
            )
        )

    def _links(
        self, source_id: str, scope: Scope, links: Sequence[Link], *, caused_by: str, now: datetime
    ) -> list[Link]:
        if (scope, source_id) not in self.notes:
            return []
        written = []
        for x in links:
            if x.target_id == source_id or (scope, x.target_id) not in self.notes:
                continue  # the other end is not a note of this scope: nothing is written
            link = x.model_copy(
                update={
                    "source_id": source_id,
                    "created_at": x.created_at or now,
                    "caused_by": x.caused_by or caused_by,
                }
            )
            self.link_rows[(scope, source_id, x.target_id, x.type)] = link
            written.append(link)
        return written

    async def add_many(self, notes: Sequence[Note], embeddings: Sequence[Sequence[float]], variant: str) -> list[str]:
        created = []
        for note, vec in zip(notes, embeddings, strict=True):
            if (note.scope, note.id) not in self.notes:
                self.notes[(note.scope, note.id)] = note.model_copy(deep=True, update={"embedding": list(vec)})
                created.append(note.id)
        return created

    async def add_follows(
        self, pairs: Sequence[tuple[str, str]], scope: Scope, *, reason: str = FOLLOWS_REASON, strength: float = 1.0
    ) -> int:
        now = utcnow()
        follows = [
            (s, Link(source_id=s, target_id=t, type=LinkType.FOLLOWS, reason=reason, strength=strength))
            for s, t in pairs
        ]
        return sum(len(self._links(s, scope, [link], caused_by=s, now=now)) for s, link in follows)

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
        n = self.notes.get((scope, note_id))
        if n is None:
            return None
        now = utcnow()
        self._keep_version(n, now, changed_by)
        n.content, n.context, n.tags, n.keywords = content, context, list(tags), list(keywords)
        n.enrichment, n.embedding, n.updated_at = enrichment, list(embedding), now
        n.version += 1
        return n.version

    async def create_links(self, source_id: str, scope: Scope, links: Sequence[Link], caused_by: str) -> list[Link]:
        return self._links(source_id, scope, links, caused_by=caused_by, now=utcnow())

    async def delete(self, note_id: str, scope: Scope) -> bool:
        if self.notes.pop((scope, note_id), None) is None:
            return False
        self.versions.pop((scope, note_id), None)
        for key in [k for k in self.link_rows if k[0] == scope and note_id in (k[1], k[2])]:
            del self.link_rows[key]
        return True

    async def touch(self, counts: Mapping[str, int], scope: Scope) -> None:
        now = utcnow()
        for note_id, count in counts.items():
            n = self.notes.get((scope, note_id))
            if n is not None:
                n.retrieval_count += count
                n.last_accessed = now

    # --- reads ---

    def _in(self, scope: Scope) -> list[Note]:
        return [n for (s, _), n in self.notes.items() if s == scope]

    @staticmethod
    def _out(n: Note, with_embedding: bool = False) -> Note:
        return n.model_copy(deep=True, update={} if with_embedding else {"embedding": None})

    async def get(self, note_id: str, scope: Scope, *, with_embedding: bool = False) -> Note | None:
        n = self.notes.get((scope, note_id))
        return None if n is None else self._out(n, with_embedding)

    async def find_by_content(self, content: str, scope: Scope) -> str | None:
        return next((n.id for n in self._in(scope) if n.content == content), None)

    async def find_by_source(self, source_ids: Sequence[str], scope: Scope) -> dict[str, str]:
        wanted = set(source_ids)
        return {n.source_id: n.id for n in self._in(scope) if n.source_id in wanted}

    async def existing_ids(self, ids: Sequence[str], scope: Scope) -> set[str]:
        return {i for i in ids if (scope, i) in self.notes}

    async def list_notes(self, scope: Scope, *, limit: int, offset: int) -> list[Note]:
        newest = sorted(self._in(scope), key=lambda n: (n.created_at, n.id), reverse=True)
        return [self._out(n) for n in newest[offset : offset + limit]]

    async def export(self, scope: Scope, *, limit: int, offset: int) -> list[tuple[Note, list[Link]]]:
        raise NotImplementedError("export: not needed by the add path")

    async def count(self, scope: Scope) -> int:
        return len(self._in(scope))

    async def pending(self, scope: Scope, limit: int) -> list[str]:
        return [n.id for n in self._in(scope) if n.enrichment == EnrichmentStatus.PENDING][:limit]

    async def history(self, note_id: str, scope: Scope, *, limit: int, offset: int = 0) -> list[NoteVersion]:
        return list(self.versions.get((scope, note_id), []))[offset : offset + limit]

    async def version(self, note_id: str, scope: Scope, version: int) -> NoteVersion | None:
        return next((v for v in self.versions.get((scope, note_id), []) if v.version == version), None)

    async def version_states(
        self, note_id: str, scope: Scope, *, limit: int, offset: int
    ) -> tuple[list[NoteVersion], NoteState] | None:
        raise NotImplementedError("version_states: not needed by the add path")

    async def restore(self, restore: Restore, scope: Scope) -> int | None:
        raise NotImplementedError("restore: not needed by the add path")

    async def add_effects(self, note_id: str, scope: Scope) -> AddEffects:
        raise NotImplementedError("add_effects: not needed by the add path")

    async def undo(self, write: UndoWrite) -> UndoOutcome:
        raise NotImplementedError("undo: not needed by the add path")

    async def links(self, note_id: str, scope: Scope, *, limit: int, offset: int = 0) -> list[Link]:
        touching = [x for (s, a, b, _), x in self.link_rows.items() if s == scope and note_id in (a, b)]
        touching.sort(key=lambda x: (x.created_at or utcnow(), x.source_id, x.target_id))
        return touching[offset : offset + limit]

    async def scopes(self, user_id: str | None, limit: int = 10_000) -> list[Scope]:
        found = {s for s, _ in self.notes if user_id is None or s.user_id == user_id}
        return sorted(found, key=lambda s: (s.user_id, s.agent_id, s.run_id))[:limit]

    async def note_count(self) -> int:
        return len(self.notes)

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
    ) -> list[tuple[Note, float]]:
        if filters is not None:
            raise NotImplementedError("search filters: not needed by the add path")
        skip = set(exclude_ids)
        scored = [
            (self._out(n), cosine(embedding, n.embedding))
            for n in self._in(scope)
            if n.id not in skip and n.embedding is not None
        ]
        scored.sort(key=lambda x: (-x[1], x[0].id))
        return scored[: max(k, 0)]

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
        raise NotImplementedError("one-hop search: not needed by the add path")

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
        """Notes that share the query's content words, most shared first (a stand-in for BM25 that
        reads the content only); with ``common_share``, words in more than that share of the scope's
        notes are left out."""
        if "content" not in fields:
            return []
        mine = [n for (sc, _), n in self.notes.items() if sc == scope]
        words = content_words(text)
        if common_share is not None and mine:
            words = {w for w in words if sum(w in content_words(n.content) for n in mine) <= common_share * len(mine)}
        scored = [(len(words & content_words(n.content)), n) for n in mine]
        ranked = sorted(((c, n) for c, n in scored if c > 0), key=lambda x: (-x[0], x[1].id))
        return [TextMatch(note=self._out(n), score=float(c)) for c, n in ranked[:k]]

    async def expand_links(
        self, ids: Sequence[str], scope: Scope, per_hit: int, exclude_ids: Sequence[str]
    ) -> list[LinkedNote]:
        raise NotImplementedError("link expansion: not needed by the add path")


class WordEmbeddings(Embeddings):
    """Bag-of-words vectors (each lower-cased word hashed into one of ``dimensions`` slots, then
    normalised): texts that share words are near, deterministic, no model files."""

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions

    def embed_query(self, text: str) -> list[float]:
        vec = [0.0] * self.dimensions
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dimensions] += 1.0
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        return [x / norm for x in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]
