"""The pure parts of versions: word and list diffs, causes read from changed_by, undo's revert rule."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from graphmem.interfaces.cli.versions import field_text
from graphmem.models import (
    ChangeKind,
    EvolutionTrace,
    FieldDiff,
    NoteState,
    NoteVersion,
    describe_change,
    is_change_label,
)
from graphmem.service.versions import decide_revert, diff_states, field_diffs, text_ops

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def version(n: int, context: str, changed_by: str | None, content: str = "Ana plays the violin.") -> NoteVersion:
    return NoteVersion(
        version=n,
        context=context,
        tags=["music"],
        keywords=["violin"],
        content=content,
        replaced_at=T0,
        changed_by=changed_by,
    )


def state(n: int, context: str, content: str = "Ana plays the violin.") -> NoteState:
    return NoteState(n, content, context, ("music",), ("violin",))


words = st.text(alphabet=st.sampled_from("ab \n."), max_size=30)


@given(words, words)
def test_text_ops_rebuild_both_texts(before: str, after: str) -> None:
    ops = text_ops(before, after)
    assert "".join(o.text for o in ops if o.op != "insert") == before
    assert "".join(o.text for o in ops if o.op != "delete") == after
    assert all(o.text for o in ops) and all(x.op != y.op for x, y in itertools.pairwise(ops))


def test_text_ops_work_on_words() -> None:
    assert [(o.op, o.text) for o in text_ops("Ana plays the violin.", "Ana plays the old cello.")] == [
        ("equal", "Ana plays the "),
        ("delete", "violin."),
        ("insert", "old cello."),
    ]
    assert text_ops("same", "same") == [text_ops("same", "same")[0]] and text_ops("", "") == []


def test_field_diffs_name_only_the_fields_that_changed() -> None:
    a = NoteState(1, "Ana plays.", "ctx", ("music", "ana"), ("violin",))
    b = NoteState(2, "Ana plays.", "ctx", ("ana", "strings"), ("violin",))
    [tags] = field_diffs(a, b)
    assert (tags.field, tags.added, tags.removed) == ("tags", ["strings"], ["music"])
    assert field_diffs(a, a) == []
    reordered = field_diffs(a, NoteState(2, "Ana plays.", "ctx", ("ana", "music"), ("violin",)))
    assert [(d.field, d.added, d.removed) for d in reordered] == [("tags", [], [])]


def test_the_cause_of_each_step_is_read_from_changed_by() -> None:
    assert [ChangeKind.of(c) for c in ("n1", "update", "repair", "rollback:3", "undo:n1", None)] == [
        ChangeKind.EVOLUTION,
        ChangeKind.UPDATE,
        ChangeKind.REPAIR,
        ChangeKind.ROLLBACK,
        ChangeKind.UNDO,
        ChangeKind.UNKNOWN,
    ]
    assert describe_change("rollback:3") == "rollback to version 3"
    assert describe_change("undo:n1") == "undo of the add of note n1"
    assert describe_change("n1") == "evolved by the add of note n1"
    assert all(is_change_label(x) for x in ("update", "repair", "manual", "rollback:2", "undo:x"))
    assert not any(is_change_label(x) for x in ("n1", "updates", "rollback", "my-undo:x"))


def test_diff_states_pairs_by_order_and_ends_at_the_note_now() -> None:
    # An imported note keeps its version number: its history may start at 5.
    steps = diff_states([version(5, "a", "n1"), version(6, "b", "rollback:5")], state(7, "a"))
    assert [(s.from_version, s.to_version, s.change, s.cause_note_id, s.restored_version) for s in steps] == [
        (5, 6, ChangeKind.EVOLUTION, "n1", None),
        (6, 7, ChangeKind.ROLLBACK, None, 5),
    ]
    assert [f.field for f in steps[0].fields] == ["context"] and steps[0].changed_at == T0
    assert diff_states([version(1, "a", "n1")], None) == []  # one state, no step


def trace(current: NoteState, later: list[tuple[int, str | None]]) -> EvolutionTrace:
    """Note x: version 1 ("before"), evolved by the add of n1 to version 2 ("by n1")."""
    return EvolutionTrace(
        note_id="x", before=version(1, "before", "n1"), after=state(2, "by n1"), current=current, later=later
    )


def test_undo_reverts_only_what_nothing_changed_since() -> None:
    untouched = decide_revert(trace(state(2, "by n1"), []))
    assert (untouched.status, untouched.restored_version, untouched.evolved_version) == ("reverted", 1, 2)

    changed = decide_revert(trace(state(3, "by n2"), [(2, "n2")]))
    assert changed.status == "refused" and changed.later_changes == ["n2"]
    assert "evolved by the add of note n2" in changed.reason and "version 1" in changed.reason

    updated = decide_revert(trace(state(3, "by n1", content="Ana plays the cello."), [(2, "update")]))
    assert updated.status == "refused" and updated.later_changes == ["update"]  # content counts too

    back = decide_revert(trace(state(4, "by n1"), [(2, "n2"), (3, "undo:n2")]))
    assert back.status == "reverted" and back.later_changes == ["n2", "undo:n2"]  # holds what n1 wrote

    done = decide_revert(trace(state(3, "before"), [(2, "undo:n1")]))
    assert done.status == "already_undone"


def test_the_cli_diff_prints_user_text_literally() -> None:
    change = FieldDiff(
        field="content", before="[bold]x[/bold]", after="[red]y", ops=text_ops("[bold]x[/bold]", "[red]y")
    )
    assert field_text(change).plain == "[-[bold]x[/bold]-]{+[red]y+}"
