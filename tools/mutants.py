"""Hand-made mutants of the scope checks and ranking functions: each must be killed by the tests.

Issue 12's mutation check (the five mutants of docs/architecture-review, RRF's now the fusion's), plus
the scope checks of the search queries that the store must hold even when the service is bypassed.
Each mutant is one textual change; the script applies it, runs the tests (``-x``), records killed or
survived, and restores the file. Needs the test Neo4j (as ``pytest``). Usage, from the repository root:

    .venv/bin/python tools/mutants.py [--out mutants.json] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = [
    "tests/unit",
    "tests/integration/test_core.py",
    "tests/integration/test_store.py",
    "tests/integration/test_store_contract.py",
    "tests/integration/test_conversation.py",
    "tests/integration/test_search_meaning.py",
    "tests/reliability/test_isolation.py",
]
SCOPE = "r.node.user_id = $user_id AND r.node.agent_id = $agent_id AND r.node.run_id = $run_id"
LOOSE_SCOPE = (
    "r.node.user_id = $user_id AND ($agent_id IS NOT NULL OR r.node.agent_id = $agent_id)"
    " AND ($run_id IS NOT NULL OR r.node.run_id = $run_id)"
)
# (name, file, the text replaced, its replacement)
MUTANTS: list[tuple[str, str, str, str]] = [
    (
        "plan_evolution accepts an unknown target id",
        "graphmem/service/linking/plan.py",
        """            target = by_loose.get(loose_id(p.target_id))
            if target is None:
                plan.rejected.append(f"link to unknown id {p.target_id[:40]!r}")
                continue""",
        """            target = by_loose.get(loose_id(p.target_id), p.target_id)
            if target not in shown:
                shown[target] = note""",
    ),
    ("vector search lets other agents/runs of the user through", "cypher/search/vector.cypher", SCOPE, LOOSE_SCOPE),
    (
        "the exact scan of a small scope lets other agents/runs of the user through",
        "cypher/search/vector_exact.cypher",
        "MATCH (node:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})\nWHERE node.embedding IS NOT NULL",
        "MATCH (node:Note {user_id: $user_id})\nWHERE ($agent_id IS NOT NULL OR node.agent_id = $agent_id)"
        " AND ($run_id IS NOT NULL OR node.run_id = $run_id) AND node.embedding IS NOT NULL",
    ),
    (
        "full-text search lets other agents/runs of the user through",
        "cypher/search/fulltext.cypher",
        SCOPE,
        LOOSE_SCOPE,
    ),
    (
        "a link's target is not checked for the scope",
        "cypher/links/create.cypher",
        "MATCH (t:Note {id: l.target_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})",
        "MATCH (t:Note {id: l.target_id})",
    ),
    (
        "the hop of hybrid search follows a link out of the scope",
        "cypher/search/expand_links.cypher",
        "  WHERE m.user_id = $user_id AND m.agent_id = $agent_id AND m.run_id = $run_id",
        "  WHERE ($user_id IS NOT NULL OR m.user_id = $user_id) AND m.agent_id IS NOT NULL",
    ),
    (
        "the hop of one-hop search follows a link out of the scope",
        "cypher/search/vector_links.cypher",
        "  WHERE m.user_id = $user_id AND m.agent_id = $agent_id AND m.run_id = $run_id AND NOT m.id IN skip",
        "  WHERE m.user_id IS NOT NULL AND NOT m.id IN skip",
    ),
    (
        "a linked note's score ignores the link's strength",
        "graphmem/service/retrieve.py",
        "score = parent_score[ln.from_id] * ln.via.strength * link_weight",
        "score = parent_score[ln.from_id] * link_weight",
    ),
    (
        "fusion without the query's best-BM25 normalisation",
        "graphmem/service/retrieve.py",
        "boost = weight * m.score / best if best > 0 else 0.0",
        "boost = weight * m.score",
    ),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--only", default="", help="run the mutants whose name contains this")
    parser.add_argument("--pytest", default=str(ROOT / ".venv/bin/pytest"))
    args = parser.parse_args()
    results = []
    for name, rel, old, new in MUTANTS:
        if args.only not in name:
            continue
        path = ROOT / rel
        text = path.read_text()
        if text.count(old) != 1:
            print(f"{name}: the text to change is not in {rel} once; update this script", file=sys.stderr)
            return 2
        path.write_text(text.replace(old, new))
        started = time.time()
        try:
            run = subprocess.run(
                [args.pytest, "-q", "-x", "-p", "no:cacheprovider", *TESTS], cwd=ROOT, capture_output=True, text=True
            )
        finally:
            path.write_text(text)
        lines = run.stdout.strip().splitlines()
        result = {
            "mutant": name,
            "file": rel,
            "result": "killed" if run.returncode != 0 else "survived",
            "by": [x for x in lines if x.startswith(("FAILED", "ERROR"))][:3],
            "summary": lines[-1] if lines else "",
            "seconds": round(time.time() - started),
        }
        print(json.dumps(result), flush=True)
        results.append(result)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return 1 if any(r["result"] == "survived" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
