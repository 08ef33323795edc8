"""How a link is decided, in one room: the decider interface and its strategies (``decider.py``,
the one place the ``link_decision`` setting is read), the prompts beside their output schemas
(``prompts.py``), the deterministic guards (``guards.py``) and what the service accepts from a
decision (``plan.py``). A new way to decide links is one class with an async ``decide``; a
different chat model for links is ``AsyncMemoryService.create(link_model=...)``."""

from graphmem.service.linking.decider import (
    JointDecider,
    LinkDecider,
    LLMSource,
    PairwiseDecider,
    decide_pairwise,
    decider_for,
    propose,
)
from graphmem.service.linking.plan import (
    MAX_CONTEXT_CHARS,
    MAX_REASON_CHARS,
    evolved_notes,
    follows_link,
    loose_id,
    neighbour_changes,
    plan_evolution,
    screen_evolutions,
    with_follows,
)
from graphmem.service.linking.prompts import EvolutionDecision, ProposedLink, ProposedUpdate

__all__ = [
    "MAX_CONTEXT_CHARS",
    "MAX_REASON_CHARS",
    "EvolutionDecision",
    "JointDecider",
    "LLMSource",
    "LinkDecider",
    "PairwiseDecider",
    "ProposedLink",
    "ProposedUpdate",
    "decide_pairwise",
    "decider_for",
    "evolved_notes",
    "follows_link",
    "loose_id",
    "neighbour_changes",
    "plan_evolution",
    "propose",
    "screen_evolutions",
    "with_follows",
]
