"""The deterministic guards on LLM proposals, each shown to refuse what it exists for and to let a
good proposal through; planning with and without them."""

from __future__ import annotations

import math

from langchain_core.messages import AIMessage

from graphmem.llm.calls import yes_probability
from graphmem.models import LinkType, Note, Scope
from graphmem.service.construct import instruction_echoes
from graphmem.service.linking import EvolutionDecision, guards, plan_evolution

S = Scope(user_id="u")
GARDEN = Note(
    id="garden",
    content="Lena: I finally got a plot at the Elm Street community garden!",
    scope=S,
    context="Lena got a sunny plot at the Elm Street community garden.",
    keywords=["garden", "plot"],
    tags=["gardening"],
)
TOMATO = Note(
    id="tomato",
    content="Lena: I planted six tomato seedlings in my garden plot.",
    scope=S,
    context="Lena planted tomato seedlings in her plot.",
    keywords=["tomato", "seedlings"],
)
JOB = Note(
    id="job",
    content="Omar: I handed in my notice at the bank; I'm joining Lumio in May.",
    scope=S,
    context="Omar is leaving the bank for the startup Lumio.",
    keywords=["job", "Lumio"],
)
CAT = Note(id="cat", content="Lena: I'm badly allergic to cats, my eyes swell shut within minutes.", scope=S)
CAT_SITTING = Note(id="sit", content="Lena: I spent Sunday cat-sitting Pixel, she curled up on my lap.", scope=S)


def test_reason_that_pastes_a_note_is_refused() -> None:
    pasted = "Lena planted tomato seedlings in her plot"
    assert guards.reason_refusal(pasted, TOMATO, GARDEN) == "its reason copies a note's text or context"
    assert guards.reason_refusal("Lena's garden plot", TOMATO, GARDEN) is None


def test_reason_must_name_something_of_both_notes() -> None:
    assert guards.reason_refusal("Omar's new job", TOMATO, GARDEN) == "its reason does not name something of both notes"
    assert guards.reason_refusal("the tomato seedlings", TOMATO, GARDEN) is not None  # nothing of GARDEN
    # the speaker's prefix is not something both notes say; a name inside what is said is
    assert guards.shared_words_reason(TOMATO, GARDEN) == "both mention garden, plot"
    # the words as the new note writes them, matched by stem, not the stems ('riversid', 'market')
    stall = Note(content="Priya: Anika sells her bowls at the Riverside markets.", scope=GARDEN.scope)
    corner = Note(content="Priya: Anika offered me a corner of her stall at the Riverside market.", scope=GARDEN.scope)
    assert guards.shared_words_reason(stall, corner) == "both mention Anika, Riverside, markets"
    asked = Note(content="Tom: Did Priya make her mugs?", scope=GARDEN.scope)
    assert guards.shared_words_reason(asked, stall) == "related notes"  # 'Priya' is only stall's speaker
    # nothing said in common: the tags both notes got, else a plain label
    nervous = Note(content="Lena: Are you nervous about leaving?", tags=["career", "emotions"], scope=GARDEN.scope)
    offer = Note(content="Omar: I got the offer from Lumio!", tags=["Career", "news"], scope=GARDEN.scope)
    assert guards.shared_words_reason(nervous, offer) == "both tagged career"
    assert guards.shared_words_reason(nervous, asked) == "related notes"
    told = Note(content="Tom: Priya glazes mugs now.", scope=GARDEN.scope)
    assert guards.shared_words_reason(told, asked) == "both mention Priya, mugs"


def test_contradiction_needs_two_statements_found_in_their_notes() -> None:
    assert (
        guards.contradiction_refusal(None, None, CAT_SITTING, CAT)
        == "CONTRADICTS without the two conflicting statements"
    )
    invented = guards.contradiction_refusal("she owns a dog", "allergic to cats", CAT_SITTING, CAT)
    assert invented == "CONTRADICTS quotes a statement the new note does not make"
    assert (
        guards.contradiction_refusal("cat-sitting Pixel on my lap", "badly allergic to cats", CAT_SITTING, CAT) is None
    )


