"""Which evidence pairs can the link decision see? LLM-free research for issue 27's link candidates.

For every LoCoMo question with two or more evidence turns, each pair (earlier turn a, later turn b)
is a link the answer needs. The link decision can only join a and b when a is among b's
candidates: the add steps' ``neighbours`` of b over the notes before b (raw notes, stored without
the LLM, one scope per conversation). This script stores the turns, asks ``AddSteps.neighbours``
(the shipped function) for every later evidence turn, and reports the share of pairs whose earlier
turn is among the first N candidates, for the nearest notes alone and for the nearest plus the
notes that share the later turn's rarer words, at equal numbers of judged candidates.

    python tools/research/candidates.py --data ../shared/data/locomo/locomo-dev.json --out DIR

Writes candidates.json (counts only: no LoCoMo text). Needs a Neo4j (NEO4J_URI); the notes stay in
the scopes ``research-candidates/<sample>`` (a rerun reuses them).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import json
from pathlib import Path
from typing import Any

from graphmem import AsyncMemoryService
from graphmem.config import load_settings
from graphmem.evaluation.locomo import load_locomo, turn_inputs
from graphmem.models import ConstructedNote, Scope, Usage

CONFIGS = [  # (name, nearest judged, word candidates): pairs of equal cost side by side
    ("nearest-2", 2, 0),
    ("nearest-3", 3, 0),
    ("nearest-2+words-1", 2, 1),
    ("nearest-4", 4, 0),
    ("nearest-2+words-2", 2, 2),
    ("nearest-1+words-2", 1, 2),  # the default since 7 December
    ("words-2", 0, 2),
    ("words-3", 0, 3),
    ("nearest-1+words-3", 1, 3),
    ("words-4", 0, 4),
]


async def coverage(svc: AsyncMemoryService, conv: Any) -> dict[str, Any]:
    scope = Scope(user_id="research-candidates", agent_id=conv.sample_id)
    items = turn_inputs(conv, tag="cand", follows=False)
    order = {it.source_id: i for i, it in enumerate(items)}
    if await svc.count(scope) < len(items):
        await svc.ingest(items, scope, concurrency=4)
    ids = {it.source_id: it.note_id for it in items}
    pairs: dict[str, set[tuple[str, str]]] = {"multi-hop": set(), "all": set()}
    for q in conv.qa:
        ev = sorted({e for e in q.evidence if e in order}, key=order.__getitem__)
        for a, b in itertools.combinations(ev, 2):
            pairs["all"].add((a, b))
            if q.category == 1:
                pairs["multi-hop"].add((a, b))
    later = sorted({b for _, b in pairs["all"]}, key=order.__getitem__)
    seen: dict[str, dict[str, list[str]]] = {}
    for b in later:
        note = await svc.store.get(ids[b], scope, with_embedding=True)
        assert note is not None and note.embedding is not None
        after = [it.note_id for it in items[order[b] + 1 :] if it.note_id]
        built = ConstructedNote(note=note, embedding=list(note.embedding), usage=Usage())
        seen[b] = {}
        for name, nearest, words in CONFIGS:
            steps = copy.copy(svc.steps)  # its own settings: the service's steps stay as they are
            steps.settings = svc.settings.model_copy(
                update={"link_candidates": nearest, "link_word_candidates": words, "neighbour_k": max(nearest, 5)}
            )
            found = await steps.neighbours(built, exclude_ids=after)
            seen[b][name] = [n.source_id or "" for n in found[: nearest + words]]
    out: dict[str, Any] = {"conversation": conv.sample_id, "turns": len(items)}
    for kind, ps in pairs.items():
        out[kind] = {"pairs": len(ps)}
        for name, _, _ in CONFIGS:
            out[kind][name] = sum(1 for a, b in ps if a in seen[b][name])
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("-c", "--conversations", default="")
    args = ap.parse_args()
    settings = load_settings().model_copy(
        update={"enable_enrichment": False, "enable_links": False, "enable_evolution": False}
    )
    convs = load_locomo(args.data)
    wanted = {c for c in args.conversations.split(",") if c}
    results = []
    async with await AsyncMemoryService.create(settings) as svc:
        for conv in convs:
            if wanted and conv.sample_id not in wanted:
                continue
            r = await coverage(svc, conv)
            results.append(r)
            print(json.dumps(r))
    total: dict[str, Any] = {}
    for kind in ("multi-hop", "all"):
        total[kind] = {k: sum(r[kind][k] for r in results) for k in results[0][kind]}
        for name, _, _ in CONFIGS:
            total[kind][f"{name}_share"] = round(total[kind][name] / max(1, total[kind]["pairs"]), 3)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "candidates.json").write_text(json.dumps({"conversations": results, "total": total}, indent=1))
    print(json.dumps(total, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
