"""Pool the answers of several ``eval locomo`` runs (one per conversation, each with its own ingest tag)
into one table: A-MEM F1 x100 per category and system, and the paired 95 % bootstrap of every difference
between systems, over all their questions of categories 1-4 (issue 26: the claim over whole
conversations, not one at a time).

Each ``qa.json`` (from a run or a ``--score-only`` run) names its answers file and the key of each
system's answers; a question counts for a pair of systems when both answered it without an error. Prints
numbers only (no LoCoMo text).

    python tools/research/pool_qa.py c41/qa.json=conv-41 c42/qa.json=conv-42 \\
        [--systems memory,memory-no-llm,rag,full-context]

A later ``qa.json`` replaces an earlier one's answers for the same system and question (list the run
whose answers count last). ``=SAMPLE[,SAMPLE]`` keeps those conversations of a run (an answers file may
hold others' answers);
``#LABEL`` names its systems ``SYSTEM/LABEL``, so two runs of one system under other settings pair
(``c41/fill/qa.json=conv-41#fill c41/qa.json=conv-41`` gives ``memory/fill - memory``).

``--evidence DATA`` (the LoCoMo file) adds, per system and category, the share of questions whose
context held every evidence turn and the F1 with and without them: it tells a retrieval shortfall (the
evidence was not there) from an answer shortfall (it was, and the answer missed). The whole
conversation holds every turn (the runs here cut none).
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import defaultdict
from pathlib import Path

from graphmem.evaluation.compare import paired_bootstrap
from graphmem.evaluation.locomo import CATEGORY_NAMES, load_locomo
from graphmem.evaluation.metrics import score_answer

CATEGORIES = (1, 2, 3, 4)

Question = tuple[str, int]  # (sample id, question index)
# system -> question -> (category, A-MEM F1, the dia ids its context held; None: every turn)
Scored = dict[str, dict[Question, tuple[int, float, set[str] | None]]]


def scored(qa_json: Path, samples: set[str] | None = None) -> Scored:
    """system -> (sample id, question index) -> (category, A-MEM F1, context) of the run's answers
    (failed left out)."""
    run = json.loads(qa_json.read_text(encoding="utf-8"))
    arms = run["config"]["arms"]
    # a run without --answers wrote them beside its qa.json
    answers = Path(run["config"]["answers"] or qa_json.parent / "answers.jsonl")
    if not answers.is_file():
        raise SystemExit(f"{qa_json}: its answers file {answers} is not here (LoCoMo answers stay out of git)")
    wanted: dict[tuple[str, str], list[str]] = defaultdict(list)
    for system, arm in arms.items():
        wanted[arm["key"], system].append(system)
        if arm["kind"] == "memory" and system != "memory":  # memory@B at the default budget is memory
            wanted[arm["key"], "memory"].append(system)
    out: Scored = defaultdict(dict)
    for line in answers.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        prefix = rec["key"].split(":", 1)[0]
        systems = wanted.get((prefix, rec["system"]), [])
        if not systems or rec.get("error") or rec["category"] not in CATEGORIES:
            continue
        if samples and rec["sample_id"] not in samples:
            continue
        f1 = score_answer(rec["prediction"], rec["gold"], rec["category"])["standard"]["f1"]
        held = None if arms[rec["system"]]["kind"] == "full-context" else set(rec.get("retrieved") or [])
        for system in systems:
            out[system][rec["sample_id"], rec["qa_index"]] = (rec["category"], 100 * f1, held)
    return out


def evidence_table(pooled: Scored, systems: list[str], data: Path) -> None:
    """Per system and category: the share of questions whose context held every evidence turn, and the
    mean F1 of those and of the rest."""
    evidence = {(c.sample_id, q.index): set(q.evidence) for c in load_locomo(data) for q in c.qa}
    print("| system | category | every evidence turn in the context | F1 when in | F1 when not |")
    print("|---|---|---|---|---|")
    for s in systems:
        for c in CATEGORIES:
            split: dict[bool, list[float]] = {True: [], False: []}
            for k, (cat, f1, held) in pooled[s].items():
                if cat == c and evidence.get(k):
                    split[held is None or evidence[k] <= held].append(f1)
            n = len(split[True]) + len(split[False])
            if not n:
                continue
            cells = [f"{sum(v) / len(v):.1f}" if v else "-" for v in (split[True], split[False])]
            print(
                f"| {s} | {CATEGORY_NAMES[c]} | {len(split[True])}/{n} ({len(split[True]) / n:.2f}) | "
                + " | ".join(cells)
                + " |"
            )


def main(args: argparse.Namespace) -> None:
    pooled: Scored = defaultdict(dict)
    for arg in args.qa_json:
        arg, _, label = arg.partition("#")
        path, _, wanted = arg.partition("=")
        for system, rows in scored(Path(path), set(filter(None, wanted.split(",")))).items():
            pooled[f"{system}/{label}" if label else system].update(rows)
    systems = [s for s in (args.systems.split(",") if args.systems else pooled) if s in pooled]
    groups = {"1-4": CATEGORIES, **{f"{c} {CATEGORY_NAMES[c]}": (c,) for c in CATEGORIES}}
    print("| system | " + " | ".join(f"{g} (n)" for g in groups) + " |")
    print("|---|" + "---|" * len(groups))
    for s in systems:
        cells = []
        for cats in groups.values():
            vals = [f1 for c, f1, _ in pooled[s].values() if c in cats]
            cells.append(f"{sum(vals) / len(vals):.1f} ({len(vals)})" if vals else "-")
        print(f"| {s} | " + " | ".join(cells) + " |")
    print()
    print("| a - b | " + " | ".join(groups) + " |")
    print("|---|" + "---|" * len(groups))
    for a, b in itertools.combinations(systems, 2):
        cells = []
        for cats in groups.values():
            both = sorted(k for k, (c, _, _) in pooled[a].items() if c in cats and k in pooled[b])
            d = paired_bootstrap([pooled[a][k][1] for k in both], [pooled[b][k][1] for k in both])
            cells.append(
                "-" if d is None else f"{d['mean']:+.1f} [{d['ci95_low']:+.1f}, {d['ci95_high']:+.1f}] ({d['n']})"
            )
        print(f"| {a} - {b} | " + " | ".join(cells) + " |")
    if args.evidence:
        print()
        evidence_table(pooled, systems, args.evidence)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("qa_json", nargs="+", help="qa.json of each run, optionally =SAMPLE[,SAMPLE] and #LABEL")
    parser.add_argument("--systems", default="", help="comma-separated, in this order (default: all)")
    parser.add_argument("--evidence", type=Path, help="the LoCoMo file: also split F1 by evidence in the context")
    main(parser.parse_args())
