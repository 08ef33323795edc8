"""Would links between notes that share a rare LLM-written keyword or tag find evidence pairs that the
embedding misses (issue 27, deliverable 4)? Each note is linked to the earlier note that shares its rarest
term (document frequency <= 2 % of the notes, at least 2), and compared at 1 hop with nearest-neighbour
links of the same count per note, and with the stored LLM links alone and with the term links added.

Reads stored ingests (``eval locomo --ingest-only``) from the Neo4j in the environment. Asks nothing of the
LLM; prints numbers only (no LoCoMo text). Evidence pairs are selected as ``eval links`` selects them.

    python tools/research/term_link_replay.py --data locomo-dev.json \\
        --run qwen2.5-coder-1.5b-el--467092:conv-42 --run qwen2.5-coder-1.5b-el--41fa0e:conv-41
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from graphmem.config import get_settings
from graphmem.evaluation.links import (
    Edge,
    adjacency,
    edge,
    joined,
    link_edges,
    nearest_neighbour_edges,
    stored_evidence_pairs,
    turn_notes,
)
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.retrieval import scope_for
from graphmem.service import AsyncMemoryService

FIELDS = (("keywords",), ("tags",), ("keywords", "tags"))
RARE = 0.02


def terms(record: Mapping[str, Any], fields: Sequence[str]) -> set[str]:
    return {t.lower().strip() for f in fields for t in record.get(f) or [] if t.strip()}


def term_links(records: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> list[dict[str, Any]]:
    """The records, each with one link (as source) to the earlier note sharing its rarest rare term."""
    bags = [terms(r, fields) for r in records]
    df = Counter(t for bag in bags for t in bag)
    n = len(records)
    rare = {t for t, c in df.items() if c <= max(2, RARE * n)}
    out = []
    for i, r in enumerate(records):
        best: tuple[float, int] | None = None
        for j in range(i - 1, -1, -1):  # latest first: ties go to the most recent mention
            shared = bags[i] & bags[j] & rare
            if shared:
                score = max(math.log(n / df[t]) for t in shared)
                if best is None or score > best[0]:
                    best = (score, j)
        out.append({**r, "links": [] if best is None else [{"target_id": records[best[1]]["id"]}]})
    return out


def edges_of(records: Sequence[Mapping[str, Any]]) -> set[Edge]:
    return {edge(r["id"], link["target_id"]) for r in records for link in r["links"]}


def joined_pairs(ids: list[str], edges: set[Edge], *, pairs: Sequence[Any], note_of: Mapping[str, str]) -> int:
    """Evidence pairs whose notes share an edge."""
    adj = adjacency(ids, edges)
    return sum(joined(adj, note_of[p.a], note_of[p.b])[0] for p in pairs)


async def main(args: argparse.Namespace) -> None:
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    pooled: Counter[str] = Counter()
    async with await AsyncMemoryService.create(get_settings()) as svc:
        for run in args.run:
            tag, sid = run.rsplit(":", 1)
            records = await svc.export_notes(scope_for(tag, sid))
            note_of = turn_notes(records)
            ids = [r["id"] for r in records]
            pairs = stored_evidence_pairs(convs[sid], note_of, [1, 2, 3, 4])  # as `eval links` selects them

            hits = functools.partial(joined_pairs, ids, pairs=pairs, note_of=note_of)
            llm = link_edges(records, turn=False)
            print(f"{sid}: {len(records)} notes, {len(pairs)} evidence pairs, {len(llm)} LLM links join {hits(llm)}")
            pooled["pairs"] += len(pairs)
            pooled["llm"] += hits(llm)
            for fields in FIELDS:
                linked = term_links(records, fields)
                shared = edges_of(linked)
                nn = nearest_neighbour_edges(linked, shared)
                name = "+".join(fields)
                row = {"term": hits(shared), "nearest": hits(nn), "llm+term": hits(llm | shared)}
                print(
                    f"  {name:14s} {len(shared):4d} term links join {row['term']:3d}, nearest of the same count "
                    f"{row['nearest']:3d}; LLM links + term links {row['llm+term']:3d}"
                )
                for k, v in row.items():
                    pooled[f"{name} {k}"] += v
    print(f"pooled: {pooled['pairs']} evidence pairs, LLM links join {pooled['llm']}")
    for fields in FIELDS:
        name = "+".join(fields)
        t, nn, u = pooled[f"{name} term"], pooled[f"{name} nearest"], pooled[f"{name} llm+term"]
        print(f"  {name:14s} term links {t:3d}, nearest {nn:3d} (ratio {t / max(nn, 1):.2f}); LLM + term {u:3d}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--run", action="append", required=True, help="TAG:SAMPLE_ID of a stored ingest")
    asyncio.run(main(parser.parse_args()))
