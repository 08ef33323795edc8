"""The pure parts of `graphmem eval links`: link classification, hops, degree-preserving rewiring,
nearest-neighbour links, evidence pairs, arm records, the paired bootstrap."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.evaluation.links import (
    LinksConfig,
    _ConvGraph,
    adjacency,
    arm_note_id,
    arm_records,
    connectivity,
    edge,
    evidence_pairs,
    evolution_versions,
    is_turn_link,
    joined,
    lend_link_words,
    link_edges,
    nearest_neighbour_edges,
    rewire,
    stored_sessions,
)
from graphmem.evaluation.locomo import load_locomo
from graphmem.models import FOLLOWS_REASON, NoteVersion
from graphmem.service import LENT_KEYWORDS_MAX

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "locomo_tiny.json"


def _link(target: str, type_: str = "RELATED_TO", reason: str = "x") -> dict[str, Any]:
    return {"target_id": target, "type": type_, "reason": reason, "strength": 0.5}


def _rec(nid: str, *links: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": nid, "content": f"note {nid}", "links": list(links), **extra}


def test_turn_links_are_follows_with_the_turn_reason_only() -> None:
    assert is_turn_link(_link("a", "FOLLOWS", FOLLOWS_REASON))
    assert not is_turn_link(_link("a", "FOLLOWS", "the model said so"))  # a FOLLOWS the LLM proposed
    assert not is_turn_link(_link("a", "SUPPORTS", FOLLOWS_REASON))


def test_link_edges_are_undirected_simple_and_inside_the_export() -> None:
    records = [
        _rec("a"),
        _rec("b", _link("a", "FOLLOWS", FOLLOWS_REASON), _link("a", "SUPPORTS")),
        _rec("c", _link("b", "FOLLOWS", FOLLOWS_REASON), _link("a", "FOLLOWS", "later"), _link("zz")),
        _rec("d", _link("c"), _link("c", "SAME_TOPIC")),
    ]
    records[0]["links"] = [_link("b", "ELABORATES")]  # both directions: one edge
    assert link_edges(records, turn=False) == {("a", "b"), ("a", "c"), ("c", "d")}
    assert link_edges(records, turn=True) == {("a", "b"), ("b", "c")}


def test_hops_by_hand() -> None:
    adj = adjacency("abcde", [("a", "b"), ("b", "c"), ("d", "e")])
    assert joined(adj, "a", "b") == (True, True)
    assert joined(adj, "a", "c") == (False, True)
    assert joined(adj, "a", "d") == (False, False)
    assert joined(adj, "c", "e") == (False, False)
    assert joined(adj, "a", "unknown") == (False, False)


graphs = st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14)), max_size=40).map(
    lambda pairs: sorted({edge(f"n{a:02d}", f"n{b:02d}") for a, b in pairs if a != b})
)


@settings(max_examples=60, deadline=None)
@given(graphs, st.integers(0, 10_000))
def test_rewiring_keeps_every_degree_and_a_simple_graph(edges: list[tuple[str, str]], seed: int) -> None:
    out, done = rewire(edges, random.Random(seed), 10 * len(edges))
    assert len(out) == len(edges)
    assert all(a != b for a, b in out)
    assert len(set(out)) == len(out)  # no multi-edges
    degrees = Counter(x for e in edges for x in e)
    assert Counter(x for e in out for x in e) == degrees
    assert 0 <= done <= 10 * len(edges)
    again, _ = rewire(edges, random.Random(seed), 10 * len(edges))
    assert again == out  # one seed, one graph


def test_rewiring_samples_uniform_matchings() -> None:
    """On a perfect matching of 10 nodes, a given pair is joined in 1/9 of random matchings."""
    edges = [(f"n{2 * i}", f"n{2 * i + 1}") for i in range(5)]
    rng = random.Random(7)
    n = 3000
    joined_01 = joined_02 = 0
    for _ in range(n):
        out, done = rewire(edges, rng, 50)
        assert done == 50
        joined_01 += ("n0", "n1") in out
        joined_02 += ("n0", "n2") in out
    assert joined_01 / n == pytest.approx(1 / 9, abs=0.025)
    assert joined_02 / n == pytest.approx(1 / 9, abs=0.025)


def test_a_complete_graph_cannot_be_rewired() -> None:
    edges = [edge(a, b) for a in "abcd" for b in "abcd" if a < b]
    out, done = rewire(edges, random.Random(0), 100)
    assert (sorted(out), done) == (sorted(edges), 0)


def _graph(pairs: list[tuple[str, str]], llm: set[tuple[str, str]], nodes: str = "abcdef") -> _ConvGraph:
    from graphmem.evaluation.links import EvidencePair

    return _ConvGraph(
        sample_id="s",
        dia_to_note={x: x for x in nodes},
        nodes=list(nodes),
        llm=llm,
        turn={("a", "b")},
        knn=set(),
        pairs=[EvidencePair("s", i, 1 + i % 2, a, b, i % 2 == 0) for i, (a, b) in enumerate(pairs)],
    )


def test_connectivity_by_hand() -> None:
    g = _graph([("a", "b"), ("a", "c"), ("a", "f"), ("d", "e")], {edge("a", "b"), edge("b", "c"), edge("d", "e")})
    out = connectivity([g], LinksConfig(reuse_tag="t", samples=50, seed=3))
    all_ = out["subsets"]["all"]
    assert all_["pairs"] == 4 and all_["questions"] == 4
    assert all_["llm"] == {"hop1": 0.5, "hop2": 0.75}  # a-b, d-e joined; a-c two hops; a-f never
    assert all_["turn"] == {"hop1": 0.25, "hop2": 0.25}  # only a-b is a turn link
    assert all_["all_links"] == {"hop1": 0.5, "hop2": 0.75}
    rnd = all_["random"]["hop1"]
    assert 0.0 <= rnd["mean"] <= 1.0 and rnd["p05"] <= rnd["mean"] <= rnd["p95"]
    assert all_["ratio"]["hop1"] == pytest.approx(0.5 / rnd["mean"])
    assert 0.0 < rnd["p_value"] <= 1.0
    assert out["subsets"]["cross session"]["pairs"] == 2  # pairs 0 and 2
    assert out["subsets"]["1 multi-hop"]["llm"]["hop1"] == 0.5  # pairs 0 (a-b) and 2 (a-f)
    assert out["graphs"]["s"]["llm_links"] == 3 and out["graphs"]["s"]["max_degree"] == 2
    assert out["target"]["hop1_ratio"] == all_["ratio"]["hop1"]
    assert connectivity([g], LinksConfig(reuse_tag="t", samples=50, seed=3)) == out  # seeded


def test_connectivity_of_an_unrewirable_graph_equals_its_random_rate() -> None:
    full = {edge(a, b) for a in "abcd" for b in "abcd" if a < b}
    g = _graph([("a", "b"), ("c", "d"), ("a", "e")], full, nodes="abcde")
    row = connectivity([g], LinksConfig(reuse_tag="t", samples=5))["subsets"]["all"]
    assert row["random"]["hop1"]["mean"] == row["llm"]["hop1"] == pytest.approx(2 / 3)
    assert row["ratio"]["hop1"] == pytest.approx(1.0)
    assert row["random"]["hop1"]["p_value"] == 1.0


def test_nearest_neighbour_links_follow_out_degree_and_time() -> None:
    records = [
        _rec("a", embedding=[1.0, 0.0, 0.0]),
        _rec("b", embedding=[0.0, 1.0, 0.0]),
        _rec("c", _link("a"), embedding=[0.1, 1.0, 0.0]),  # one LLM link: its nearest earlier note is b
        _rec("d", _link("a"), _link("b"), embedding=[1.0, 0.2, 0.0]),  # two: a, then c (0.29) over b (0.20)
    ]
    llm = link_edges(records, turn=False)
    assert nearest_neighbour_edges(records, llm) == {("b", "c"), ("a", "d"), ("c", "d")}
    assert nearest_neighbour_edges(records, set()) == set()


def test_evidence_pairs_of_the_tiny_fixture() -> None:
    conv = load_locomo(FIXTURE)[0]
    stored = conv.dia_ids()
    pairs = evidence_pairs(conv, stored, (1, 2, 3, 4), None)
    assert [(p.qa_index, p.category, p.a, p.b, p.cross_session) for p in pairs] == [
        (2, 1, "D1:5", "D2:1", True),
        (5, 1, "D1:2", "D2:2", True),  # evidence "D1:2; D2:2" repaired by the loader
    ]
    assert evidence_pairs(conv, stored - {"D2:1"}, (1, 2, 3, 4), None) == pairs[1:]
    assert evidence_pairs(conv, conv.dia_ids([1]), (1, 2, 3, 4), [1]) == []
    assert stored_sessions(conv, ["D2:3", "D1:1", "bogus"]) == [1, 2]


def _version(v: int, by: str | None, context: str) -> NoteVersion:
    return NoteVersion(
        version=v,
        context=context,
        tags=[f"t{v}"],
        keywords=[f"k{v}"],
        content="c",
        replaced_at=datetime.now(UTC),
        changed_by=by,
    )


def test_the_first_evolution_version_holds_the_original_values() -> None:
    versions = [_version(3, "n2", "after one"), _version(1, "update", "before the update"), _version(2, "n1", "orig")]
    assert [v.version for v in evolution_versions(versions, {"n1", "n2"})] == [2, 3]
    assert evolution_versions(versions, {"x"}) == []


def test_arm_records_drop_llm_links_and_revert_evolutions() -> None:
    turn = _link("a", "FOLLOWS", FOLLOWS_REASON)
    records = [
        _rec("a", embedding=[1.0], context="evolved", tags=["e"], keywords=["e"], version=3),
        _rec("b", turn, {**_link("a", "SUPPORTS"), "caused_by": "b"}, embedding=[2.0], context="own", version=1),
    ]
    originals = {"a": _version(1, "b", "original")}
    full = arm_records(records, "full", originals)
    assert [r["id"] for r in full] == ["af-a", "af-b"]
    assert full[0]["context"] == "evolved" and full[0]["embedding"] == [1.0]
    assert [(x["target_id"], x["type"]) for x in full[1]["links"]] == [("af-a", "FOLLOWS"), ("af-a", "SUPPORTS")]
    assert full[1]["links"][1]["caused_by"] == "af-b"

    no_links = arm_records(records, "no-links", originals)
    assert [x["type"] for x in no_links[1]["links"]] == ["FOLLOWS"]
    assert no_links[0]["context"] == "evolved"

    no_evo = arm_records(records, "no-evolution", originals)
    assert (no_evo[0]["context"], no_evo[0]["tags"], no_evo[0]["keywords"], no_evo[0]["version"]) == (
        "original",
        ["t1"],
        ["k1"],
        1,
    )
    assert "embedding" not in no_evo[0]  # the import embeds the restored text
    assert no_evo[1]["embedding"] == [2.0] and len(no_evo[1]["links"]) == 2

    neither = arm_records(records, "neither", originals)
    assert "embedding" not in neither[0] and len(neither[1]["links"]) == 1

    plain = arm_records(records, "no-enrichment", originals)  # content alone, links and evolutions kept
    assert all((r["context"], r["tags"], r["keywords"]) == ("", [], []) and "embedding" not in r for r in plain)
    assert len(plain[1]["links"]) == 2 and plain[0]["content"] == records[0]["content"]

    updated = [
        {**records[0], "updates": []},
        {
            **records[1],
            "updates": [
                {"type": "SUPERSEDES", "target_id": "a", "caused_by": "b"},
                {"type": "DERIVED_FROM", "target_id": "a"},
            ],
        },
    ]
    kept = arm_records(updated, "full", originals)[1]["updates"]
    assert [(u["type"], u["target_id"], u.get("caused_by")) for u in kept] == [
        ("SUPERSEDES", "af-a", "af-b"),
        ("DERIVED_FROM", "af-a", None),
    ]
    current = arm_records(updated, "no-supersession", originals)[1]
    assert [u["type"] for u in current["updates"]] == ["DERIVED_FROM"] and len(current["links"]) == 2
    assert records[0]["context"] == "evolved" and "embedding" in records[0]  # the export is not changed

    long_id = "x" * 127
    assert len(arm_note_id("neither", long_id)) <= 128
    assert arm_note_id("neither", long_id) != arm_note_id("neither", long_id[:-1] + "y")


def test_the_strongest_evolution_arm_keeps_only_what_each_add_evolved_through_its_strongest_link() -> None:
    def scored(target: str, strength: float) -> dict[str, Any]:
        return {**_link(target), "strength": strength}

    a_versions = [_version(1, "b", "orig"), _version(2, "c", "after b"), _version(3, "d", "after c")]
    e_versions = [_version(1, "c", "e orig")]
    records = [
        _rec("a", embedding=[1.0], context="after d", tags=["t4"], keywords=["k4"], version=4),
        _rec("e", embedding=[3.0], context="e after c", version=2),
        _rec("b", scored("a", 0.9), scored("x", 0.5), _link("a", "FOLLOWS", FOLLOWS_REASON)),  # a: strongest
        _rec("c", scored("a", 0.4), scored("e", 0.3), scored("y", 0.8)),  # neither a nor e: y is stronger
        _rec("d", scored("a", 0.7), scored("z", 0.7)),  # a tie: both count as the strongest
    ]
    originals = {"a": a_versions[0], "e": e_versions[0]}
    histories = {"a": a_versions, "e": e_versions}
    arm = {r["id"]: r for r in arm_records(records, "strongest-evolution", originals, histories)}
    # a's last kept evolution is d's (its values are the note's own), its search vector is kept
    assert (arm["ao-a"]["context"], arm["ao-a"]["version"], arm["ao-a"]["embedding"]) == ("after d", 4, [1.0])
    # e was evolved only by c, whose strongest link is y: back to its original values, re-embedded
    assert (arm["ao-e"]["context"], arm["ao-e"]["version"]) == ("e orig", 1) and "embedding" not in arm["ao-e"]
    assert len(arm["ao-b"]["links"]) == 3  # the links are all kept

    # without d's evolution, a keeps the values b's evolution gave it, not c's
    no_d = [records[0], records[1], records[2], records[3], _rec("d", scored("z", 0.7))]
    arm = {r["id"]: r for r in arm_records(no_d, "strongest-evolution", originals, histories)}
    assert (arm["ao-a"]["context"], arm["ao-a"]["tags"], arm["ao-a"]["version"]) == ("after b", ["t2"], 2)
    assert arm["ao-a"]["embedding"] == [1.0]


def test_word_evolution_lends_a_note_its_lenders_own_keywords_along_llm_links_only() -> None:
    def rec(i: str, keywords: list[str], links: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": i, "keywords": keywords, "links": links}

    llm = {"type": "RELATED_TO", "reason": "both about the kitten"}
    turn = {"type": "FOLLOWS", "reason": FOLLOWS_REASON}
    records = [
        rec("a", ["kitten", "Pixel"], []),
        rec("b", ["tulips"], [{**turn, "target_id": "a"}]),  # a turn link lends nothing
        rec("c", ["pixel", "vase", "broke"], [{**llm, "target_id": "a"}, {**llm, "target_id": "missing"}]),
        rec("d", ["cat"], [{**llm, "target_id": "c"}, {**llm, "target_id": "a"}]),
    ]
    out = lend_link_words(records)
    by_id = {r["id"]: r["keywords"] for r in out}
    # own words first; no repeat, whatever the case; c passes on its own words only, not d's
    assert by_id == {
        "a": ["kitten", "Pixel", "vase", "broke", "cat"],
        "b": ["tulips"],
        "c": ["pixel", "vase", "broke", "cat"],
        "d": ["cat"],
    }
    # a hub note's keywords stop at the cap; its own are never cut
    hub = [rec("h", [f"own{i}" for i in range(3)], [])]
    hub += [rec(f"n{i}", [f"w{i}a", f"w{i}b"], [{**llm, "target_id": "h"}]) for i in range(40)]
    kept = lend_link_words(hub)[0]["keywords"]
    assert len(kept) == LENT_KEYWORDS_MAX and kept[:3] == ["own0", "own1", "own2"]
    many = [rec("m", [f"own{i}" for i in range(30)], []), rec("x", ["new"], [{**llm, "target_id": "m"}])]
    assert lend_link_words(many)[0]["keywords"] == [f"own{i}" for i in range(30)]
