"""Budgeted recall of ``ask``'s context with and without the hits' linked notes filling what the budget
leaves after the hits (``GRAPHMEM_ANSWER_FILL_LINKS_PER_HIT``), paired over questions (issue 26).

Reads stored scopes from the Neo4j in the environment: an ingest (``eval locomo --ingest-only``, tag of
its run) or the raw turns ``eval retrieval`` stores (tag ``raw-full-follows``). Asks nothing of the
LLM; prints numbers only (no LoCoMo text).

    python tools/research/fill_links.py --data locomo-dev.json --run raw-full-follows:conv-26 \\
        --run raw-full-follows:conv-43 [--fill 2]
"""

from __future__ import annotations

import argparse
import asyncio

from graphmem.config import get_settings
from graphmem.evaluation.compare import paired_bootstrap
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.retrieval import scope_for
from graphmem.service import AsyncMemoryService

GROUPS = {"1-4": (1, 2, 3, 4), "1 multi-hop": (1,), "2 temporal": (2,), "3 open domain": (3,), "4 single hop": (4,)}


async def main(args: argparse.Namespace) -> None:
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    base = get_settings()
    rows: list[tuple[int, list[tuple[float, int, int]]]] = []  # (category, [(recall, tokens, notes)] off, on)
    off = await AsyncMemoryService.create(base.model_copy(update={"answer_fill_links_per_hit": 0}))
    on = await AsyncMemoryService.create(base.model_copy(update={"answer_fill_links_per_hit": args.fill}))
    async with off, on:
        for run in args.run:
            tag, sid = run.rsplit(":", 1)
            scope = scope_for(tag, sid)
            for q in convs[sid].questions(categories=[1, 2, 3, 4]):
                evidence = set(q.evidence)
                if not evidence:
                    continue
                arms = []
                for svc in (off, on):
                    ctx = await svc.ask_context(q.question, scope)
                    found = {h.note.source_id for h in ctx.hits}
                    arms.append((len(evidence & found) / len(evidence), ctx.tokens, len(ctx.hits)))
                rows.append((q.category, arms))
    print(f"{len(rows)} questions; ask's context without / with {args.fill} linked notes per hit after the hits")
    for group, cats in GROUPS.items():
        sel = [arms for c, arms in rows if c in cats]
        if not sel:
            continue

        def mean(i: int, j: int, sel: list[list[tuple[float, int, int]]] = sel) -> float:
            return sum(a[i][j] for a in sel) / len(sel)

        d = paired_bootstrap([a[1][0] for a in sel], [a[0][0] for a in sel])
        assert d is not None
        complete = [sum(a[i][0] == 1.0 for a in sel) for i in (0, 1)]
        print(
            f"{group:13s} n={len(sel):3d} recall {mean(0, 0):.3f} -> {mean(1, 0):.3f}, "
            f"{d['mean']:+.3f} [{d['ci95_low']:+.3f}, {d['ci95_high']:+.3f}]; complete {complete[0]} -> {complete[1]}; "
            f"tokens {mean(0, 1):.0f} -> {mean(1, 1):.0f}; notes {mean(0, 2):.1f} -> {mean(1, 2):.1f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--run", action="append", required=True, help="TAG:SAMPLE_ID of stored notes")
    parser.add_argument("--fill", type=int, default=2, help="linked notes per hit after the hits")
    asyncio.run(main(parser.parse_args()))
