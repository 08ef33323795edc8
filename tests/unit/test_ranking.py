"""The pure ranking functions of search: reciprocal rank fusion and link expansion."""

from __future__ import annotations

import pytest

from graphmem.models import LinkedNote, LinkedVia, LinkType, Note, Scope, SearchHit
from graphmem.service.retrieve import RRF_K, attach_links, rrf

SCOPE = Scope(user_id="u")


def hit(note_id: str, score: float = 0.0, source: str = "vector") -> SearchHit:
    return SearchHit(note=Note(id=note_id, content=f"note {note_id}", scope=SCOPE), score=score, found_by=[source])  # type: ignore[list-item]


def linked(from_id: str, note_id: str, strength: float, type: LinkType = LinkType.RELATED_TO) -> LinkedNote:
    return LinkedNote(
        from_id=from_id,
        via=LinkedVia(from_id=from_id, type=type, strength=strength),
        note=Note(id=note_id, content=f"note {note_id}", scope=SCOPE),
    )


def test_rrf_scores_are_reciprocal_ranks_with_the_constant() -> None:
    fused = rrf([hit("a"), hit("b")], [hit("b", source="fulltext"), hit("c", source="fulltext")], k=10)
    scores = {h.note.id: h.score for h in fused}
    assert RRF_K == 60
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 62)
    assert [h.note.id for h in fused] == ["b", "a", "c"]


def test_rrf_agreement_of_both_rankings_beats_one_first_place() -> None:
    """With the constant, a note third in both rankings outranks one that is first in one ranking
    only; without it (1 / (rank + 1)) the single first place would win."""
    vector = [hit("solo"), hit("x1"), hit("both")]
    text = [hit("y1", source="fulltext"), hit("y2", source="fulltext"), hit("both", source="fulltext")]
    fused = rrf(vector, text, k=10)
    assert fused[0].note.id == "both"
    assert fused[0].found_by == ["fulltext", "vector"]


def test_rrf_keeps_k_and_does_not_touch_its_inputs() -> None:
    a = [hit(f"a{i}", score=0.9) for i in range(5)]
    b = [hit(f"b{i}", score=7.0, source="fulltext") for i in range(5)]
    fused = rrf(a, b, k=3)
    assert len(fused) == 3
    assert all(h.score == 0.9 for h in a) and all(h.found_by == ["vector"] for h in a)


def test_linked_notes_follow_their_hit_scored_by_link_strength() -> None:
    hits = [hit("a", 0.8), hit("b", 0.5)]
    out = attach_links(hits, [linked("a", "c", 0.5), linked("b", "d", 1.0), linked("a", "e", 0.25)])
    assert [h.note.id for h in out] == ["a", "c", "e", "b", "d"]
    scores = {h.note.id: h.score for h in out}
    assert scores["c"] == pytest.approx(0.8 * 0.5)
    assert scores["e"] == pytest.approx(0.8 * 0.25)
    assert scores["d"] == pytest.approx(0.5 * 1.0)
    assert all(h.found_by == ["link"] for h in out if h.note.id in "cde")


def test_a_note_linked_from_two_hits_appears_once_with_both_paths() -> None:
    out = attach_links(
        [hit("a", 0.9), hit("b", 0.7)], [linked("a", "c", 0.5), linked("b", "c", 0.9, LinkType.SUPPORTS)]
    )
    assert [h.note.id for h in out] == ["a", "c", "b"]
    c = out[1]
    assert [(v.from_id, v.type) for v in c.linked_via] == [("a", LinkType.RELATED_TO), ("b", LinkType.SUPPORTS)]
    assert c.score == pytest.approx(0.9 * 0.5)  # placed and scored by the first path


def test_no_links_leaves_the_hits_as_they_are() -> None:
    hits = [hit("a", 0.8), hit("b", 0.5)]
    assert attach_links(hits, []) == hits
