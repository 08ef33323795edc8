"""The pure rules of the agentic ingest: rebasing an evolution onto a neighbour an earlier note
changed, and the ids that make an ingest resumable."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from graphmem.models import NeighbourEvolution, Note, NoteInput, Scope
from graphmem.service.ingest import derive_id, rebase

SCOPE = Scope(user_id="u")
words = st.lists(st.sampled_from(["cat", "dog", "vet", "food", "toy", "Cat", "sofa"]), max_size=5, unique=True)


def note(
    context: str = "c0", tags: list[str] | None = None, keywords: list[str] | None = None, version: int = 1
) -> Note:
    return Note(
        id="n1",
        content="Pixel is a kitten.",
        scope=SCOPE,
        context=context,
        tags=tags if tags is not None else ["pets"],
        keywords=keywords if keywords is not None else ["kitten"],
        version=version,
    )


def test_a_field_only_the_later_note_changed_is_applied_on_top_of_the_earlier_result() -> None:
    base = note()
    later = NeighbourEvolution(before=base, context="c-later", tags=["pets"], keywords=["kitten"])
    current = note(context="c0", tags=["pets", "home"], keywords=["kitten", "sofa"], version=2)  # earlier changed tags
    moved = rebase(later, current)
    assert moved is not None
    assert moved.before is current  # it replaces what is stored now, which becomes a version
    assert (moved.context, moved.tags, moved.keywords) == ("c-later", ["pets", "home"], ["kitten", "sofa"])


def test_both_changed_the_context_the_later_wins_and_lists_merge() -> None:
    base = note(tags=["pets", "cats"])
    later = NeighbourEvolution(before=base, context="c-b", tags=["pets", "vet"], keywords=["kitten"])
    current = note(context="c-a", tags=["pets", "cats", "toys"], version=2)
    moved = rebase(later, current)
    assert moved is not None
    assert moved.context == "c-b"
    assert moved.tags == ["pets", "toys", "vet"]  # B removed "cats", A added "toys", B added "vet"


def test_an_update_the_earlier_note_already_made_is_dropped() -> None:
    base = note()
    later = NeighbourEvolution(before=base, context="same", tags=["pets", "home"], keywords=["kitten"])
    assert rebase(later, note(context="same", tags=["pets", "home"], version=2)) is None


@given(base=words, mine=words, current=words)
def test_merged_lists_hold_the_later_additions_and_lose_its_removals(
    base: list[str], mine: list[str], current: list[str]
) -> None:
    later = NeighbourEvolution(before=note(tags=base), context="x", tags=mine, keywords=["kitten"])
    moved = rebase(later, note(context="y", tags=current, version=2))
    assert moved is not None  # the context differs, so something is left
    got = {t.lower() for t in moved.tags}
    low_base, low_mine = {t.lower() for t in base}, {t.lower() for t in mine}
    if low_base == low_mine:
        assert moved.tags == current  # the later note did not touch the tags: the current ones stay
    else:
        assert low_mine - low_base <= got
        assert not (low_base - low_mine) & got
        assert len(got) == len(moved.tags)  # no duplicates, whatever the case


def test_ids_are_stable_per_scope_and_distinct_per_item() -> None:
    other = Scope(user_id="v")
    by_source = NoteInput(content="hello", source_id="D1:3")
    assert derive_id(SCOPE, by_source, 0) == derive_id(SCOPE, NoteInput(content="changed", source_id="D1:3"), 5)
    assert derive_id(SCOPE, by_source, 0) != derive_id(other, by_source, 0)
    plain = NoteInput(content="  hello ")
    assert derive_id(SCOPE, plain, 0) == derive_id(SCOPE, NoteInput(content="hello"), 0)
    assert derive_id(SCOPE, plain, 0) != derive_id(SCOPE, plain, 1)  # a repeated content is a new note
    assert derive_id(SCOPE, NoteInput(content="x", note_id="given"), 0) == "given"
    assert derive_id(SCOPE, NoteInput.model_construct(content=3), 0) is None


def test_the_order_check_tells_in_flight_misses_from_index_misses_and_leaks() -> None:
    import numpy as np

    from graphmem.evaluation.ingest_bench import order_violations
    from graphmem.models import EnrichmentStatus, IngestItem, IngestReport, IngestStatus

    ids = ["a", "b", "c", "d"]
    # d is nearest to c, then b, then a
    vectors = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.6, 0.8], [0.0, 0.5, 0.866]])

    def report(candidates_of_d: list[str], settled: int) -> IngestReport:
        items = [
            IngestItem(index=i, scope=SCOPE, note_id=n, status=IngestStatus.ADDED, enrichment=EnrichmentStatus.DONE)
            for i, n in enumerate(ids)
        ]
        for i, item in enumerate(items):
            item.candidates = ids[:i][-1:] if i < 3 else candidates_of_d
            item.settled_before = i
        items[1].candidates, items[2].candidates = ["a"], ["b"]
        items[3].settled_before = settled
        return IngestReport(items=items)

    assert order_violations(report(["c"], 3), ids, vectors, 1)[:2] == (0, 0)
    assert order_violations(report(["b"], 2), ids, vectors, 1)[:2] == (1, 0)  # c was in flight: violation
    assert order_violations(report(["b"], 3), ids, vectors, 1)[:2] == (0, 1)  # c was stored: index miss
    assert order_violations(report(["d"], 3), ids, vectors, 1)[:2] == (1, 0)  # itself / a later note
    assert order_violations(report([], 3), ids, vectors, 1)[:2] == (1, 0)  # too few candidates
