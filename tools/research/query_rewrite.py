"""Does A-MEM's query rewrite (the question turned into keywords by the LLM, one call per question) put
more evidence into ``ask``'s context? Budgeted recall of ``ask_context`` searched with the question (the
shipped way), with the model's keywords alone (A-MEM's retrieval query) and with the question followed
by the keywords, paired over questions (issue 26: multi-hop evidence the question's words miss).

Reads stored ingests (``eval locomo --ingest-only``) from the Neo4j in the environment and asks the
configured model for each question's keywords once (kept in ``--cache``, a JSONL file of LoCoMo-derived
text: keep it out of git). Prints numbers only.

    python tools/research/query_rewrite.py --data locomo-dev.json --cache rewrites.jsonl \\
        --run qwen2.5-coder-1.5b-el--467092:conv-42 --run qwen2.5-coder-1.5b-el--41fa0e:conv-41
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage
from recall_table import recall_lines

from graphmem.config import get_settings
from graphmem.evaluation.locomo import load_locomo
from graphmem.evaluation.retrieval import scope_for
from graphmem.models import Usage
from graphmem.service import AsyncMemoryService

REWRITE = (
    "You turn a question about a chat between two people into search keywords for finding the chat lines "
    "that answer it. Return only keywords, comma-separated, at most 12: the people, things, places, events "
    "and activities the answer is about, and other words the chat may use for them."
)
QUERIES = ("question", "keywords", "question + keywords")


async def main(args: argparse.Namespace) -> None:
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    cache = Path(args.cache)
    keywords: dict[str, str] = {}
    if cache.exists():
        for line in cache.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            keywords[rec["key"]] = rec["keywords"]
    rows: list[tuple[int, dict[str, float]]] = []
    async with await AsyncMemoryService.create(get_settings()) as svc:
        llm = await svc.llm_caller()
        with cache.open("a", encoding="utf-8") as sink:
            for run in args.run:
                tag, sid = run.rsplit(":", 1)
                scope = scope_for(tag, sid)
                for q in convs[sid].questions(categories=[1, 2, 3, 4]):
                    evidence, key = set(q.evidence), f"{sid}:{q.index}"
                    if not evidence:
                        continue
                    if key not in keywords:  # asked once, kept: a rerun scores without the LLM
                        text = await llm.text([SystemMessage(REWRITE), HumanMessage(q.question)], Usage())
                        keywords[key] = " ".join(text.split())[:300]
                        sink.write(json.dumps({"key": key, "keywords": keywords[key]}) + "\n")
                        sink.flush()
                    recall = {}
                    for name, query in zip(
                        QUERIES, (q.question, keywords[key], f"{q.question} {keywords[key]}"), strict=True
                    ):
                        ctx = await svc.ask_context(query, scope)
                        recall[name] = len(evidence & {h.note.source_id for h in ctx.hits}) / len(evidence)
                    rows.append((q.category, recall))
    print(f"{len(rows)} questions; budgeted recall of ask's context (complete: every evidence turn in it)")
    for line in recall_lines(rows, QUERIES, "question", str):
        print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--cache", required=True, help="JSONL of the model's keywords per question (reused)")
    parser.add_argument("--run", action="append", required=True, help="TAG:SAMPLE_ID of a stored ingest")
    asyncio.run(main(parser.parse_args()))
