"""Would maximal marginal relevance (MMR) put more evidence into ``ask``'s context? The search's top
``--pool`` hits are reordered greedily by ``lam * relevance - (1 - lam) * max cosine to the hits already
taken`` (relevance: the search's own rank, 1 at the top), the first ``answer_k`` are packed into the
budget as ``ask`` packs them, and the evidence recall is compared with the shipped order (lam = 1), paired
over questions (issue 26: multi-hop evidence spread over sessions).

Reads stored ingests (``eval locomo --ingest-only``) from the Neo4j in the environment; asks nothing of
the LLM; prints numbers only (no LoCoMo text).

    python tools/research/mmr_replay.py --data locomo-dev.json \\
        --run qwen2.5-coder-1.5b-el--467092:conv-42 --run qwen2.5-coder-1.5b-el--41fa0e:conv-41
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping, Sequence

import numpy as np
from recall_table import recall_lines

from graphmem.config import get_settings
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.retrieval import scope_for
from graphmem.models import SearchHit
from graphmem.service import AsyncMemoryService
from graphmem.service.answer_context import build_context

LAMBDAS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)


def mmr(hits: Sequence[SearchHit], vectors: Mapping[str, Sequence[float]], lam: float, k: int) -> list[SearchHit]:
    """The first ``k`` hits in MMR order (lam = 1 keeps the search's order)."""
    mat = np.asarray([vectors[h.note.id] for h in hits], dtype=np.float64)
    mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
    relevance = 1.0 - np.arange(len(hits)) / max(len(hits), 1)
    redundancy = np.zeros(len(hits))
    left, taken = list(range(len(hits))), []
    while left and len(taken) < k:
        best = max(left, key=lambda i: lam * relevance[i] - (1 - lam) * redundancy[i])
        taken.append(best)
        left.remove(best)
        redundancy = np.maximum(redundancy, mat @ mat[best])
    return [hits[i] for i in taken]


async def main(args: argparse.Namespace) -> None:
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    settings = get_settings()
    rows: list[tuple[int, dict[float, float]]] = []
    async with await AsyncMemoryService.create(settings) as svc:
        for run in args.run:
            tag, sid = run.rsplit(":", 1)
            scope = scope_for(tag, sid)
            vectors = {r["id"]: r["embedding"] for r in await svc.export_notes(scope)}
            for q in convs[sid].questions(categories=[1, 2, 3, 4]):
                evidence = set(q.evidence)
                if not evidence:
                    continue
                # history=True: the default context keeps a superseded hit beside its current note
                hits = await svc.search(q.question, scope, k=args.pool, links_per_hit=0, history=True)
                recall = {}
                for lam in LAMBDAS:
                    chosen = mmr(hits, vectors, lam, settings.answer_k)
                    ctx = build_context(
                        [h.note for h in chosen],
                        settings.context_token_budget,
                        with_context=settings.answer_shows_context,
                    )
                    recall[lam] = len(evidence & {chosen[i].note.source_id for i in ctx.used}) / len(evidence)
                rows.append((q.category, recall))
    print(f"pool {args.pool}, k {settings.answer_k}, budget {settings.context_token_budget}; {len(rows)} questions")
    for line in recall_lines(rows, LAMBDAS, 1.0, lambda lam: f"{lam}:"):
        print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--run", action="append", required=True, help="TAG:SAMPLE_ID of a stored ingest")
    parser.add_argument("--pool", type=int, default=40, help="search hits MMR reorders")
    asyncio.run(main(parser.parse_args()))
