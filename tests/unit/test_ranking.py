"""The pure ranking functions of search: score fusion, links ranked by score, the full-text query."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.models import LinkedNote, LinkedVia, LinkType, Note, Scope, SearchHit, TextMatch
from graphmem.service.answer_context import build_context
from graphmem.service.retrieve import fuse, rank_with_links
from graphmem.store.fulltext import lucene_query, query_terms

SCOPE = Scope(user_id="u")
T0 = datetime(2023, 5, 8, tzinfo=UTC)


def mk(note_id: str, words: int = 3, minute: int = 0) -> Note:
    return Note(id=note_id, content=" ".join(["word"] * words), scope=SCOPE, created_at=T0 + timedelta(minutes=minute))


def hit(note_id: str, score: float = 0.0) -> SearchHit:
    return SearchHit(note=mk(note_id), score=score, found_by=["vector"])


def linked(from_id: str, note_id: str, strength: float, type: LinkType = LinkType.RELATED_TO) -> LinkedNote:
    return LinkedNote(from_id=from_id, via=LinkedVia(from_id=from_id, type=type, strength=strength), note=mk(note_id))


# --- fusion ---------------------------------------------------------------------------------------


def test_fused_score_is_cosine_plus_the_weighted_share_of_the_best_bm25() -> None:
    fused = fuse(
        [(mk("a"), 0.8), (mk("b"), 0.6)],
        [TextMatch(mk("b"), 10.0, 0.6), TextMatch(mk("c"), 5.0, 0.5)],
        weight=0.2,
    )
    scores = {h.note.id: h.score for h in fused}
    assert scores == pytest.approx({"a": 0.8, "b": 0.6 + 0.2, "c": 0.5 + 0.1})
    assert [h.note.id for h in fused] == ["a", "b", "c"]
    assert [h.found_by for h in fused] == [["vector"], ["fulltext", "vector"], ["fulltext"]]


def test_a_weak_text_ranking_cannot_bury_a_strong_vector_hit() -> None:
    """Reciprocal rank fusion ranked the note that only the words matched first: it was first in
    one ranking and second in the other, the semantic best first in one and absent from the other.
    By score, words lift a note by at most the weight."""
    vector = [(mk("beagle"), 0.62), (mk("meeting"), 0.31), (mk("yoga"), 0.30)]
    text = [TextMatch(mk("meeting"), 3.1, 0.31), TextMatch(mk("yoga"), 2.9, 0.30)]
    assert fuse(vector, text, weight=0.15)[0].note.id == "beagle"


def test_the_words_decide_between_notes_of_similar_meaning() -> None:
    vector = [(mk("close"), 0.55), (mk("named"), 0.53)]
    text = [TextMatch(mk("named"), 8.0, 0.53)]
    assert [h.note.id for h in fuse(vector, text, weight=0.15)] == ["named", "close"]


def test_fusion_does_not_touch_its_inputs_and_drops_text_matches_without_a_cosine() -> None:
    a = [(mk("a"), 0.9)]
    t = [TextMatch(mk("a"), 2.0, 0.9), TextMatch(mk("nocos"), 9.0, None)]
    fused = fuse(a, t, weight=0.5)
    assert [h.note.id for h in fused] == ["a"] and fused[0].score == pytest.approx(0.9 + 0.5 * 2.0 / 9.0)
    assert fuse([], [], weight=0.5) == []
    assert [h.note.id for h in fuse(a, [], weight=0.5)] == ["a"]


# --- links by score ---------------------------------------------------------------------------------


def test_linked_notes_compete_on_score_not_position() -> None:
    hits = [hit("a", 0.8), hit("b", 0.5), hit("z", 0.1)]
    links = [linked("a", "c", 0.5), linked("b", "d", 1.0), linked("a", "e", 0.9)]
    out = rank_with_links(hits, links, k=2)
    assert [h.note.id for h in out] == ["a", "e", "b", "d", "c"]  # d (0.5) ties b and follows it by id
    scores = {h.note.id: h.score for h in out}
    assert scores["e"] == pytest.approx(0.8 * 0.9) and scores["c"] == pytest.approx(0.8 * 0.5)
    assert out[1].found_by == ["link"] and out[1].linked_via[0].from_id == "a"
    assert [h.note.id for h in rank_with_links(hits, links, k=1)] == ["a", "e"]


def test_the_cut_keeps_k_hits_and_the_links_that_outrank_the_next_hit() -> None:
    hits = [hit("a", 0.9), hit("b", 0.8), hit("c", 0.7)]
    links = [linked("a", "x", 0.95), linked("b", "w", 0.5), linked("c", "y", 1.0)]
    assert [h.note.id for h in rank_with_links(hits, links, k=1)] == ["a", "x"]
    assert [h.note.id for h in rank_with_links(hits, links, k=2)] == ["a", "x", "b"]
    assert [h.note.id for h in rank_with_links(hits, links, k=3)] == ["a", "x", "b", "c", "y", "w"]


def test_a_note_linked_from_two_hits_appears_once_with_its_best_score_and_both_paths() -> None:
    out = rank_with_links(
        [hit("a", 0.9), hit("b", 0.7)], [linked("a", "c", 0.5), linked("b", "c", 0.9, LinkType.SUPPORTS)], k=5
    )
    assert [h.note.id for h in out] == ["a", "b", "c"]
    c = out[2]
    assert [(v.from_id, v.type) for v in c.linked_via] == [("a", LinkType.RELATED_TO), ("b", LinkType.SUPPORTS)]
    assert c.score == pytest.approx(0.7 * 0.9)


def test_a_hit_reached_by_a_link_keeps_its_better_score() -> None:
    out = rank_with_links([hit("a", 0.9), hit("b", 0.2)], [linked("a", "b", 0.5)], k=2)
    assert [(h.note.id, h.score) for h in out] == [("a", 0.9), ("b", pytest.approx(0.45))]
    assert out[1].found_by == ["link", "vector"]


def test_no_links_leaves_the_top_k_hits() -> None:
    hits = [hit("a", 0.8), hit("b", 0.5), hit("c", 0.1)]
    assert rank_with_links(hits, [], k=2) == hits[:2]


def _budgeted(out: list[SearchHit], budget: int) -> set[str]:
    ctx = build_context([h.note for h in out], budget)
    return {out[i].note.id for i in ctx.used}


@settings(max_examples=80, deadline=None)
@given(
    scores=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=25),
    sizes=st.lists(st.integers(1, 40), min_size=50, max_size=50),
    links=st.lists(st.tuples(st.integers(0, 24), st.integers(0, 24), st.floats(0.05, 1.0)), max_size=40),
    budget=st.integers(20, 300),
    ks=st.tuples(st.integers(1, 30), st.integers(1, 30)),
)
def test_budgeted_context_never_loses_a_note_when_k_grows(
    scores: list[float],
    sizes: list[int],
    links: list[tuple[int, int, float]],
    budget: int,
    ks: tuple[int, int],
) -> None:
    """For one pool of candidates, the ranking for k is a prefix of the ranking for a larger k, so
    the notes ask keeps within the budget only grow with k: budgeted recall is monotone in k."""
    notes = {f"n{i}": mk(f"n{i}", words=sizes[i], minute=i) for i in range(50)}
    hits = sorted(
        (SearchHit(note=notes[f"n{i}"], score=s, found_by=["vector"]) for i, s in enumerate(scores)),
        key=lambda h: -h.score,
    )
    pool = len(scores)
    lnk = [
        LinkedNote(
            from_id=f"n{a % pool}",
            via=LinkedVia(from_id=f"n{a % pool}", type=LinkType.RELATED_TO, strength=s),
            note=notes[f"n{25 + b}"],
        )
        for a, b, s in links
    ]
    small, large = sorted(ks)
    few = rank_with_links(hits, lnk, small)
    many = rank_with_links(hits, lnk, large)
    assert [h.note.id for h in many[: len(few)]] == [h.note.id for h in few]
    assert _budgeted(few, budget) <= _budgeted(many, budget)


# --- the full-text query ----------------------------------------------------------------------------


def test_the_full_text_query_keeps_only_words_that_carry_meaning() -> None:
    assert query_terms("What kind of dog do I have?") == ["kind", "dog"]
    assert query_terms("When did Caroline go to the LGBTQ support group?") == [
        "Caroline",
        "go",
        "LGBTQ",
        "support",
        "group",
    ]
    assert lucene_query("what do you have") is None  # stop words only: vector search alone decides
    assert lucene_query("C++ (or: Rust) OR NOT x AND y") == r"C OR Rust OR x OR y"
