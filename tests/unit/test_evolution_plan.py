"""Link/evolution planning: the LLM proposes, the pure planning functions decide."""

from __future__ import annotations

from graphmem.models import (
    FOLLOWS_REASON,
    EvolutionPlan,
    Link,
    LinkType,
    NeighbourChange,
    NeighbourEvolution,
    Note,
    Scope,
)
from graphmem.service.linking import (
    EvolutionDecision,
    ProposedLink,
    ProposedUpdate,
    evolved_notes,
    loose_id,
    neighbour_changes,
    plan_evolution,
    with_follows,
)
from graphmem.service.linking.plan import LENT_KEYWORDS_MAX, lend_words

SCOPE = Scope(user_id="u")
NEW = Note(id="new-1", content="Ana sold her first mugs at the market.", scope=SCOPE, context="Ana's first sale.")
N1 = Note(id="n-1", content="Ana takes pottery lessons.", scope=SCOPE, context="Ana's hobby.", tags=["hobby"])
N12 = Note(id="n-12", content="Ana's sister sells bowls.", scope=SCOPE, context="Family business.", version=3)
SHOWN = [N1, N12]


def decision(links: list[dict[str, object]] = (), updates: list[dict[str, object]] = ()) -> EvolutionDecision:  # type: ignore[assignment]
    return EvolutionDecision(
        links=[ProposedLink.model_validate(x) for x in links],
        neighbour_updates=[ProposedUpdate.model_validate(u) for u in updates],
    )


def test_links_only_to_shown_ids() -> None:
    plan = plan_evolution(
        NEW,
        SHOWN,
        decision(
            links=[
                {"target_id": "n-1", "reason": "Ana's pottery", "type": "SUPPORTS"},
                {"target_id": "n-99", "reason": "made up", "type": "RELATED_TO"},
                {"target_id": "n-", "reason": "a prefix of a shown id", "type": "RELATED_TO"},
            ]
        ),
    )
    assert [(x.source_id, x.target_id, x.type) for x in plan.links] == [("new-1", "n-1", LinkType.SUPPORTS)]
    assert plan.rejected == ["link to unknown id 'n-99'", "link to unknown id 'n-'"]


def test_ids_as_small_models_echo_them_match_exactly() -> None:
    for echoed in ("N-12", "'n-12'", "id: n-12", "[n-12]", " `n-12` "):
        assert loose_id(echoed) == "n-12"
    assert loose_id("n-1") != loose_id("n-12")
    plan = plan_evolution(
        NEW, SHOWN, decision(links=[{"target_id": "ID: N-12", "reason": "Ana's sister", "type": "SAME_TOPIC"}])
    )
    assert [x.target_id for x in plan.links] == ["n-12"] and plan.rejected == []


def test_one_link_per_target_and_reason_bounded() -> None:
    plan = plan_evolution(
        NEW,
        SHOWN,
        decision(
            links=[
                {"target_id": "n-1", "reason": "Ana " + "r" * 396, "type": "ELABORATES"},
                {"target_id": "n-1", "reason": "again", "type": "SUPPORTS"},
            ]
        ),
    )
    assert len(plan.links) == 1 and plan.links[0].type == LinkType.ELABORATES
    assert len(plan.links[0].reason) == 300


def test_switches_turn_links_and_evolution_off() -> None:
    d = decision(
        links=[{"target_id": "n-1", "reason": "Ana's pottery", "type": "SUPPORTS"}],
        updates=[{"note_id": "n-1", "context": "Ana's hobby, now a small business."}],
    )
    assert plan_evolution(NEW, SHOWN, d, links=False).links == []
    assert plan_evolution(NEW, SHOWN, d, evolution=False).updates == []
    both = plan_evolution(NEW, SHOWN, d)
    assert len(both.links) == 1 and len(both.updates) == 1


def test_updates_only_of_shown_neighbours_keep_what_is_not_given() -> None:
    plan = plan_evolution(
        NEW,
        SHOWN,
        decision(
            updates=[
                {"note_id": "n-1", "context": "  Ana's hobby, now a small business.  ", "tags": None},
                {"note_id": "other", "context": "x"},
            ]
        ),
    )
    (upd,) = plan.updates
    assert upd.before is N1
    assert upd.after() == {"context": "Ana's hobby, now a small business.", "tags": ["hobby"], "keywords": []}
    assert plan.rejected == ["update of unknown id 'other'"]
    (evolved,) = evolved_notes(plan)
    assert (
        evolved.id == "n-1" and evolved.context == "Ana's hobby, now a small business." and N1.context == "Ana's hobby."
    )


def test_an_update_that_pastes_another_notes_context_is_refused() -> None:
    plan = plan_evolution(
        NEW,
        SHOWN,
        decision(
            updates=[
                {"note_id": "n-1", "context": "family   BUSINESS."},
                {"note_id": "n-12", "context": "Ana's first sale."},
            ]
        ),
    )
    assert plan.updates == []
    assert plan.rejected == [
        "update of 'n-1' copies another note's context",
        "update of 'n-12' copies another note's context",
    ]


