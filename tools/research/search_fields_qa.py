"""QA F1 of the memory's answers under two search settings (``GRAPHMEM_SEARCH_TEXT_FIELDS``), paired per
question, from one answers file that holds both (issue 26/27: does the recall gain of reading content and
tags reach the answers?).

Reads the answers file only (no Neo4j, no LLM); the memory's answer key under each setting comes from the
harness (``qa_systems.resolve_arms``), so the pairing is the one ``eval locomo`` would make. Prints numbers
only (no LoCoMo text).

    python tools/research/search_fields_qa.py --data locomo-dev.json -c conv-41 \\
        --tag qwen2.5-coder-1.5b-el--41fa0e --answers answers.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path

from graphmem.config import get_settings
from graphmem.evaluation import metrics
from graphmem.evaluation.compare import compare_systems
from graphmem.evaluation.locomo import load_locomo, select
from graphmem.evaluation.qa import select_questions
from graphmem.evaluation.qa_answers import load_answers
from graphmem.evaluation.qa_systems import QAConfig, default_raw_tag, resolve_arms
from graphmem.models import TEXT_FIELDS


def main(args: argparse.Namespace) -> None:
    convs = select(load_locomo(args.data), args.conversations)
    cfg = QAConfig(categories=(1, 2, 3, 4), systems=("memory",), tag=args.tag)
    base = get_settings()
    done = load_answers(Path(args.answers))
    questions = select_questions(convs, cfg)
    records = []
    for label, fields in (("a", args.a), ("b", args.b)):
        settings = base.model_copy(update={"search_text_fields": fields})
        (arm,) = resolve_arms(settings, cfg, args.tag, default_raw_tag(settings))
        for sid, qs in questions.items():
            for q in qs:
                rec = done.get(arm.record_key(sid, q.index))
                if rec is None or rec.get("error"):
                    continue
                scores = metrics.score_answer(rec["prediction"], rec["gold"], rec["category"])
                records.append({**rec, "system": label, "scores": scores})
    print(
        f"a: search reads {args.a}; b: search reads {args.b}; answers a {sum(r['system'] == 'a' for r in records)}, "
        f"b {sum(r['system'] == 'b' for r in records)}"
    )
    (cmp,) = compare_systems(records, ["b", "a"], reps=2000, seed=0)
    for group in ("overall", "1", "2", "3", "4"):
        g = cmp["groups"].get(group)
        if g:
            print(
                f"{group:8s} n={g['n']:3d} b - a F1 {100 * g['mean']:+.1f} "
                f"[{100 * g['ci95_low']:+.1f}, {100 * g['ci95_high']:+.1f}]"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("-c", "--conversations", action="append", required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--answers", required=True)
    parser.add_argument("--a", default=",".join(TEXT_FIELDS), help="fields of the first setting (default: every)")
    parser.add_argument("--b", default="content,tags", help="fields of the second setting (default: the default)")
    main(parser.parse_args())
