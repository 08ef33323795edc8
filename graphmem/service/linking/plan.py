"""What the service accepts from a link decision: the LLM proposes, these functions decide.

``plan_evolution`` turns the joint decision's proposals into an ``EvolutionPlan``: only ids the
model was shown, only types of the closed set, reasons that name the connection, CONTRADICTS only
with the two conflicting statements found in their notes, keywords and tags that only grow
(``guards.py``). ``screen_evolutions`` refuses evolved contexts that drift from their note, for
every decider. Every refusal is reported in the plan's ``rejected``. The rest shapes a plan for the
write: the link to the previous turn, the evolved neighbours, what an add reports of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace

from graphmem.models import (
    FOLLOWS_REASON,
    EvolutionPlan,
    Link,
    LinkType,
    NeighbourChange,
    NeighbourEvolution,
    Note,
)
from graphmem.service.linking import guards
from graphmem.service.linking.prompts import EvolutionDecision
from graphmem.service.text import cosine

Embed = Callable[[Sequence[str]], Awaitable[list[list[float]]]]

MAX_REASON_CHARS = 300
MAX_CONTEXT_CHARS = 500


def loose_id(text: str) -> str:
    """An id as a small model may echo it: quoted, in another case, or with the prompt's "id:" label.
    Only exact matches of a shown id survive this, so nothing unshown can be reached."""
    text = text.strip().strip("\"'`[]<>").strip().lower()
    return text[3:].strip() if text.startswith("id:") else text


def norm(text: str) -> str:
    return " ".join(text.lower().split())


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
            neighbour = shown[target]
            reason = p.reason.strip()[:MAX_REASON_CHARS]
            refusal = guards.reason_refusal(reason, note, neighbour)
            if refusal is not None:
                plan.rejected.append(f"reason for the link to {target[:40]!r}: {refusal}; the shared words are used")
                reason = guards.shared_words_reason(note, neighbour)
            link_type = LinkType(p.type)
            if link_type == LinkType.CONTRADICTS:
                unsupported = guards.contradiction_refusal(p.new_statement, p.neighbour_statement, note, neighbour)
                if unsupported is not None:
                    plan.rejected.append(f"link to {target[:40]!r}: {unsupported}; kept as {LinkType.RELATED_TO}")
                    link_type = LinkType.RELATED_TO
            chosen[target] = Link(
                source_id=note.id,
                target_id=target,
                type=link_type,
                reason=reason,
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
                tags=guards.grown(old.tags, u.tags),
                keywords=guards.grown(old.keywords, u.keywords),
            )
            if new.after() == {"context": old.context, "tags": old.tags, "keywords": old.keywords}:
                continue
            updates[target] = new
    plan.links = list(chosen.values())
    plan.updates = list(updates.values())
    return plan


async def screen_evolutions(plan: EvolutionPlan, note: Note, neighbours: Sequence[Note], embed: Embed) -> EvolutionPlan:
    """Refuse evolved contexts that drift from their note (``guards.evolution_refusal``); a refused
    update keeps the neighbour's context and only grows its keywords and tags (if it did at all)."""
    changed = [u for u in plan.updates if u.context != u.before.context]
    if not changed:
        return plan
    texts = [note.content, *(n.content for n in neighbours)]
    vectors = await embed([*texts, *(u.context for u in changed)])
    own_text = {n.id: vectors[i + 1] for i, n in enumerate(neighbours)}
    kept: list[NeighbourEvolution] = [u for u in plan.updates if u.context == u.before.context]
    for u, vec in zip(changed, vectors[len(texts) :], strict=True):
        others = [n for n in neighbours if n.id != u.before.id]
        sim_others = [cosine(vec, vectors[0]), *(cosine(vec, own_text[n.id]) for n in others)]
        refusal = guards.evolution_refusal(
            u.context, u.before, note, others, cosine(vec, own_text[u.before.id]), sim_others
        )
        if refusal is None:
            kept.append(u)
            continue
        plan.rejected.append(f"update of {u.before.id[:40]!r}: {refusal}")
        if (u.tags, u.keywords) != (u.before.tags, u.before.keywords):
            kept.append(NeighbourEvolution(before=u.before, context=u.before.context, tags=u.tags, keywords=u.keywords))
    return EvolutionPlan(links=plan.links, updates=kept, rejected=plan.rejected, candidates=plan.candidates)


def follows_link(source_id: str, target_id: str) -> Link:
    """The link of a conversation turn to the turn before it."""
    return Link(source_id=source_id, target_id=target_id, type=LinkType.FOLLOWS, reason=FOLLOWS_REASON, strength=1.0)


def with_follows(plan: EvolutionPlan, source_id: str, follows: str | None) -> EvolutionPlan:
    """The plan plus the FOLLOWS link to the previous turn (replacing a FOLLOWS the LLM proposed to it)."""
    if follows is None:
        return plan
    kept = [x for x in plan.links if not (x.target_id == follows and x.type == LinkType.FOLLOWS)]
    return EvolutionPlan(
        links=[*kept, follows_link(source_id, follows)],
        updates=plan.updates,
        rejected=plan.rejected,
        candidates=plan.candidates,
    )


# A neighbour's keywords with the lent ones stop here (its own are never cut): a note many later notes
# link to would otherwise match every query through the full-text index.
LENT_KEYWORDS_MAX = 24


def lent_keywords(current: Sequence[str], lender: Sequence[str]) -> list[str]:
    """The lender's keywords a note with keywords ``current`` lacks (case-insensitive, each once, in
    the lender's order), as many as fit under ``LENT_KEYWORDS_MAX``."""
    have = {w.lower() for w in current}
    out: list[str] = []
    for w in lender:
        if w.lower() not in have:
            have.add(w.lower())
            out.append(w)
    return out[: max(LENT_KEYWORDS_MAX - len(current), 0)]


def lend_words(plan: EvolutionPlan, note: Note, neighbours: Sequence[Note]) -> EvolutionPlan:
    """Evolution without a call: each neighbour the plan links to gets the new note's keywords it
    lacks (``lent_keywords``), on top of what the LLM evolved it to. Only keywords change: the words
    reach the full-text index; the neighbour's context, tags and search vector stay (pooled over
    conv-30 and conv-41, budgeted recall +0.012 [+0.001, +0.026] with these words,
    docs/evaluation.md). The LLM chose the link; the words are the new note's own keywords."""
    shown = {n.id: n for n in neighbours}
    planned = {u.before.id: u for u in plan.updates}
    updates = list(plan.updates)
    for target in dict.fromkeys(
        x.target_id for x in plan.links if x.type != LinkType.FOLLOWS or x.reason != FOLLOWS_REASON
    ):
        neighbour = shown.get(target)
        if neighbour is None:
            continue
        base = planned.get(target) or NeighbourEvolution(
            before=neighbour, context=neighbour.context, tags=neighbour.tags, keywords=neighbour.keywords
        )
        lent = lent_keywords(base.keywords, note.keywords)
        if not lent:
            continue
        evolved = replace(base, keywords=[*base.keywords, *lent])
        if target in planned:
            updates[updates.index(planned[target])] = evolved
        else:
            updates.append(evolved)
        planned[target] = evolved
    return EvolutionPlan(links=plan.links, updates=updates, rejected=plan.rejected, candidates=plan.candidates)


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
