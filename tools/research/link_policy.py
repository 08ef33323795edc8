"""What each link-candidate policy's LLM links join, against nearest-neighbour links (issue 27).

``candidate_ceiling.py`` links every candidate; here the shipped pairwise question
(``related_messages``, P(yes) >= ``GRAPHMEM_LINK_THRESHOLD``) decides, as an ingest would, on the
stored notes of a kept ingest. Only the notes that are the later turn of an evidence pair are asked
(a pair is joined by the later note's decision, and the nearest-neighbour baseline links that note to
as many of its nearest earlier notes as it got LLM links), so a policy costs a few hundred one-token
calls instead of an ingest. Answers are cached across policies. Prints numbers only.

    python tools/research/link_policy.py --data locomo-dev.json --tag qwen2.5-coder-1.5b-el--e5bfd1 -c conv-26 -c conv-30
"""

from __future__ import annotations

import argparse
import asyncio
import collections
from typing import Any

from candidate_ceiling import POLICIES, choices

from graphmem.config import get_settings
from graphmem.evaluation.links import evidence_pairs
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.retrieval import scope_for
from graphmem.llm.calls import LLMCaller
from graphmem.local import chat_model
from graphmem.models import Note, Scope, Usage
from graphmem.service import AsyncMemoryService
from graphmem.service.linking.prompts import related_messages


async def judge(
    llm: LLMCaller, recs: list[dict[str, Any]], scope: Scope, asked: set[tuple[int, int]], parallel: int, usage: Usage
) -> dict[tuple[int, int], float]:
    """P(yes) of the pairwise question for each (later, earlier) position pair, ``parallel`` in flight."""
    sem = asyncio.Semaphore(parallel)

    async def one(i: int, j: int) -> float:
        earlier = Note(id=recs[j]["id"], content=recs[j]["content"], scope=scope)
        later = Note(id=recs[i]["id"], content=recs[i]["content"], scope=scope)
        async with sem:
            return await llm.yes_probability(related_messages(earlier, later), usage)

    order = sorted(asked)
    return dict(zip(order, await asyncio.gather(*(one(i, j) for i, j in order)), strict=True))


async def main(args: argparse.Namespace) -> None:
    settings = get_settings()
    threshold = settings.link_threshold
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    totals: collections.Counter[str] = collections.Counter()
    async with await AsyncMemoryService.create(settings, chat_model=chat_model(settings)) as svc:
        llm = await svc.answer_caller()  # the chat model's caller: the same yes/no reading as an add
        usage = Usage()
        for sid in args.conversations:
            scope = scope_for(args.tag, sid)
            recs = [r for r in await svc.export_notes(scope) if r.get("source_id")]
            index = {r["source_id"]: i for i, r in enumerate(recs)}
            pairs = [
                (max(index[p.a], index[p.b]), min(index[p.a], index[p.b]))
                for p in evidence_pairs(convs[sid], set(index), [1, 2, 3, 4], None)
            ]
            later = {i for i, _ in pairs}
            plans = {
                name: {i: (chosen, order) for i, chosen, order in choices(recs, *policy) if i in later}
                for name, policy in POLICIES.items()
            }
            asked = {(i, j) for plan in plans.values() for i, (chosen, _) in plan.items() for j in chosen}
            p_yes = await judge(llm, recs, scope, asked, args.parallel, usage)
            print(f"{sid}: {len(recs)} notes, {len(pairs)} evidence pairs, {len(asked)} pairs asked")
            totals["pairs"] += len(pairs)
            for name, plan in plans.items():
                linked = {i: [j for j in chosen if p_yes[(i, j)] >= threshold] for i, (chosen, _) in plan.items()}
                near = {i: set(order[: len(linked[i])]) for i, (_, order) in plan.items()}
                totals[name + " llm"] += (joined := sum(j in linked[i] for i, j in pairs))
                totals[name + " nn"] += (nn := sum(j in near[i] for i, j in pairs))
                print(f"  {name:38s} LLM links join {joined:3d}, nearest (same count) {nn:3d}")
        print(
            f"all: {totals['pairs']} pairs; {usage.llm_calls} calls, {usage.total_tokens} tokens; threshold {threshold}"
        )
        for name in POLICIES:
            joined, nn = totals[name + " llm"], totals[name + " nn"]
            print(f"  {name:38s} {joined:3d} against {nn:3d}: {joined / max(nn, 1):.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("-c", "--conversations", action="append", required=True)
    parser.add_argument("--parallel", type=int, default=2, help="questions in flight")
    asyncio.run(main(parser.parse_args()))
