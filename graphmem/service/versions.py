"""A note's versions: readable diffs between consecutive versions, rollback to an earlier version,
and undo of everything one add caused (the links it made, the evolutions it made to neighbours).

History is append-only. A rollback is a new version whose ``changed_by`` is ``rollback:<version>``;
each evolution an undo reverts is a new version of that neighbour with ``undo:<note id>``.

The rule that keeps an undo from losing a later change: a neighbour is reverted to the version
before the add's evolution only while its content, context, tags and keywords are still exactly
what that evolution wrote. Otherwise (an update, another note's evolution, a rollback changed it
since) the undo refuses that neighbour and says what changed it; an explicit ``rollback`` to the
version named in the refusal is the way to override, and it too is a new version.

Functions of the store port and an embedding function, not of the service (like ``transfer``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from difflib import SequenceMatcher

from graphmem.errors import ConflictError, InvalidInputError, NoteNotFoundError, VersionNotFoundError
from graphmem.models import (
    LIMITS,
    ROLLBACK_CAUSE,
    UNDO_CAUSE,
    VERSIONED_FIELDS,
    ChangeKind,
    EvolutionTrace,
    FieldDiff,
    Link,
    LinkType,
    NeighbourRevert,
    Note,
    NoteState,
    NoteVersion,
    Restore,
    RollbackResult,
    Scope,
    TextOp,
    UndoResult,
    UndoWrite,
    VersionDiff,
    check_bound,
    check_id,
    describe_change,
    is_change_label,
    utcnow,
)
from graphmem.ports import NoteStore

Embed = Callable[[Sequence[str]], Awaitable[list[list[float]]]]
EmbedText = Callable[[Note], str]

# A word with the whitespace after it: a diff of these keeps the spacing and reads as words.
_WORDS = re.compile(r"\s+|\S+\s*")


# --- diffs (pure) ---------------------------------------------------------------------------------


def text_ops(before: str, after: str) -> list[TextOp]:
    """A word diff: runs of kept, removed and added text that rebuild ``before`` (equal + delete)
    and ``after`` (equal + insert)."""
    a, b = _WORDS.findall(before), _WORDS.findall(after)
    ops: list[TextOp] = []

    def put(op: str, words: Sequence[str]) -> None:
        text = "".join(words)
        if not text:
            return
        if ops and ops[-1].op == op:
            ops[-1] = TextOp(op=ops[-1].op, text=ops[-1].text + text)
        else:
            ops.append(TextOp.model_validate({"op": op, "text": text}))

    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            put("equal", a[i1:i2])
        else:  # replace = delete + insert
            put("delete", a[i1:i2])
            put("insert", b[j1:j2])
    return ops


def field_diffs(before: NoteState, after: NoteState) -> list[FieldDiff]:
    """The fields that differ, in the order content, context, tags, keywords."""
    out: list[FieldDiff] = []
    for name in VERSIONED_FIELDS:
        old, new = getattr(before, name), getattr(after, name)
        if old == new:
            continue
        if isinstance(old, str):
            out.append(FieldDiff(field=name, before=old, after=new, ops=text_ops(old, new)))
        else:
            kept_old, kept_new = set(old), set(new)
            out.append(
                FieldDiff(
                    field=name,
                    before=list(old),
                    after=list(new),
                    added=[x for x in new if x not in kept_old],
                    removed=[x for x in old if x not in kept_new],
                )
            )
    return out


def step(before: NoteState, after: NoteState, changed_by: str | None, changed_at: datetime | None) -> VersionDiff:
    """One step of history, with what caused it read from ``changed_by``."""
    kind = ChangeKind.of(changed_by)
    cause = restored = None
    if kind == ChangeKind.EVOLUTION:
        cause = changed_by
    elif kind == ChangeKind.UNDO and changed_by is not None:
        cause = changed_by.removeprefix(UNDO_CAUSE)
    elif kind == ChangeKind.ROLLBACK and changed_by is not None:
        tail = changed_by.removeprefix(ROLLBACK_CAUSE)
        restored = int(tail) if tail.isdigit() else None
    return VersionDiff(
        from_version=before.version,
        to_version=after.version,
        changed_at=changed_at,
        changed_by=changed_by,
        change=kind,
        cause_note_id=cause,
        restored_version=restored,
        fields=field_diffs(before, after),
    )


def diff_states(versions: Sequence[NoteVersion], now: NoteState | None) -> list[VersionDiff]:
    """Diffs between consecutive versions (oldest first), the last one against ``now`` when given.
    Paired by order, not by number: an imported note's history may start above version 1."""
    states = [NoteState.of(v) for v in versions] + ([now] if now is not None else [])
    return [
        step(states[i], states[i + 1], versions[i].changed_by, versions[i].replaced_at) for i in range(len(states) - 1)
    ]


