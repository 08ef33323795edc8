"""A new way to decide links is one class, in one file: this test file's ``NearestDecider`` ("link to
the k nearest", no LLM call) goes to ``AsyncMemoryService.create(link_decider=...)`` and is then
used by ``add`` and by the decision-quality evaluation (``graphmem eval decisions``'s runner). A
different chat model for the link decision is ``create(link_model=...)``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphmem.evaluation.decisions import DecisionsConfig, run_decisions_eval
from graphmem.models import EvolutionPlan, Link, LinkType, Note, Usage
from graphmem.service.linking import LinkDecider
from graphmem.service.linking.guards import shared_words_reason
from tests.fakes import ScriptedChatModel, amem_responder, pairwise_responder, step_of


class NearestDecider:
    """Link the new note to its ``k`` nearest neighbours; evolve nothing; ask no model."""

    def __init__(self, k: int = 1) -> None:
        self.k = k

    async def decide(self, note: Note, neighbours: Sequence[Note], usage: Usage) -> EvolutionPlan:
        chosen = list(neighbours[: self.k])
        links = [
            Link(
                source_id=note.id,
                target_id=n.id,
                type=LinkType.RELATED_TO,
                reason=shared_words_reason(note, n),
                strength=0.5,
            )
            for n in chosen
        ]
        return EvolutionPlan(links=links, candidates=[n.id for n in chosen])


def test_the_nearest_decider_is_a_link_decider() -> None:
    assert isinstance(NearestDecider(), LinkDecider)


async def test_add_uses_the_given_decider(make_service: Any, scope: Any) -> None:
    # supersession (issue 28) asks the chat model its own question: off, to see the link decision alone
    svc, model = await make_service(link_decider=NearestDecider(k=1), enable_supersession=False, evolution_words=False)
    dog = await svc.add("Ann: I adopted a beagle called Rufus.", scope)
    await svc.add("Bo: I am learning to play the cello.", scope)
    added = await svc.add("Ann: Rufus the beagle hates thunderstorms.", scope)

    assert [(lk.target_id, lk.type) for lk in added.links] == [(dog.note.id, LinkType.RELATED_TO)]
    assert added.candidates == [dog.note.id] and added.evolved == []
    assert {step_of(m) for m in model.calls} == {"enrich"}  # the decision asked no model


async def test_the_decision_eval_scores_the_given_decider(make_service: Any, tmp_path: Path) -> None:
    def turn(n: int, speaker: str, text: str) -> dict[str, Any]:
        return {"n": n, "time": f"2024-01-01T10:0{n}:00", "speaker": speaker, "text": text, "keep": []}

    gold = {
        "format": "graphmem.decisions-gold/1",
        "conversations": [
            {
                "id": "tiny",
                "turns": [
                    turn(1, "Ann", "I adopted a beagle called Rufus."),
                    turn(2, "Bo", "I am learning to play the cello."),
                    turn(3, "Ann", "Rufus the beagle hates thunderstorms."),
                ],
                "related": [[3, 1]],
                "acceptable": [],
                "contradicts": [],
            }
        ],
    }
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(gold))
    svc, _ = await make_service(link_decider=NearestDecider(k=1))
    result = await run_decisions_eval(svc, DecisionsConfig(gold=path, run_id="k-nearest"))
    (conv,) = result["conversations"]
    pairs = {(lk["from"], lk["to"]) for lk in conv["link_list"]}
    assert pairs == {(2, 1), (3, 1)}  # each turn linked to its one nearest earlier turn
    assert conv["links"]["recall"] == 1.0 and conv["links"]["precision"] == 0.5


async def test_a_link_model_of_its_own(make_service: Any, scope: Any) -> None:
    links = ScriptedChatModel(pairwise_responder(lambda a, b: 0.9, reason=lambda a, b: "Rufus the beagle"))
    svc, model = await make_service(
        amem_responder(),
        link_model=links,
        link_decision="pairwise",
        link_reasons="llm",
        link_candidates=1,
        enable_evolution=False,
        enable_supersession=False,
    )
    dog = await svc.add("Ann: I adopted a beagle called Rufus.", scope)
    added = await svc.add("Ann: Rufus the beagle hates thunderstorms.", scope)

    assert [(lk.target_id, lk.reason) for lk in added.links] == [(dog.note.id, "Rufus the beagle")]
    assert {step_of(m) for m in model.calls} == {"enrich"}  # the chat model only enriched
    assert {step_of(m) for m in links.calls} == {"related", "reason"}  # the link model only decided
