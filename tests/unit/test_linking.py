"""The link decision has one room: the setting is read in one place, and each strategy is one class
behind the ``LinkDecider`` interface."""

from __future__ import annotations

import re
from pathlib import Path

from graphmem.config import Settings
from graphmem.llm.calls import LLMCaller
from graphmem.service.linking import JointDecider, LinkDecider, PairwiseDecider, decider_for

ROOT = Path(__file__).resolve().parents[2]


async def _no_model() -> LLMCaller:
    raise AssertionError("no model is asked for while building a decider")


def test_decider_for_reads_the_link_decision_setting() -> None:
    settings = Settings(link_decision="pairwise", link_candidates=3, link_word_candidates=2, link_threshold=0.4)
    pairwise = decider_for(settings, _no_model)
    # the nearest and the word candidates (AddSteps.neighbours puts them first) are judged
    assert isinstance(pairwise, PairwiseDecider) and (pairwise.candidates, pairwise.threshold) == (5, 0.4)
    joint = decider_for(Settings(link_decision="joint", enable_evolution=False), _no_model)
    assert isinstance(joint, JointDecider) and (joint.links, joint.evolution) == (True, False)
    assert isinstance(pairwise, LinkDecider) and isinstance(joint, LinkDecider)


def test_the_link_decision_setting_is_read_in_one_place_of_the_core() -> None:
    # config.py resolves "auto"; evaluation/ reports it; elsewhere only linking/decider.py reads it
    readers = {
        str(p.relative_to(ROOT / "graphmem"))
        for p in (ROOT / "graphmem").rglob("*.py")
        if re.search(r"\.(resolved_)?link_decision\b", p.read_text(encoding="utf-8"))
    }
    assert {r for r in readers if not r.startswith("evaluation/")} == {"config.py", "service/linking/decider.py"}