def check_page(limit: int, offset: int) -> None:
    check_bound(limit, 1, LIMITS.history_page_max, "limit")
    check_bound(offset, 0, LIMITS.offset_max, "offset")


# --- reads ----------------------------------------------------------------------------------------


async def history_diff(store: NoteStore, note_id: str, scope: Scope, *, limit: int, offset: int) -> list[VersionDiff]:
    """Steps ``offset`` .. ``offset + limit - 1`` of the note's history, oldest first; the last step
    of the last page ends at the note as it is now."""
    check_id(note_id, "note id")
    check_page(limit, offset)
    page = await store.version_states(note_id, scope, limit=limit + 1, offset=offset)
    if page is None:
        raise NoteNotFoundError(note_id)
    versions, now = page
    if len(versions) > limit:  # limit + 1 versions make limit steps; the page ends before the present
        return diff_states(versions, None)
    return diff_states(versions, now)


# --- rollback -------------------------------------------------------------------------------------


def _with_values(note: Note, values: NoteVersion) -> Note:
    return note.model_copy(
        update={
            "content": values.content,
            "context": values.context,
            "tags": list(values.tags),
            "keywords": list(values.keywords),
        }
    )


async def rollback(
    store: NoteStore, embed: Embed, embed_text: EmbedText, note_id: str, scope: Scope, version: int
) -> RollbackResult:
    """The note's content, context, tags and keywords back to an earlier version's, re-embedded,
    written as a new version (``changed_by``: ``rollback:<version>``)."""
    check_id(note_id, "note id")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InvalidInputError("version must be an integer >= 1")
    note = await store.get(note_id, scope)
    if note is None:
        raise NoteNotFoundError(note_id)
    if version == note.version:
        raise InvalidInputError(f"note {note_id!r} is at version {version} already")
    target = await store.version(note_id, scope, version)
    if target is None:
        raise VersionNotFoundError(note_id, version)
    restored = _with_values(note, target)
    (embedding,) = await embed([embed_text(restored)])
    cause = f"{ROLLBACK_CAUSE}{version}"
    new_version = await store.restore(
        Restore(note_id=note_id, version=target, expected_version=note.version, embedding=embedding, changed_by=cause),
        scope,
    )
    if new_version is None:
        if await store.get(note_id, scope) is None:
            raise NoteNotFoundError(note_id)
        raise ConflictError(f"note {note_id!r} changed while it was rolled back; nothing written, try again")
    now = utcnow()
    restored.version, restored.updated_at = new_version, now
    return RollbackResult(
        note=restored,
        restored_version=version,
        diff=step(NoteState.of(note), NoteState.of(restored), cause, now),
    )


# --- undo of an add -------------------------------------------------------------------------------


