"""How many stored answers were given a context that ``ask`` no longer gives: the same question,
ingest, settings and code, ``ask_context`` now against the notes the answer record says it used
(``retrieved``). A stored answer is reused by key; its context depends on the database's state too
(the full-text index's term statistics span every scope), so runs answered on different days can
differ by more than the setting they were run to compare. Asks nothing of the LLM; prints numbers
only (no LoCoMo text).

    python tools/research/context_drift.py --data locomo-dev.json --answers c42/qa/answers.jsonl \\
        --key 527976cbca --tag qwen2.5-coder-1.5b-el--467092 -c conv-42 [--fill 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from graphmem.config import get_settings
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.retrieval import scope_for
from graphmem.service import AsyncMemoryService


async def main(args: argparse.Namespace) -> None:
    conv = {c.sample_id: c for c in load_locomo(args.data)}[args.conversation]
    stored: dict[int, list[str]] = {}
    with args.answers.open(encoding="utf-8") as lines:
        for line in lines:
            rec = json.loads(line)
            if rec["key"].startswith(args.key + ":") and rec["sample_id"] == conv.sample_id and not rec.get("error"):
                stored[rec["qa_index"]] = rec.get("retrieved") or []
    settings = get_settings().model_copy(update={"answer_fill_links_per_hit": args.fill})
    same = moved = 0
    async with await AsyncMemoryService.create(settings) as svc:
        for q in conv.qa:
            if q.index not in stored:
                continue
            now = [
                h.note.source_id for h in (await svc.ask_context(q.question, scope_for(args.tag, conv.sample_id))).hits
            ]
            if now == stored[q.index]:
                same += 1
            else:
                moved += 1
    print(f"{conv.sample_id}, answers {args.key}: {same} contexts as stored, {moved} differ now")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--answers", required=True, type=Path)
    parser.add_argument("--key", required=True, help="the answers' key (the arm's key in qa.json)")
    parser.add_argument("--tag", required=True, help="the ingest's scope tag")
    parser.add_argument("-c", "--conversation", required=True)
    parser.add_argument("--fill", type=int, default=0, help="GRAPHMEM_ANSWER_FILL_LINKS_PER_HIT the answers had")
    asyncio.run(main(parser.parse_args()))