def test_an_update_that_changes_nothing_is_dropped_and_context_is_bounded() -> None:
    plan = plan_evolution(
        NEW,
        SHOWN,
        decision(
            updates=[
                {"note_id": "n-1", "context": "Ana's hobby.", "tags": ["hobby"]},
                {"note_id": "n-12", "context": "c" * 900},
            ]
        ),
    )
    assert [u.before.id for u in plan.updates] == ["n-12"]
    assert len(plan.updates[0].context) == 500


def test_rejections_of_the_parser_are_kept() -> None:
    plan = plan_evolution(NEW, SHOWN, decision(), rejected=["link {...}: bad type"])
    assert plan.rejected == ["link {...}: bad type"]


def test_follows_replaces_an_llm_follows_to_the_same_turn() -> None:
    llm = EvolutionPlan(
        links=[
            Link(source_id="new-1", target_id="n-1", type=LinkType.FOLLOWS, reason="llm said so"),
            Link(source_id="new-1", target_id="n-1", type=LinkType.SUPPORTS, reason="pottery"),
        ]
    )
    plan = with_follows(llm, "new-1", "n-1")
    assert [(x.type, x.reason, x.strength) for x in plan.links] == [
        (LinkType.SUPPORTS, "pottery", 0.5),
        (LinkType.FOLLOWS, FOLLOWS_REASON, 1.0),
    ]
    assert with_follows(llm, "new-1", None) is llm


def test_changes_report_only_the_evolutions_written() -> None:
    plan = plan_evolution(
        NEW,
        SHOWN,
        decision(
            updates=[{"note_id": "n-1", "context": "Ana's hobby and trade."}, {"note_id": "n-12", "tags": ["family"]}]
        ),
    )
    (change,) = neighbour_changes(plan, {"n-12": 4})  # n-1 vanished before the write
    assert change.note_id == "n-12"
    assert change.before == {"context": "Family business.", "tags": [], "keywords": [], "version": 3}
    assert change.after == {"context": "Family business.", "tags": ["family"], "keywords": [], "version": 4}


def test_evolution_by_words_lends_the_new_keywords_to_linked_neighbours_only() -> None:
    new = NEW.model_copy(update={"keywords": ["mugs", "Market", "first", "hobby"]})
    n1 = N1.model_copy(update={"keywords": ["pottery", "market"]})
    n12 = N12.model_copy(update={"keywords": [f"own{i}" for i in range(22)]})
    plan = EvolutionPlan(
        links=[
            Link(source_id=new.id, target_id="n-1", type=LinkType.SUPPORTS, reason="Ana's pottery"),
            Link(source_id=new.id, target_id="n-12", type=LinkType.RELATED_TO, reason="Ana's family sells too"),
            Link(source_id=new.id, target_id="n-99", type=LinkType.RELATED_TO, reason="not shown"),
        ]
    )
    lent = lend_words(plan, new, [n1, n12])
    assert lent.links == plan.links
    by_id = {u.before.id: u for u in lent.updates}
    assert set(by_id) == {"n-1", "n-12"}
    # no repeat whatever the case; context and tags stay; a neighbour near the cap takes what fits
    assert by_id["n-1"].keywords == ["pottery", "market", "mugs", "first", "hobby"]
    assert (by_id["n-1"].context, by_id["n-1"].tags) == (n1.context, n1.tags)
    assert (
        by_id["n-12"].keywords == [*n12.keywords, "mugs", "Market"] and len(by_id["n-12"].keywords) == LENT_KEYWORDS_MAX
    )
    # a neighbour the LLM evolved keeps its evolution, and gets the words on top
    evolved = NeighbourEvolution(
        before=n1,
        context="Ana's hobby turned business.",
        tags=["hobby", "sales"],
        keywords=["pottery", "market", "stall"],
    )
    both = lend_words(EvolutionPlan(links=plan.links[:1], updates=[evolved]), new, [n1])
    (u,) = both.updates
    assert (u.context, u.tags, u.keywords) == (
        evolved.context,
        evolved.tags,
        ["pottery", "market", "stall", "mugs", "first", "hobby"],
    )
    # only links lend: the previous turn's FOLLOWS link and a plan without links change nothing
    turn = Link(source_id=new.id, target_id="n-1", type=LinkType.FOLLOWS, reason=FOLLOWS_REASON)
    assert lend_words(EvolutionPlan(links=[turn]), new, [n1]).updates == []
    assert lend_words(EvolutionPlan(), new, [n1]).updates == []


def test_an_evolution_says_what_it_changed() -> None:
    before = {"context": "Ana's hobby.", "tags": ["hobby"], "keywords": ["pottery"], "version": 1}
    words = NeighbourChange(
        note_id="n-1", before=before, after={**before, "keywords": ["pottery", "Mugs"], "version": 2}
    )
    assert words.summary() == "keywords + Mugs"
    rewritten = NeighbourChange(
        note_id="n-1", before=before, after={**before, "context": "Ana's business.", "tags": ["hobby", "Sales"]}
    )
    assert rewritten.summary() == 'context "Ana\'s hobby." -> "Ana\'s business."; tags + Sales'
    assert NeighbourChange(note_id="n-1", before=before, after=before).summary() == "no change"