def decide_revert(trace: EvolutionTrace) -> NeighbourRevert:
    """Revert a neighbour only while it holds exactly what the add's evolution wrote (pure)."""
    k = trace.before.version
    later = [c or ChangeKind.UNKNOWN.value for _, c in trace.later]
    base = {
        "note_id": trace.note_id,
        "restored_version": k,
        "evolved_version": trace.after.version,
        "current_version": trace.current.version,
        "later_changes": later,
    }
    if trace.current.same_values(NoteState.of(trace.before)):
        return NeighbourRevert(
            **base, status="already_undone", reason=f"its values are those of version {k} (before the add) already"
        )
    if trace.current.same_values(trace.after):
        reason = "" if not later else "changed since, but back to what the add's evolution wrote"
        return NeighbourRevert(**base, status="reverted", reason=reason)
    since = "; ".join(describe_change(c) for _, c in trace.later) or "unknown"
    return NeighbourRevert(
        **base,
        status="refused",
        reason=f"changed since the add evolved it ({since}): not reverted, so that change is kept; "
        f"roll it back to version {k} explicitly if that is wanted",
    )


def _undone_links(links: Sequence[Link], note_id: str, keep_follows: bool) -> list[Link]:
    return [x for x in links if x.caused_by == note_id and not (keep_follows and x.type == LinkType.FOLLOWS)]


async def undo_add(
    store: NoteStore,
    embed: Embed,
    embed_text: EmbedText,
    note_id: str,
    scope: Scope,
    *,
    delete_note: bool = False,
    keep_follows: bool = False,
    dry_run: bool = False,
) -> UndoResult:
    """Undo what the add of ``note_id`` caused: remove the links it made (``caused_by``), revert the
    neighbours it evolved (see ``decide_revert``), and with ``delete_note`` delete the note. One
    write transaction; ``dry_run`` reports the same without writing."""
    check_id(note_id, "note id")
    if is_change_label(note_id):
        raise InvalidInputError(
            f"{note_id!r} reads as a change label (update, repair, manual, rollback:N, undo:ID), "
            "so its versions and links cannot be told apart from an add's: undo it by hand (rollback, delete)"
        )
    effects = await store.add_effects(note_id, scope)
    if not effects.note_exists and not effects.evolutions:
        raise NoteNotFoundError(note_id)
    decisions = [decide_revert(t) for t in effects.evolutions]
    if dry_run:
        undone = _undone_links(effects.links, note_id, keep_follows)
        goes = delete_note and effects.note_exists
        return UndoResult(
            note_id=note_id,
            dry_run=True,
            links_removed=undone,
            neighbours=decisions,
            note_deleted=goes,
            links_removed_with_note=len(effects.links) - len(undone) if goes else 0,
        )
    traces = {t.note_id: t for t in effects.evolutions}
    to_revert = [d for d in decisions if d.status == "reverted"]
    restored_notes = [
        _with_values(
            Note(id=d.note_id, content=traces[d.note_id].before.content, scope=scope), traces[d.note_id].before
        )
        for d in to_revert
    ]
    vectors = await embed([embed_text(n) for n in restored_notes])
    cause = f"{UNDO_CAUSE}{note_id}"
    outcome = await store.undo(
        UndoWrite(
            note_id=note_id,
            scope=scope,
            restores=[
                Restore(
                    note_id=d.note_id,
                    version=traces[d.note_id].before,
                    expected_version=d.current_version,
                    embedding=v,
                    changed_by=cause,
                )
                for d, v in zip(to_revert, vectors, strict=True)
            ],
            keep_follows=keep_follows,
            delete_note=delete_note,
        )
    )
    for d in to_revert:
        if d.note_id in outcome.restored:
            d.new_version = outcome.restored[d.note_id]
        else:  # changed between the plan and the write (the store checked the version)
            d.status, d.reason = "refused", "changed while the undo ran: not reverted; try again"
    return UndoResult(
        note_id=note_id,
        links_removed=outcome.links_removed,
        neighbours=decisions,
        note_deleted=outcome.note_deleted,
        links_removed_with_note=outcome.links_removed_with_note,
    )


__all__ = [
    "decide_revert",
    "diff_states",
    "field_diffs",
    "history_diff",
    "rollback",
    "step",
    "text_ops",
    "undo_add",
]
