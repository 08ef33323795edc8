"""Evidence connectivity at 1 hop of the LLM links kept at P(yes) >= t, against nearest-neighbour links of
the same count per note, for a range of t (issue 27: would a more selective judge beat the embedding?).

Reads stored ingests (``eval locomo --ingest-only``) from the Neo4j in the environment; each stored LLM
link keeps its P(yes) as ``strength``, so one ingest at the default threshold scores every higher one.
Asks nothing of the LLM; prints numbers only (no LoCoMo text). Evidence pairs are selected and counted
per question as ``eval links`` does.

    python tools/research/link_threshold_replay.py --data locomo-dev.json \\
        --run qwen2.5-coder-1.5b-el--467092:conv-42 --run qwen2.5-coder-1.5b-el--41fa0e:conv-41
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from graphmem.config import get_settings
from graphmem.evaluation.links import (
    adjacency,
    is_turn_link,
    joined,
    link_edges,
    nearest_neighbour_edges,
    stored_evidence_pairs,
    turn_notes,
)
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.retrieval import scope_for
from graphmem.service import AsyncMemoryService

THRESHOLDS = (0.26, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)


def kept_at(records: list[dict[str, Any]], t: float) -> list[dict[str, Any]]:
    """The records with their LLM links below ``t`` removed (turn links stay)."""
    return [
        {
            **r,
            "links": [
                link
                for link in r.get("links") or []
                if is_turn_link(link) or (link.get("strength") is not None and float(link["strength"]) >= t)
            ],
        }
        for r in records
    ]


async def main(args: argparse.Namespace) -> None:
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    pooled = {t: [0, 0, 0, 0] for t in THRESHOLDS}
    async with await AsyncMemoryService.create(get_settings()) as svc:
        for run in args.run:
            tag, sid = run.rsplit(":", 1)
            records = await svc.export_notes(scope_for(tag, sid))
            note_of = turn_notes(records)
            ids = [r["id"] for r in records]
            pairs = stored_evidence_pairs(convs[sid], note_of, [1, 2, 3, 4])  # as `eval links` selects them
            print(f"{sid}: {len(records)} notes, {len(pairs)} evidence pairs")
            for t in THRESHOLDS:
                kept = kept_at(records, t)
                llm = link_edges(kept, turn=False)
                nn = nearest_neighbour_edges(kept, llm)
                by_llm, by_nn = adjacency(ids, llm), adjacency(ids, nn)
                j_llm = sum(joined(by_llm, note_of[p.a], note_of[p.b])[0] for p in pairs)
                j_nn = sum(joined(by_nn, note_of[p.a], note_of[p.b])[0] for p in pairs)
                print(
                    f"  P(yes) >= {t:.2f}: {len(llm):5d} LLM links join {j_llm:3d}, nearest {j_nn:3d}, "
                    f"ratio {j_llm / max(j_nn, 1):.2f}"
                )
                for i, v in enumerate((len(llm), j_llm, j_nn, len(pairs))):
                    pooled[t][i] += v
    print("pooled")
    for t in THRESHOLDS:
        n, j_llm, j_nn, total = pooled[t]
        print(
            f"  P(yes) >= {t:.2f}: {n:5d} LLM links join {j_llm:3d} of {total}, nearest {j_nn:3d}, "
            f"ratio {j_llm / max(j_nn, 1):.2f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--run", action="append", required=True, help="TAG:SAMPLE_ID of a stored ingest")
    asyncio.run(main(parser.parse_args()))
