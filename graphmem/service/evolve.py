"""A-MEM's link generation and memory evolution: the LLM proposes, these functions decide.

``propose`` is the one LLM call (prompt in ``llm/prompts.py``); everything else is pure: a
proposal becomes an ``EvolutionPlan`` (links to write, neighbour updates, rejections with their
reasons) only for ids the model was shown and types of the closed set, so nothing unshown can be
reached or overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from graphmem.errors import LLMError
from graphmem.llm.calls import LLMCaller
from graphmem.llm.outputs import EvolutionDecision
from graphmem.llm.prompts import evolve_messages
from graphmem.models import (
    FOLLOWS_REASON,
    EvolutionPlan,
    Link,
    LinkType,
    NeighbourChange,
    NeighbourEvolution,
    Note,
    Usage,
)

log = logging.getLogger(__name__)

MAX_REASON_CHARS = 300
MAX_CONTEXT_CHARS = 500


def loose_id(text: str) -> str:
    """An id as a small model may echo it: quoted, in another case, or with the prompt's "id:" label.
    Only exact matches of a shown id survive this, so nothing unshown can be reached."""
    text = text.strip().strip("\"'`[]<>").strip().lower()
    return text[3:].strip() if text.startswith("id:") else text


def norm(text: str) -> str:
    return " ".join(text.lower().split())


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


def plan_evolution(
    note: Note,
    neighbours: Sequence[Note],
    decision: EvolutionDecision,
    *,
    links: bool = True,
    evolution: bool = True,
    rejected: Sequence[str] = (),
) -> EvolutionPlan:
    """Keep only proposals that target shown neighbours with known types (never stored otherwise).

    Args:
        note: the new note (links go from it).
        neighbours: the notes the model was shown, the only valid targets.
        decision: the model's proposals.
        links / evolution: the ablation switches (GRAPHMEM_ENABLE_LINKS / _EVOLUTION).
        rejected: reasons already collected (items the output parser dropped).
    """
    plan = EvolutionPlan(rejected=list(rejected))
    shown = {n.id: n for n in neighbours}
    by_loose = {loose_id(n.id): n.id for n in neighbours}
    chosen: dict[str, Link] = {}
    if links:
        for p in decision.links:
            target = by_loose.get(loose_id(p.target_id))
            if target is None:
                plan.rejected.append(f"link to unknown id {p.target_id[:40]!r}")
                continue
            if target in chosen:
                continue
            chosen[target] = Link(
                source_id=note.id,
                target_id=target,
                type=LinkType(p.type),
                reason=p.reason.strip()[:MAX_REASON_CHARS],
                strength=p.strength,
            )
    updates: dict[str, NeighbourEvolution] = {}
    if evolution:
        contexts = {n.id: norm(n.context) for n in [note, *neighbours] if n.context}
        for u in decision.neighbour_updates:
            target = by_loose.get(loose_id(u.note_id))
            if target is None:
                plan.rejected.append(f"update of unknown id {u.note_id[:40]!r}")
                continue
            old = shown[target]
            # Small models often "evolve" a neighbour by pasting another note's context over its own,
            # which erases what the neighbour was about: such an update is refused as a whole.
            if u.context and any(norm(u.context) == c for nid, c in contexts.items() if nid != target):
                plan.rejected.append(f"update of {target[:40]!r} copies another note's context")
                continue
            new = NeighbourEvolution(
                before=old,
                context=(u.context or "").strip()[:MAX_CONTEXT_CHARS] or old.context,
                tags=u.tags or old.tags,
                keywords=u.keywords or old.keywords,
            )
            if new.after() == {"context": old.context, "tags": old.tags, "keywords": old.keywords}:
                continue
            updates[target] = new
    plan.links = list(chosen.values())
    plan.updates = list(updates.values())
    return plan


def follows_link(source_id: str, target_id: str) -> Link:
    """The link of a conversation turn to the turn before it."""
    return Link(source_id=source_id, target_id=target_id, type=LinkType.FOLLOWS, reason=FOLLOWS_REASON, strength=1.0)


def with_follows(plan: EvolutionPlan, source_id: str, follows: str | None) -> EvolutionPlan:
    """The plan plus the FOLLOWS link to the previous turn (replacing a FOLLOWS the LLM proposed to it)."""
    if follows is None:
        return plan
    kept = [x for x in plan.links if not (x.target_id == follows and x.type == LinkType.FOLLOWS)]
    return EvolutionPlan(links=[*kept, follows_link(source_id, follows)], updates=plan.updates, rejected=plan.rejected)


def evolved_notes(plan: EvolutionPlan) -> list[Note]:
    """The neighbours with their new values (what gets re-embedded)."""
    return [u.before.model_copy(update=u.after()) for u in plan.updates]


def neighbour_changes(plan: EvolutionPlan, versions: Mapping[str, int]) -> list[NeighbourChange]:
    """What an add reports of the evolutions that were written (``versions``: id -> new version)."""
    return [
        NeighbourChange(
            note_id=u.before.id,
            before={
                "context": u.before.context,
                "tags": u.before.tags,
                "keywords": u.before.keywords,
                "version": u.before.version,
            },
            after={**u.after(), "version": versions[u.before.id]},
        )
        for u in plan.updates
        if u.before.id in versions
    ]
