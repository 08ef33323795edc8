"""The adapter's part of memory that changes over time (issue 28): the queries of ``cypher/updates/``
and their records. ``Neo4jNoteStore`` delegates its ``supersede``, ``conflict`` and ``timeline`` here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from graphmem.models import Scope, utcnow
from graphmem.models.timeline import TimelineEntry, TimelineRow, TimeRelation
from graphmem.store.records import native

if TYPE_CHECKING:
    from graphmem.store.neo4j_store import Neo4jNoteStore


async def relate(
    store: Neo4jNoteStore,
    query: str,
    ids: Mapping[str, str],
    scope: Scope,
    *,
    at: datetime,
    reason: str,
    p_yes: float | None,
    caused_by: str,
) -> bool:
    """One write of a relation in time between two notes of ``scope`` (``updates/supersede`` with
    newer_id/older_id, ``updates/conflict`` with note_id/other_id); False when nothing was written."""
    rows = await store.run_write(
        query, **ids, **scope.params(), at=at, reason=reason, p_yes=p_yes, now=utcnow(), caused_by=caused_by
    )
    return bool(rows)


def entry_from_record(rec: Mapping[str, Any]) -> TimelineEntry:
    event_time = native(rec.get("event_time"))
    return TimelineEntry(
        note_id=rec["id"],
        content=rec["content"],
        since=event_time or native(rec.get("created_at")),
        since_text=rec.get("event_time_text"),
        until=native(rec.get("valid_to")),
    )


def row_from_record(rec: Mapping[str, Any]) -> TimelineRow:
    return TimelineRow(
        note_id=rec["id"],
        since=native(rec["since"]),
        valid_to=native(rec.get("valid_to")),
        superseded_by=sorted(rec.get("superseded_by") or []),
        newer=[entry_from_record(x) for x in rec.get("newer") or []],
        older=[entry_from_record(x) for x in rec.get("older") or []],
        conflicts=[entry_from_record(x) for x in rec.get("conflicts") or []],
    )


async def timeline(store: Neo4jNoteStore, ids: Sequence[str], scope: Scope) -> list[TimelineRow]:
    if not ids:
        return []
    rows = await store.run("updates/timeline", ids=list(dict.fromkeys(ids)), **scope.params())
    return [row_from_record(r) for r in rows]


async def undo(store: Neo4jNoteStore, note_id: str, scope: Scope, *, dry_run: bool) -> int:
    rows = await store.run_write("updates/undo", note_id=note_id, **scope.params(), dry_run=dry_run)
    return int(rows[0]["removed"]) if rows else 0


async def clear(store: Neo4jNoteStore, scope: Scope) -> int:
    rows = await store.run_write("updates/clear", **scope.params())
    return int(rows[0]["removed"]) if rows else 0


async def chains(store: Neo4jNoteStore, scope: Scope, limit: int) -> list[tuple[TimelineEntry, list[TimelineEntry]]]:
    rows = await store.run("updates/chains", **scope.params(), limit=limit)
    out = []
    for r in rows:
        head = TimelineEntry(note_id=r["head"]["id"], content=r["head"]["content"], since=native(r["head"]["since"]))
        older = [
            TimelineEntry(note_id=x["id"], content=x["content"], since=native(x["since"]), until=native(x["until"]))
            for x in r["older"]
        ]
        out.append((head, older))
    return out


async def derive(store: Neo4jNoteStore, note_id: str, source_ids: Sequence[str], scope: Scope) -> list[str]:
    rows = await store.run_write(
        "updates/derive", note_id=note_id, **scope.params(), source_ids=list(source_ids), now=utcnow()
    )
    return [r["source_id"] for r in rows]


async def relations(store: Neo4jNoteStore, scope: Scope) -> dict[str, list[TimeRelation]]:
    """The scope's supersessions, conflicts and derivations, by the note each starts from."""
    out: dict[str, list[TimeRelation]] = {}
    for r in await store.run("updates/export", **scope.params()):
        rel = TimeRelation(
            type=r["type"],
            target_id=r["target_id"],
            at=native(r["at"]),
            reason=r["reason"],
            p_yes=r["p_yes"],
            created_at=native(r["created_at"]),
            caused_by=r["caused_by"],
        )
        out.setdefault(r["source_id"], []).append(rel)
    return out
