"""How many LoCoMo evidence pairs each link-candidate policy could join (issue 27), without the LLM.

The pairwise decider judges each new note's candidates: its ``k`` nearest earlier notes by cosine and
``w`` earlier notes sharing its rarer words. The 1.5B says yes to most candidates, so the candidates
bound what its links can join. For each policy this prints the evidence pairs (two evidence turns of
one question) joined when every candidate is linked, beside linking each note to as many of its
nearest earlier notes (``eval links``' nearest-neighbour baseline). Reads a stored ingest (``eval
locomo --ingest-only``) from the Neo4j in the environment; prints numbers only. ``candidates.py``
beside it asks the shipped ``AddSteps.neighbours`` on raw notes instead; this one compares with the
nearest-neighbour links ``eval links`` uses as its baseline.

    python tools/research/candidate_ceiling.py --data locomo-dev.json --tag qwen2.5-coder-1.5b-el--11177d -c conv-26 -c conv-30
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from graphmem.config import get_settings
from graphmem.evaluation.links import edge, evidence_pairs, link_edges
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.retrieval import scope_for
from graphmem.service import AsyncMemoryService
from graphmem.service.grounding import said, speaker_of
from graphmem.service.retrieve import COMMON_SHARE
from graphmem.service.wording import content_words, stem

# (nearest, word, nearest from another session): the last is the "previous mention of the same
# subject in another session" the write-path issue suggests; LoCoMo source ids start with the session
POLICIES = {
    "2 nearest + 1 word (default)": (2, 1, 0),
    "3 nearest": (3, 0, 0),
    "1 nearest + 2 word": (1, 2, 0),
    "2 nearest + 2 word": (2, 2, 0),
    "2 nearest + 1 other session": (2, 0, 1),
    "1 nearest + 1 word + 1 other session": (1, 1, 1),
}


def choices(recs: list[dict[str, Any]], k: int, w: int, x: int = 0) -> Iterator[tuple[int, list[int], list[int]]]:
    """Per note (after the first): its position, the earlier notes the policy judges, and every earlier
    note nearest first."""
    session = [str(r["source_id"]).split(":")[0] for r in recs]
    mat = np.asarray([r["embedding"] for r in recs], dtype=np.float64)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    speakers = {stem(s) for r in recs if (s := speaker_of(r["content"]))}
    words = [content_words(said(r["content"])) - speakers for r in recs]
    df = collections.Counter(x for ws in words for x in ws)
    rare = [{x for x in ws if df[x] / len(recs) < COMMON_SHARE} for ws in words]
    idf = {x: math.log(len(recs) / c) for x, c in df.items()}
    for i in range(1, len(recs)):
        order = [int(j) for j in np.argsort(-(mat[:i] @ mat[i]), kind="stable")]
        nearest = order[:k]
        scored = sorted(
            ((sum(idf[x] for x in rare[i] & rare[j]), j) for j in range(i) if j not in nearest and rare[i] & rare[j]),
            key=lambda s: (-s[0], -s[1]),
        )
        chosen = nearest + [j for _, j in scored[:w]]
        chosen += [j for j in order if session[j] != session[i] and j not in chosen][:x]
        yield i, chosen, order


def policy_edges(recs: list[dict[str, Any]], k: int, w: int, x: int = 0) -> tuple[set[Any], set[Any]]:
    """(candidate edges, nearest-neighbour edges with the same count per note), earlier notes only."""
    ids = [r["id"] for r in recs]
    cand, near = set(), set()
    for i, chosen, order in choices(recs, k, w, x):
        cand |= {edge(ids[i], ids[j]) for j in chosen}
        near |= {edge(ids[i], ids[j]) for j in order[: len(chosen)]}
    return cand, near


async def main(args: argparse.Namespace) -> None:
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    totals: collections.Counter[str] = collections.Counter()
    service = await AsyncMemoryService.create(get_settings())
    async with service as svc:
        for sid in args.conversations:
            recs = [r for r in await svc.export_notes(scope_for(args.tag, sid)) if r.get("source_id")]
            dia = {r["source_id"]: r["id"] for r in recs}
            pairs = [edge(dia[p.a], dia[p.b]) for p in evidence_pairs(convs[sid], set(dia), [1, 2, 3, 4], None)]
            stored = link_edges(recs, turn=False)
            print(
                f"{sid}: {len(recs)} notes, {len(pairs)} evidence pairs; the stored LLM links join "
                f"{sum(p in stored for p in pairs)}"
            )
            totals["pairs"] += len(pairs)
            for name, (k, w, x) in POLICIES.items():
                cand, near = policy_edges(recs, k, w, x)
                c, n = sum(p in cand for p in pairs), sum(p in near for p in pairs)
                totals[name + " c"] += c
                totals[name + " n"] += n
                print(f"  {name:30s} candidates join {c:3d}, nearest (same count) {n:3d}")
    print(f"all: {totals['pairs']} pairs")
    for name in POLICIES:
        c, n = totals[name + " c"], totals[name + " n"]
        print(f"  {name:30s} {c:3d} against {n:3d}: {c / max(n, 1):.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("-c", "--conversations", action="append", required=True)
    asyncio.run(main(parser.parse_args()))
