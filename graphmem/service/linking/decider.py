"""How a link is decided: one interface, ``LinkDecider``, and its strategies.

A decider gets the new note, its candidate neighbours (nearest first) and the add's ``Usage``, and
returns the ``EvolutionPlan`` it proposes: links from the note and updates of neighbours. The add
steps then screen the plan's evolved contexts (``plan.screen_evolutions``) and write it. Nothing is
stored here.

- ``JointDecider`` (A-MEM's own): one call shows the new note with its nearest neighbours and asks
  for typed links and neighbour updates (``propose``), planned by ``plan.plan_evolution``;
- ``PairwiseDecider`` (for small local models, which measured far better this way; see
  docs/evaluation.md): one yes/no question per nearest candidate whose answer probability decides
  the link, a short phrase naming the connection, and one context rewrite per linked neighbour.

``decider_for`` is the one place the ``link_decision`` setting is read. A decider of your own (or
one of these on another chat model) goes to ``AsyncMemoryService.create(link_decider=...)``; a
different chat model for the configured decider is ``create(link_model=...)``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from graphmem.config import Settings
from graphmem.errors import LLMError
from graphmem.llm.calls import LLMCaller
from graphmem.llm.outputs import clean_text
from graphmem.models import EvolutionPlan, Link, LinkType, NeighbourEvolution, Note, Usage
from graphmem.service.linking import guards
from graphmem.service.linking.plan import MAX_CONTEXT_CHARS, MAX_REASON_CHARS, norm, plan_evolution
from graphmem.service.linking.prompts import (
    EvolutionDecision,
    evolve_messages,
    evolve_one_messages,
    link_reason_messages,
    related_messages,
)

log = logging.getLogger(__name__)

# The chat model a decider calls, asked for when a decision needs it (a local model may still be
# starting when the service is built): ``ChatModelSlot.caller``.
LLMSource = Callable[[], Awaitable[LLMCaller]]


@runtime_checkable
class LinkDecider(Protocol):
    """Decides the links and neighbour updates of a new note among its candidate neighbours."""

    async def decide(self, note: Note, neighbours: Sequence[Note], usage: Usage) -> EvolutionPlan:
        """The plan for ``note`` (links go from it) among ``neighbours`` (nearest first, never
        empty), with ``plan.candidates`` the ids it considered; time and tokens go to ``usage``."""
        ...


class JointDecider:
    """A-MEM's decision: one structured call for all links and neighbour updates."""

    def __init__(self, llm: LLMSource, *, links: bool = True, evolution: bool = True) -> None:
        self.llm, self.links, self.evolution = llm, links, evolution

    async def decide(self, note: Note, neighbours: Sequence[Note], usage: Usage) -> EvolutionPlan:
        decision, rejected = await propose(await self.llm(), note, neighbours, usage)
        if decision is None:
            return EvolutionPlan(rejected=rejected, candidates=[n.id for n in neighbours])
        plan = plan_evolution(note, neighbours, decision, links=self.links, evolution=self.evolution, rejected=rejected)
        plan.candidates = [n.id for n in neighbours]
        return plan


class PairwiseDecider:
    """One yes/no question per nearest candidate (``decide_pairwise``)."""

    def __init__(
        self,
        llm: LLMSource,
        *,
        candidates: int,
        threshold: float,
        links: bool = True,
        evolution: bool = True,
        evolve_at_most: int = 0,
        ask_reasons: bool = False,
    ) -> None:
        self.llm, self.candidates, self.threshold = llm, candidates, threshold
        self.links, self.evolution, self.ask_reasons = links, evolution, ask_reasons
        self.evolve_at_most = evolve_at_most

    async def decide(self, note: Note, neighbours: Sequence[Note], usage: Usage) -> EvolutionPlan:
        plan = await decide_pairwise(
            await self.llm(),
            note,
            neighbours,
            usage,
            candidates=self.candidates,
            threshold=self.threshold,
            links=self.links,
            evolution=self.evolution,
            evolve_at_most=self.evolve_at_most,
            ask_reasons=self.ask_reasons,
        )
        plan.candidates = [n.id for n in neighbours[: self.candidates]]
        return plan


def decider_for(settings: Settings, llm: LLMSource) -> LinkDecider:
    """The configured decider (``GRAPHMEM_LINK_DECISION``: joint, pairwise, or auto by provider)."""
    if settings.resolved_link_decision == "pairwise":
        return PairwiseDecider(
            llm,
            # the nearest, then the notes that share the new note's rarer words (AddSteps.neighbours)
            candidates=settings.link_candidates + settings.link_word_candidates,
            threshold=settings.link_threshold,
            links=settings.enable_links,
            evolution=settings.evolution_enabled,
            evolve_at_most=settings.evolution_neighbours,
            ask_reasons=settings.link_reasons == "llm",
        )
    return JointDecider(llm, links=settings.enable_links, evolution=settings.evolution_enabled)


