"""The Neo4j note store: implements ``ports.NoteStore`` on the query runner (``runner.py``: the
driver, the server's query line, named queries in managed or auto-commit transactions).

Scoped vector searches filter inside the index on 2026, and over-fetch (or scan a small scope
exactly) on 5.26. Writes that belong together run in one managed transaction, which the driver
retries on transient errors (deadlocks, leader changes); the transaction functions here are pure
database work, so a retry is safe. LLM calls and embeddings happen before, in the service. Records
are mapped in ``records.py``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Self

from neo4j import AsyncManagedTransaction

from graphmem.config import Settings
from graphmem.errors import StaleWriteError
from graphmem.models import (
    FOLLOWS_REASON,
    AddEffects,
    AddOutcome,
    AddWrite,
    EnrichmentStatus,
    Link,
    Note,
    NoteState,
    NoteVersion,
    Restore,
    Scope,
    UndoOutcome,
    UndoWrite,
    utcnow,
)
from graphmem.models.timeline import TimelineEntry, TimelineRow, TimeRelation
from graphmem.store import updates
from graphmem.store.fulltext import lucene_query
from graphmem.store.note_search import EXACT_SCAN_MAX, IN_INDEX_OVER_FETCH, NoteSearch
from graphmem.store.records import (
    content_sha,
    evolution_from_record,
    link_from_record,
    link_row,
    note_from_record,
    note_params,
    state_from_record,
    version_from_record,
)
from graphmem.store.runner import QueryTable, Rows, connect, mapped

log = logging.getLogger(__name__)


class Neo4jNoteStore(NoteSearch):
    """Async note store: a query runner (``runner.py``) with the note queries: the searches
    (``note_search.py``), writes, reads, versions. Construct with ``from_settings``; no I/O in
    __init__ (the arguments are ``NoteSearch``'s)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        driver, database, uri, username = connect(settings)
        return cls(
            driver,
            database,
            uri,
            username=username,
            in_index_over_fetch=settings.in_index_over_fetch,
            exact_scan_max=settings.exact_scan_max_notes,
        )

    # --- writes ---------------------------------------------------------------------------------

    async def add(self, write: AddWrite) -> AddOutcome:
        """Write a note with its links and neighbour evolutions in ONE transaction: ``add_group`` of
        one write, so the add's Cypher exists once (``notes/add_group``).

        When the id already exists in this scope nothing is written (idempotent add). Ids are unique
        per scope: another scope's note with the same id is another note, never seen. Links and
        evolutions reach only notes of the note's scope (the query matches the scope), whatever the
        caller passes.
        """
        (outcome,) = await self.add_group([write])
        return outcome

    async def add_group(self, writes: Sequence[AddWrite]) -> list[AddOutcome]:
        """Several adds in ONE statement and transaction, applied in list order (a later write sees
        the earlier ones: it may link to or evolve their notes). All or nothing: when an update
        names an ``expected_version`` and its neighbour is gone or at another version, nothing is
        written and StaleWriteError is raised. Each write is confined to its note's scope, as in
        ``add``; an id already stored in its scope writes nothing of that write (``created`` False).
        """
        if not writes:
            return []
        now = utcnow()
        rows = [
            {
                "note": note_params(w.note, w.variant),
                "embedding": w.embedding,
                "updates": [
                    {
                        "id": u.note_id,
                        "uid": uuid.uuid4().hex,
                        "context": u.context,
                        "tags": u.tags,
                        "keywords": u.keywords,
                        "embedding": u.embedding,
                        "expected_version": u.expected_version,
                    }
                    for u in w.updates
                ],
                "links": [link_row(x) for x in w.links],
            }
            for w in writes
        ]
        q = self.query("notes/add_group")

        async def work(tx: AsyncManagedTransaction) -> list[AddOutcome]:
            out = await self._rows(tx, q, {"writes": rows, "now": now})
            outcomes: list[AddOutcome] = []
            for w, row in zip(writes, out, strict=True):
                if not row["created"]:
                    outcomes.append(AddOutcome(created=False))
                    continue
                versions = {v["id"]: v["version"] for v in row["versions"]}
                stale = [v["id"] for v in row["versions"] if not v["ok"]]
                stale += [u.note_id for u in w.updates if u.expected_version is not None and u.note_id not in versions]
                if stale:  # raised inside the transaction function: the driver rolls it back
                    raise StaleWriteError(f"neighbours changed or gone since the plan: {sorted(stale)[:5]}")
                outcomes.append(
                    AddOutcome(created=True, links=_written(w.links, row["links"], now, w.note.id), versions=versions)
                )
            return outcomes

        return await self._in_write(work)

    async def add_many(self, notes: Sequence[Note], embeddings: Sequence[Sequence[float]], variant: str) -> list[str]:
        """Bulk raw import in one transaction per call; returns the ids created (ids already in the
        note's scope are skipped)."""
        rows = [{**note_params(n, variant), "embedding": list(e)} for n, e in zip(notes, embeddings, strict=True)]
        out = await self.run_write("notes/create_many", rows=rows)
        return list(out[0]["created_ids"]) if out else []

    async def add_follows(
        self,
        pairs: Sequence[tuple[str, str]],
        scope: Scope,
        *,
        reason: str = FOLLOWS_REASON,
        strength: float = 1.0,
        batch: int = 5000,
    ) -> int:
        """FOLLOWS links (source after target) inside the scope, in bounded transactions; idempotent
        (MERGE). Returns the number written; a pair whose notes are not both in the scope writes nothing."""
        total = 0
        now = utcnow()
        for start in range(0, len(pairs), batch):
            chunk = [{"source_id": s, "target_id": t} for s, t in pairs[start : start + batch]]
            rows = await self.run_write(
                "links/follows_many", pairs=chunk, **scope.params(), now=now, reason=reason, strength=strength
            )
            total += int(rows[0]["created"]) if rows else 0
        return total

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
        rows = await self.run_write(
            "notes/revise",
            id=note_id,
            **scope.params(),
            uid=uuid.uuid4().hex,
            now=utcnow(),
            changed_by=changed_by,
            content=content,
            content_sha=content_sha(content),
            context=context,
            tags=tags,
            keywords=keywords,
            enrichment=enrichment.value,
            embedding=embedding,
        )
        return rows[0]["version"] if rows else None

    async def create_links(self, source_id: str, scope: Scope, links: Sequence[Link], caused_by: str) -> list[Link]:
        """The links written: the query writes only between notes of the scope (source and target)."""
        now = utcnow()
        rows = await self.run_write(
            "links/create",
            source_id=source_id,
            **scope.params(),
            links=[link_row(x) for x in links],
            now=now,
            caused_by=caused_by,
        )
        return _written(links, rows, now, caused_by)

    async def delete(self, note_id: str, scope: Scope) -> bool:
        rows = await self.run_write("notes/delete", id=note_id, **scope.params())
        return bool(rows and rows[0]["deleted"])

    async def touch(self, counts: Mapping[str, int], scope: Scope) -> None:
        """Add to the notes' retrieval counts (id -> times retrieved) and set last_accessed."""
        hits = [{"id": i, "times": n} for i, n in counts.items()]
        await self.run_write("notes/touch", hits=hits, **scope.params(), now=utcnow())

    # --- reads ----------------------------------------------------------------------------------

    async def get(self, note_id: str, scope: Scope, *, with_embedding: bool = False) -> Note | None:
        name = "notes/get_with_embedding" if with_embedding else "notes/get"
        rows = await self.run(name, id=note_id, **scope.params())
        return note_from_record(rows[0]["note"]) if rows else None

    async def find_by_content(self, content: str, scope: Scope) -> str | None:
        rows = await self.run("notes/find_by_content", content_sha=content_sha(content), **scope.params())
        return rows[0]["id"] if rows else None

    async def find_by_source(self, source_ids: Sequence[str], scope: Scope) -> dict[str, str]:
        rows = await self.run("notes/find_by_source", source_ids=list(source_ids), **scope.params())
        return {r["source_id"]: r["id"] for r in rows}

    async def existing_ids(self, ids: Sequence[str], scope: Scope) -> set[str]:
        rows = await self.run("notes/existing_ids", ids=list(ids), **scope.params())
        return {r["id"] for r in rows}

    async def list_notes(self, scope: Scope, *, limit: int, offset: int) -> list[Note]:
        rows = await self.run("notes/list", **scope.params(), skip=offset, limit=limit)
        return await mapped([r["note"] for r in rows], note_from_record)

    async def export(self, scope: Scope, *, limit: int, offset: int) -> list[tuple[Note, list[Link]]]:
        rows = await self.run("notes/export", **scope.params(), skip=offset, limit=limit)

        def entry(r: dict[str, Any]) -> tuple[Note, list[Link]]:
            note = note_from_record(r["note"])
            return note, [link_from_record(x, source_id=note.id) for x in r["links"]]

        return await mapped(rows, entry)

    async def count(self, scope: Scope) -> int:
        rows = await self.run("notes/count", **scope.params())
        return int(rows[0]["count"])

    async def pending(self, scope: Scope, limit: int) -> list[str]:
        rows = await self.run("notes/pending", **scope.params(), limit=limit)
        return [r["id"] for r in rows]

    async def history(self, note_id: str, scope: Scope, *, limit: int, offset: int = 0) -> list[NoteVersion]:
        rows = await self.run("notes/history", id=note_id, **scope.params(), skip=offset, limit=limit)
        return await mapped([r["version"] for r in rows], version_from_record)

    async def links(self, note_id: str, scope: Scope, *, limit: int, offset: int = 0) -> list[Link]:
        rows = await self.run("links/of_note", id=note_id, **scope.params(), skip=offset, limit=limit)
        return await mapped(rows, link_from_record)

    # --- versions: rollback and undo of an add -----------------------------------------------------

    async def version(self, note_id: str, scope: Scope, version: int) -> NoteVersion | None:
        rows = await self.run("versions/get", id=note_id, **scope.params(), version=version)
        return version_from_record(rows[0]["version"]) if rows else None

    async def version_states(
        self, note_id: str, scope: Scope, *, limit: int, offset: int
    ) -> tuple[list[NoteVersion], NoteState] | None:
        rows = await self.run("versions/states", id=note_id, **scope.params(), skip=offset, limit=limit)
        if not rows:
            return None
        return [version_from_record(v) for v in rows[0]["versions"]], state_from_record(rows[0]["current"])

    @staticmethod
    def _restore_params(restore: Restore, scope: Scope, now: Any) -> dict[str, Any]:
        return {
            "id": restore.note_id,
            **scope.params(),
            "version": restore.version.version,
            "expected_version": restore.expected_version,
            "content": restore.version.content,
            "content_sha": content_sha(restore.version.content),
            "uid": uuid.uuid4().hex,
            "now": now,
            "changed_by": restore.changed_by,
            "embedding": restore.embedding,
        }

    async def restore(self, restore: Restore, scope: Scope) -> int | None:
        rows = await self.run_write("versions/restore", **self._restore_params(restore, scope, utcnow()))
        return int(rows[0]["version"]) if rows else None

    async def add_effects(self, note_id: str, scope: Scope) -> AddEffects:
        links_q, evolutions_q = self.query("undo/links"), self.query("undo/evolutions")

        async def work(tx: AsyncManagedTransaction) -> AddEffects:
            head = (await self._rows(tx, links_q, {"id": note_id, **scope.params()}))[0]
            evolved = await self._rows(tx, evolutions_q, {"id": note_id, **scope.params()})
            return AddEffects(
                note_exists=bool(head["exists"]),
                links=[link_from_record(x) for x in head["links"]],
                evolutions=[evolution_from_record(r) for r in evolved],
            )

        return await self._in_read(work)

    async def undo(self, write: UndoWrite) -> UndoOutcome:
        """Remove the add's links, restore its neighbours (each only if still at the version planned)
        and delete the note on request, in ONE transaction; every query matches the write's scope."""
        scope = write.scope.params()
        remove, restore = self.query("undo/remove_links"), self.query("versions/restore")
        delete = self.query("undo/delete_note")
        now = utcnow()

        async def work(tx: AsyncManagedTransaction) -> UndoOutcome:
            removed = await self._rows(tx, remove, {"id": write.note_id, **scope, "keep_follows": write.keep_follows})
            restored: dict[str, int] = {}
            for r in write.restores:
                rows = await self._rows(tx, restore, self._restore_params(r, write.scope, now))
                if rows:
                    restored[r.note_id] = int(rows[0]["version"])
            deleted: Rows = []
            if write.delete_note:
                deleted = await self._rows(tx, delete, {"id": write.note_id, **scope})
            return UndoOutcome(
                links_removed=[link_from_record(x) for x in removed],
                restored=restored,
                note_deleted=bool(deleted),
                links_removed_with_note=int(deleted[0]["links"]) if deleted else 0,
            )

        return await self._in_write(work)

    async def scopes(self, user_id: str | None, limit: int = 10_000) -> list[Scope]:
        rows = await self.run("admin/scopes", user_id=user_id, limit=limit)
        out = []
        for r in rows:
            try:
                out.append(Scope(**r))
            except ValueError:  # e.g. "zz\n", stored before issue 16 closed that hole: unreachable, skipped
                log.warning("skipping a stored scope that is no longer valid: %r", tuple(r.values()))
        return out

    async def note_count(self) -> int:
        rows = await self.run("admin/health")
        return int(rows[0]["notes"])

    # --- memory that changes over time (issue 28; store/updates.py, cypher/updates/) ---------------

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
        ids = {"newer_id": newer_id, "older_id": older_id}
        return await updates.relate(
            self, "updates/supersede", ids, scope, at=at, reason=reason, p_yes=p_yes, caused_by=caused_by
        )

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
        ids = {"note_id": note_id, "other_id": other_id}
        return await updates.relate(
            self, "updates/conflict", ids, scope, at=at, reason=reason, p_yes=p_yes, caused_by=caused_by
        )

    async def timeline(self, ids: Sequence[str], scope: Scope) -> list[TimelineRow]:
        return await updates.timeline(self, ids, scope)

    async def undo_updates(self, note_id: str, scope: Scope, *, dry_run: bool = False) -> int:
        return await updates.undo(self, note_id, scope, dry_run=dry_run)

    async def mark_judged(self, note_id: str, scope: Scope) -> None:
        await self.run_write("updates/mark_judged", note_id=note_id, **scope.params(), now=utcnow())

    async def unjudged(self, ids: Sequence[str], scope: Scope) -> set[str]:
        return {r["id"] for r in await self.run("updates/unjudged", ids=list(ids), **scope.params())}

    async def clear_updates(self, scope: Scope) -> int:
        return await updates.clear(self, scope)

    async def chains(self, scope: Scope, limit: int = 1000) -> list[tuple[TimelineEntry, list[TimelineEntry]]]:
        return await updates.chains(self, scope, limit)

    async def derive(self, note_id: str, source_ids: Sequence[str], scope: Scope) -> list[str]:
        return await updates.derive(self, note_id, source_ids, scope)

    async def time_relations(self, scope: Scope) -> dict[str, list[TimeRelation]]:
        return await updates.relations(self, scope)


def _written(links: Sequence[Link], rows: Rows, now: Any, caused_by: str) -> list[Link]:
    """The links ``links/create`` reported as written, with the defaults the query applied."""
    done = {(r["target_id"], r["type"]) for r in rows}
    return [
        x.model_copy(update={"created_at": x.created_at or now, "caused_by": x.caused_by or caused_by})
        for x in links
        if (x.target_id, x.type.value) in done
    ]


__all__ = ["EXACT_SCAN_MAX", "IN_INDEX_OVER_FETCH", "Neo4jNoteStore", "QueryTable", "lucene_query"]