def test_evolution_that_drifts_or_imports_names_is_refused() -> None:
    about_job = "Omar quits his bank job to work at Lumio."
    assert "drift" in str(guards.evolution_refusal(about_job, GARDEN, TOMATO, [JOB], 0.1, [0.2, 0.9]))
    names = guards.evolution_refusal(
        "Lena and Omar share a plot at the Elm Street garden.", GARDEN, TOMATO, [], 0.9, [0.1]
    )
    assert names == "the new context brings in Omar, whom the note never mentions"
    invented = guards.evolution_refusal(
        "Lena wins prizes for pumpkins and zucchini every year.", GARDEN, TOMATO, [], 0.9, [0.1]
    )
    assert invented == "the new context says things neither the note nor the new note says"
    pasted = guards.evolution_refusal(TOMATO.context, GARDEN, TOMATO, [], 0.9, [0.1])
    assert pasted == "the new context copies another note"
    good = "Lena's sunny plot at the Elm Street community garden, where she planted tomato seedlings."
    assert guards.evolution_refusal(good, GARDEN, TOMATO, [JOB], 0.8, [0.6, 0.1]) is None


def test_keywords_and_tags_only_grow() -> None:
    assert guards.grown(["garden", "plot"], ["tomato"]) == ["garden", "plot", "tomato"]
    assert guards.grown(["garden", "plot"], ["Garden"]) == ["garden", "plot"]
    assert guards.grown(["garden"], None) == ["garden"]


def test_plan_applies_the_guards_and_reports_each_refusal() -> None:
    decision = EvolutionDecision.model_validate(
        {
            "links": [
                {"target_id": "garden", "reason": "Lena's garden plot", "type": "CONTRADICTS"},
                {"target_id": "job", "reason": "Lena planted tomato seedlings in her plot", "type": "SUPPORTS"},
            ],
            "neighbour_updates": [{"note_id": "garden", "tags": ["tomatoes"], "keywords": ["plot"]}],
        }
    )
    plan = plan_evolution(TOMATO, [GARDEN, JOB], decision)
    assert [(lk.target_id, lk.type) for lk in plan.links] == [
        ("garden", LinkType.RELATED_TO),
        ("job", LinkType.SUPPORTS),
    ]
    assert any("without the two conflicting statements; kept as RELATED_TO" in r for r in plan.rejected)
    assert any("'job'" in r and "copies" in r for r in plan.rejected)
    assert plan.links[1].reason == "related notes"  # the pasted reason replaced: the notes share no word
    (update,) = plan.updates
    # tags and keywords the model names are additions: the neighbour's own are kept
    assert update.tags == ["gardening", "tomatoes"] and update.keywords == ["garden", "plot"]
    assert not any("removal" in r for r in plan.rejected)


def test_yes_probability_reads_logprobs_and_falls_back_to_the_text() -> None:
    top = [
        {"token": "yes", "logprob": math.log(0.6)},
        {"token": "no", "logprob": math.log(0.2)},
        {"token": "Yes", "logprob": math.log(0.1)},
    ]
    msg = AIMessage(content="yes", response_metadata={"logprobs": {"content": [{**top[0], "top_logprobs": top}]}})
    assert abs(yes_probability(msg) - 0.7 / 0.9) < 1e-9
    assert yes_probability(AIMessage(content="Yes.")) == 1.0
    assert yes_probability(AIMessage(content="Maybe")) == 0.0


def test_keywords_that_only_echo_the_instructions_are_found() -> None:
    instructions = "You build atomic memory notes. Return JSON: keywords (3-7 key concepts)."
    note = "Priya: I sold eight mugs at the Riverside market."
    items = ["atomic memory", "mugs", "Riverside market", "memory notes", "key concepts of pottery"]
    # an item counts only when all its words come from the instructions and none from the note
    assert instruction_echoes(items, note, instructions) == ["atomic memory", "memory notes"]
    # a note that itself talks about memory keeps the word
    assert instruction_echoes(["memory"], "Tom: my memory of Lisbon is vague.", instructions) == []