async def propose(
    llm: LLMCaller, note: Note, neighbours: Sequence[Note], usage: Usage
) -> tuple[EvolutionDecision | None, list[str]]:
    """Ask the LLM for links and neighbour updates. Returns (decision, rejections); the decision is
    None when the call failed or its output stayed unusable (the rejections say which)."""
    try:
        decision, rejected = await llm.structured(EvolutionDecision, evolve_messages(note, neighbours), usage)
    except LLMError as exc:
        log.warning("link/evolution step failed, note stored without links: %s", exc)
        return None, [f"evolution skipped: {exc}"]
    if decision is None:
        return None, ["evolution output unusable after repair"]
    return decision, list(rejected)


async def decide_pairwise(
    llm: LLMCaller,
    note: Note,
    neighbours: Sequence[Note],
    usage: Usage,
    *,
    candidates: int,
    threshold: float,
    links: bool = True,
    evolution: bool = True,
    evolve_at_most: int = 0,
    ask_reasons: bool = False,
) -> EvolutionPlan:
    """The pairwise decision: the ``candidates`` nearest neighbours are each judged by one yes/no
    question; a neighbour is linked when P(yes) >= ``threshold`` (the probability is the link's
    strength). Linked pairs get a reason: the words both notes use, or with ``ask_reasons`` the
    model's phrase (guarded; the shared words when refused); with evolution on, a proposed new
    context for the ``evolve_at_most`` linked neighbours of the highest P(yes), nearest first on a
    tie (0: every linked neighbour), screened later."""
    plan = EvolutionPlan()
    judged = list(neighbours[:candidates])
    if not judged or not (links or evolution):
        return plan
    try:
        probs = await asyncio.gather(*(llm.yes_probability(related_messages(n, note), usage) for n in judged))
    except LLMError as exc:
        log.warning("link decision failed, note stored without links: %s", exc)
        return EvolutionPlan(rejected=[f"link decision skipped: {exc}"])
    linked = [(n, p) for n, p in zip(judged, probs, strict=True) if p >= threshold and math.isfinite(p)]
    if not linked:
        return plan
    reasons: list[str | None] = [None] * len(linked)
    contexts: list[str | None] = [None] * len(linked)
    evolved = strongest(linked, evolve_at_most) if evolution else []
    try:
        asked = await asyncio.gather(
            *(_reason(llm, n, note, usage) for n, _ in linked if links and ask_reasons),
            *(_context(llm, linked[i][0], note, usage) for i in evolved),
        )
    except LLMError as exc:
        log.warning("link reasons or evolution failed, links kept with plain reasons: %s", exc)
        plan.rejected.append(f"link reasons and evolution skipped: {exc}")
    else:
        if links and ask_reasons:
            reasons, asked = list(asked[: len(linked)]), asked[len(linked) :]
        for i, proposed in zip(evolved, asked, strict=True):
            contexts[i] = proposed
    for (n, p), reason, context in zip(linked, reasons, contexts, strict=True):
        if links:
            reason = _checked(reason, note, n, plan.rejected) if ask_reasons else guards.shared_words_reason(note, n)
            plan.links.append(
                Link(source_id=note.id, target_id=n.id, type=LinkType.RELATED_TO, reason=reason, strength=round(p, 3))
            )
        if evolution and context and norm(context) != norm(n.context):
            plan.updates.append(NeighbourEvolution(before=n, context=context, tags=n.tags, keywords=n.keywords))
    return plan


def strongest(linked: Sequence[tuple[Note, float]], at_most: int) -> list[int]:
    """Positions in ``linked`` of the ``at_most`` highest probabilities (all when 0), in their order;
    a tie goes to the earlier (nearer) candidate."""
    if at_most <= 0 or at_most >= len(linked):
        return list(range(len(linked)))
    ranked = sorted(range(len(linked)), key=lambda i: (-linked[i][1], i))
    return sorted(ranked[:at_most])


def _checked(reason: str | None, note: Note, target: Note, rejected: list[str]) -> str:
    """The model's reason for a link, or the words both notes say when it is refused (reported)."""
    refusal = guards.reason_refusal(reason, note, target) if reason else "no reason given"
    if refusal is None and reason:
        return reason
    rejected.append(f"reason for the link to {target.id[:40]!r}: {refusal}; the shared words are used")
    return guards.shared_words_reason(note, target)


async def _reason(llm: LLMCaller, earlier: Note, later: Note, usage: Usage) -> str:
    text = await llm.text(link_reason_messages(earlier, later), usage, max_tokens=24)
    return clean_text(text).strip("\"'.")[:MAX_REASON_CHARS]


async def _context(llm: LLMCaller, earlier: Note, later: Note, usage: Usage) -> str:
    text = await llm.text(evolve_one_messages(earlier, later), usage, max_tokens=80)
    return clean_text(text).strip("\"'")[:MAX_CONTEXT_CHARS]
