"""The decision-quality scorer on hand-made runs whose right answers are known."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem.errors import InvalidInputError
from graphmem.evaluation.decisions import (
    ConversationRun,
    GoldConversation,
    TurnRun,
    _sweep_lines,
    keeps_subject,
    load_gold,
    overall,
    score_conversation,
)
from graphmem.models import FOLLOWS_REASON, Link, LinkType, NeighbourChange, Note, Scope, Usage
from graphmem.service.wording import content_words, copies, copy_score, proper_names, supported_share

SCOPE = Scope(user_id="u")

GOLD = {
    "id": "tiny",
    "people": ["Ann", "Bo"],
    "turns": [
        {
            "n": 1,
            "time": "2024-01-01T10:00:00",
            "speaker": "Ann",
            "text": "I adopted a beagle called Rufus.",
            "keep": ["beagle", "Rufus"],
        },
        {
            "n": 2,
            "time": "2024-01-01T10:01:00",
            "speaker": "Bo",
            "text": "I am learning to play the cello.",
            "keep": ["cello"],
        },
        {
            "n": 3,
            "time": "2024-01-01T10:02:00",
            "speaker": "Ann",
            "text": "Rufus hates thunderstorms and hides under the bed.",
            "keep": ["Rufus", "thunderstorm"],
        },
        {
            "n": 4,
            "time": "2024-01-01T10:03:00",
            "speaker": "Bo",
            "text": "My cello teacher says I practise too little.",
            "keep": ["cello", "teacher"],
        },
        {
            "n": 5,
            "time": "2024-01-01T10:04:00",
            "speaker": "Ann",
            "text": "I have never had a pet in my life.",
            "keep": ["pet"],
        },
    ],
    "related": [[3, 1], [4, 2]],
    "acceptable": [[5, 3]],
    "contradicts": [[5, 1]],
}


def note(n: int, context: str = "", keywords: Sequence[str] = ()) -> Note:
    turn = GOLD["turns"][n - 1]
    return Note(
        id=f"n{n}", content=f"{turn['speaker']}: {turn['text']}", scope=SCOPE, context=context, keywords=list(keywords)
    )


def link(
    src: int, dst: int, type_: LinkType = LinkType.RELATED_TO, reason: str = "same dog", strength: float = 0.5
) -> Link:
    return Link(source_id=f"n{src}", target_id=f"n{dst}", type=type_, reason=reason, strength=strength)


def turn(
    n: int,
    links: Sequence[Link] = (),
    evolved: Sequence[NeighbourChange] = (),
    candidates: Sequence[int] = (),
    **kw: str,
) -> TurnRun:
    return TurnRun(
        n=n,
        note=note(n, kw.get("context", "A note."), kw.get("keywords", "").split()),
        candidates=[f"n{c}" for c in candidates],
        links=list(links),
        evolved=list(evolved),
        rejected=[],
        usage=Usage(llm_calls=2, input_tokens=500, output_tokens=100, total_seconds=10.0),
    )


def fake_embed(texts: Sequence[str]) -> list[list[float]]:
    """Bag of content words over a fixed vocabulary: similar words, similar vectors."""
    vocab = sorted({w for t in GOLD["turns"] for w in content_words(t["text"])} | {"cello", "music"})
    return [[1.0 if w in content_words(t) else 0.0 for w in vocab] for t in texts]


def test_links_are_scored_against_the_gold_pairs() -> None:
    gold = GoldConversation.model_validate(GOLD)
    run = ConversationRun(
        conversation="tiny",
        turns=[
            turn(1),
            turn(2, [link(2, 1, reason="x")], candidates=[1]),  # wrong: cello vs dog
            turn(3, [link(3, 1, reason="both about Rufus the dog")], candidates=[1, 2]),  # related
            turn(4, [link(4, 3, LinkType.CONTRADICTS, reason="y")], candidates=[3, 1]),  # wrong and a false CONTRADICTS
            turn(
                5,
                [link(5, 1, LinkType.CONTRADICTS, reason="z"), link(5, 4, LinkType.FOLLOWS, FOLLOWS_REASON)],
                candidates=[1, 3],
            ),
        ],
    )
    s = score_conversation(gold, run, fake_embed)
    lk = s["links"]
    assert lk["llm_links"] == 4  # the caller's conversation-turn FOLLOWS link is not the LLM's
    assert lk["precision"] == pytest.approx(2 / 4)
    assert lk["recall"] == pytest.approx(2 / 3)  # related: (3,1), (4,2), (5,1) as a contradiction
    assert lk["candidate_recall"] == pytest.approx(2 / 3)  # (4,2) was never shown
    assert (lk["false_contradicts"], lk["true_contradicts"]) == (1, 1)
    assert lk["types"] == {"RELATED_TO": 2, "CONTRADICTS": 2}
    assert s["cost"]["tokens_per_note"] == 600


def test_copied_reasons_are_counted() -> None:
    gold = GoldConversation.model_validate(GOLD)
    pasted = "Rufus hates thunderstorms and hides under the bed"
    run = ConversationRun(
        conversation="tiny",
        turns=[turn(1), turn(3, [link(3, 1, reason=pasted)], candidates=[1])],
    )
    s = score_conversation(gold, run, fake_embed)
    assert s["links"]["copied_reasons"] == 1
    assert s["link_list"][0]["copied_reason"] is True


def test_an_evolved_context_about_another_note_is_drift() -> None:
    gold = GoldConversation.model_validate(GOLD)
    drifted = NeighbourChange(
        note_id="n1",
        before={"context": "Ann adopted a beagle.", "tags": ["pets"], "keywords": ["beagle"]},
        after={"context": "Bo is learning to play the cello with a teacher.", "tags": ["pets"], "keywords": ["beagle"]},
    )
    faithful = NeighbourChange(
        note_id="n3",
        before={"context": "Rufus fears storms.", "tags": ["pets"], "keywords": []},
        after={
            "context": "Rufus the beagle hides under the bed during thunderstorms.",
            "tags": ["pets", "dog"],
            "keywords": [],
        },
    )
    run = ConversationRun(
        conversation="tiny",
        turns=[turn(1), turn(2), turn(3), turn(4, evolved=[drifted]), turn(5, evolved=[faithful])],
    )
    s = score_conversation(gold, run, fake_embed)
    ev = s["evolution"]
    assert (ev["evolutions"], ev["context_changes"], ev["drift"]) == (2, 2, 1)
    drift = {e["note"]: e for e in s["evolution_list"]}
    assert drift[1]["drift"] is True and drift[1]["closest_note"] in (2, 4)
    assert drift[3]["drift"] is False and drift[3]["keeps_subject"] is True
    assert ev["subject_kept_share"] == pytest.approx(0.5)


def test_enrichment_faithfulness_counts_invented_words() -> None:
    gold = GoldConversation.model_validate(GOLD)
    run = ConversationRun(
        conversation="tiny",
        turns=[
            turn(1, context="Ann adopted a beagle named Rufus.", keywords="beagle adopted"),
            turn(2, context="Bo shows impressive progress with mugs.", keywords="cello mugs"),
        ],
    )
    e = score_conversation(gold, run, fake_embed)["enrichment"]
    # note 1: ann, adopt, beagle, nam(ed), rufus -> 4 of 5 supported ('named' is not in the note)
    # note 2: shows, impressive, progress, mugs -> 0 of 4
    assert e["context_supported_by_note"] == pytest.approx((4 / 5 + 0) / 2)
    assert e["keywords_supported_by_note"] == pytest.approx((1 + 0.5) / 2)


def test_overall_pools_conversations() -> None:
    gold = GoldConversation.model_validate(GOLD)
    run = ConversationRun(conversation="tiny", turns=[turn(1), turn(3, [link(3, 1)], candidates=[1])])
    s = score_conversation(gold, run, fake_embed)
    o = overall([s, s])
    assert o["llm_links"] == 2 and o["link_precision"] == 1.0
    assert o["related_recall"] == pytest.approx(2 / 6)
    assert o["false_contradicts_max_per_conversation"] == 0


def test_one_low_threshold_run_scores_every_higher_threshold() -> None:
    gold = GoldConversation.model_validate(GOLD)
    run = ConversationRun(
        conversation="tiny",
        turns=[
            turn(1),
            turn(2, [link(2, 1, strength=0.12)], candidates=[1]),  # wrong, kept only below 0.15
            turn(3, [link(3, 1, strength=0.42)], candidates=[1, 2]),  # related
            turn(4, [link(4, 2, strength=0.27)], candidates=[2]),  # related
        ],
    )
    o = overall([score_conversation(gold, run, fake_embed)])
    sweep = o["by_threshold"]
    assert (sweep["0.10"]["links"], sweep["0.10"]["link_precision"]) == (3, pytest.approx(2 / 3))
    assert (sweep["0.15"]["links"], sweep["0.15"]["link_precision"]) == (2, 1.0)
    assert sweep["0.25"]["related_recall"] == pytest.approx(2 / 3)  # (5,1) is gold too and never linked
    assert sweep["0.30"]["related_recall"] == pytest.approx(1 / 3)
    assert sweep["0.50"] == {"links": 0, "link_precision": None, "related_recall": 0.0}
    # the report shows the thresholds the run can score: its own and above
    config = {"link_decision": "pairwise", "link_threshold": 0.26}
    rows = [line for line in _sweep_lines(config, o) if line.startswith("| 0.")]
    assert rows[0].startswith("| 0.26 | 2 | 1.00 | 0.67 |") and not any(r.startswith("| 0.25") for r in rows)
    assert _sweep_lines({"link_decision": "joint", "link_threshold": 0.26}, o) == []


def test_gold_files_are_checked(tmp_path: Path) -> None:
    shipped = load_gold()
    assert len(shipped) >= 3 and all(12 <= len(c.turns) <= 20 for c in shipped)
    assert sum(len(c.contradicts) for c in shipped) >= 1
    bad = dict(GOLD, related=[[9, 1]])
    path = tmp_path / "gold.json"
    path.write_text(json.dumps({"format": "graphmem.decisions-gold/1", "conversations": [bad]}))
    with pytest.raises(InvalidInputError, match="do not exist"):
        load_gold(path)
    both = dict(GOLD, acceptable=[[3, 1]])
    path.write_text(json.dumps({"format": "graphmem.decisions-gold/1", "conversations": [both]}))
    with pytest.raises(InvalidInputError, match="both related and acceptable"):
        load_gold(path)
    with pytest.raises(InvalidInputError, match="unknown conversation"):
        load_gold(None, ["nope"])
    newline = dict(GOLD, id="trip\n")  # a conversation id becomes a scope part
    path.write_text(json.dumps({"format": "graphmem.decisions-gold/1", "conversations": [newline]}))
    with pytest.raises(InvalidInputError, match="conversation id"):
        load_gold(path)


def test_wording_measures() -> None:
    assert copy_score("both about the dog", "Rufus the dog hides")[1] == 2
    assert copies(
        "Tom is preparing for the Lisbon half marathon in May",
        ["because Tom is preparing for the Lisbon half marathon in May, but"],
    )
    assert not copies("both about Lena's tomato seedlings", ["I planted six tomato seedlings and some basil"])
    assert supported_share("Rufus hides from storms", ["Rufus hides under the bed"]) == pytest.approx(2 / 3)
    assert proper_names("Anika offered Priya a stall. The market opens in June.") == {"Anika", "Priya", "June"}
    assert keeps_subject("She planted tomatoes", ["tomato"]) and not keeps_subject("A note about cellos", ["beagle"])
    assert datetime(2024, 1, 1, tzinfo=UTC)  # the gold times parse as datetimes (checked in load_gold)


def test_role_errors_count_what_the_gold_forbids_and_unsupported_sentences() -> None:
    data = json.loads(json.dumps(GOLD))
    data["turns"][3]["must_not"] = [r"\bAnn'?s (cello )?teacher\b", r"\bAnn\b[^.]*\bcello\b"]
    gold = GoldConversation.model_validate(data)
    evolved = NeighbourChange(  # an evolved context may make the forbidden statement too
        note_id="n4",
        before={"context": "Bo practises too little.", "tags": [], "keywords": []},
        after={"context": "Ann plays the cello badly.", "tags": [], "keywords": []},
    )
    run = ConversationRun(
        conversation="tiny",
        turns=[
            turn(1, context="Ann adopted a beagle called Rufus. The shelter had many dogs for adoption."),
            turn(2, context="Bo is learning to play the cello."),
            turn(4, context="Bo's cello teacher says he practises too little."),  # right: Bo's own teacher
            turn(5, context="Ann never had a pet.", evolved=[evolved]),
        ],
    )
    s = score_conversation(gold, run, fake_embed)
    assert s["enrichment"]["role_errors"] == 1  # only the evolved context: "Ann plays the cello"
    run = ConversationRun(
        conversation="tiny",
        turns=[
            turn(1, context="Ann adopted a beagle called Rufus. The shelter had many dogs for adoption."),
            turn(4, context="Ann's cello teacher says Bo practises too little."),
            turn(5, context="Ann never had a pet.", evolved=[evolved]),
        ],
    )
    s = score_conversation(gold, run, fake_embed)
    e = s["enrichment"]
    # turn 4 as written ("Ann's cello teacher", both patterns) and as evolved ("Ann plays the cello")
    assert e["role_errors"] == 3
    assert {r["turn"] for r in s["role_error_list"]} == {4}
    assert e["turns_with_must_not"] == 1
    # the invented second sentence of turn 1 (shelter, dogs) and turn 4's "Ann", whom its note never names
    assert e["unsupported_sentences"] == 2
    assert [u["turn"] for u in s["unsupported_list"]] == [1, 4]
    o = overall([s])
    assert (o["role_errors"], o["unsupported_sentences"]) == (3, 2)


def test_a_must_not_that_is_not_a_regular_expression_is_refused() -> None:
    data = json.loads(json.dumps(GOLD))
    data["turns"][0]["must_not"] = ["(unclosed"]
    with pytest.raises(ValueError, match="not a regular expression"):
        GoldConversation.model_validate(data)
