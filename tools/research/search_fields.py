"""Budgeted recall of ``ask``'s context with hybrid search reading other note fields (``--against``, default
every field) against the default
(``GRAPHMEM_SEARCH_TEXT_FIELDS``: content and tags), paired over the same questions (issue 26/27).

Reads a stored ingest (``eval locomo --ingest-only``) from the Neo4j in the environment; asks nothing of
the LLM; prints numbers only (no LoCoMo text).

    python tools/research/search_fields.py --data locomo-dev.json --tag qwen2.5-coder-1.5b-el--467092 -c conv-42
"""

from __future__ import annotations

import argparse
import asyncio
import random

from graphmem.config import get_settings
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.retrieval import scope_for
from graphmem.models import TEXT_FIELDS
from graphmem.service import AsyncMemoryService


def interval(diffs: list[float], draws: int = 2000) -> tuple[float, float, float]:
    """Mean and 95 % bootstrap interval (seed 0)."""
    rnd, n = random.Random(0), len(diffs)
    means = sorted(sum(diffs[rnd.randrange(n)] for _ in range(n)) / n for _ in range(draws))
    return sum(diffs) / n, means[int(0.025 * draws)], means[int(0.975 * draws) - 1]


async def main(args: argparse.Namespace) -> None:
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    base = get_settings()
    every = await AsyncMemoryService.create(base.model_copy(update={"search_text_fields": args.against}))
    rows: list[tuple[int, float, float]] = []
    async with await AsyncMemoryService.create(base) as default, every:
        for sid in args.conversations:
            for q in convs[sid].questions(categories=[1, 2, 3, 4]):
                evidence = set(q.evidence)
                if not evidence:
                    continue
                recall = []
                for svc in (every, default):
                    ctx = await svc.ask_context(q.question, scope_for(args.tag, sid))
                    recall.append(len(evidence & {h.note.source_id for h in ctx.hits}) / len(evidence))
                rows.append((q.category, recall[0], recall[1]))
    print(f"default reads: {base.search_text_fields}; against: {every.settings.search_text_fields}")
    for name, cats in (("overall", (1, 2, 3, 4)), *((f"category {c}", (c,)) for c in (1, 2, 3, 4))):
        sel = [r for r in rows if r[0] in cats]
        if sel:
            mean, lo, hi = interval([r[2] - r[1] for r in sel])
            a, b = (sum(r[i] for r in sel) / len(sel) for i in (1, 2))
            print(f"{name:11s} n={len(sel):3d} against {a:.3f} default {b:.3f} diff {mean:+.3f} [{lo:+.3f}, {hi:+.3f}]")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("-c", "--conversations", action="append", required=True)
    parser.add_argument("--against", default=",".join(TEXT_FIELDS), help="fields to compare the default with")
    asyncio.run(main(parser.parse_args()))
