"""Write results: JSON with every number, a Markdown report, PNG plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphmem.evaluation.locomo import CATEGORY_NAMES


def _f(v: Any, scale: float = 1.0, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return f"{v * scale:.{digits}f}"
    return str(v)


def _cat_label(key: str) -> str:
    base, _, mode = key.partition("-")
    name = CATEGORY_NAMES.get(int(base), base)
    return f"{base} {name}" + (f" ({mode})" if mode else "")


def write_json(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return path


def qa_markdown(result: dict[str, Any]) -> str:
    c = result["config"]
    lines = [
        "# LoCoMo QA evaluation",
        "",
        (
            f"Model `{c['llm_model']}` ({c['llm_provider']}), temperature {c['llm_temperature']}, seed {c['llm_seed']}; "
            f"search mode `{c['search_mode']}`, k={c['k']}, context budget {c['context_token_budget']} tokens; "
            f"tag `{c['tag']}`; category-5 prompt `{c['cat5_prompt']}`; sessions {c['sessions'] or 'all'}; "
            f"{result['questions']} questions. METEOR with WordNet synonyms: {_f(c['meteor_uses_wordnet'])}."
        ),
        "",
        (
            "Scores x100. Category 5 is shown in both modes: `amem` (scored against the adversarial answer, as "
            "A-MEM publishes) and `locomo` (1 when the answer declines). Overall `excluded` = categories 1-4."
        ),
        "",
    ]
    metrics = ("f1", "locomo_f1", "bleu1", "rouge1", "rougeL", "meteor", "sbert", "exact_match")
    for system, data in result["systems"].items():
        lines += [
            f"## {system}",
            "",
            "| category | n | " + " | ".join(metrics) + " |",
            "|---|---|" + "---|" * len(metrics),
        ]
        for cat, row in data["by_category"].items():
            lines.append(
                f"| {_cat_label(cat)} | {row['count']} | " + " | ".join(_f(row.get(m), 100) for m in metrics) + " |"
            )
        for mode, row in data["overall"].items():
            lines.append(
                f"| overall ({mode}) | {row['count']} | " + " | ".join(_f(row.get(m), 100) for m in metrics) + " |"
            )
        cost = data.get("cost", {})
        if cost:
            lines += [
                "",
                "| category | context tokens | total tokens (LLM) | seconds | search s | LLM s | judge acc. | errors |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for cat, row in cost.items():
                lines.append(
                    f"| {cat} | {_f(row['context_tokens'], 1, 0)} | {_f(row['total_tokens'], 1, 0)} | {_f(row['seconds'])} | "
                    f"{_f(row['search_seconds'], 1, 3)} | {_f(row['llm_seconds'])} | {_f(row.get('judge_accuracy'), 100, 1)} | {row['errors']} |"
                )
        lines.append("")
    if result.get("ingest"):
        lines += [
            "## Ingest (full A-MEM add per turn)",
            "",
            "| conversation | turns | added | reused | links | evolved | pending | errors | LLM calls/note | tokens/note | s/note |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for sid, st in result["ingest"].items():
            pn = st["per_note"]
            lines.append(
                f"| {sid} | {st['turns']} | {st['added']} | {st['reused']} | {st['links']} | {st['evolved']} | {st['pending']} | "
                f"{st['errors']} | {_f(pn['llm_calls'])} | {_f(pn['tokens'], 1, 0)} | {_f(pn['seconds'])} |"
            )
        lines.append("")
    return "\n".join(lines)


def retrieval_markdown(result: dict[str, Any]) -> str:
    c = result["config"]
    ks = c["ks"]
    n = sum(i.get("questions", 0) for i in result["conversations"].values())
    lines = [
        "# LoCoMo retrieval evaluation (LLM-free)",
        "",
        (
            f"Scope tag `{c['tag']}` ({'reused scope' if c.get('reuse_tag') else 'raw notes, no LLM'}; "
            f"FOLLOWS heuristic links: {_f(c['follows_links'])}); embedder {c['embedder']}, embedded text `{c['embed_text_variant']}`; "
            f"links per hit {c['links_per_hit']}; {len(result['conversations'])} conversations, {n} questions (categories "
            f"{', '.join(map(str, c['categories']))}, with evidence)."
        ),
        "",
        "## Evidence recall@k (share of evidence turns retrieved)",
        "",
        "| mode | " + " | ".join(f"k={k}" for k in ks) + " |",
        "|---|" + "---|" * len(ks),
    ]
    for mode, d in result["modes"].items():
        lines.append(f"| {mode} | " + " | ".join(_f(d["overall"].get(f"recall@{k}"), 1, 3) for k in ks) + " |")
    for title, key, scale, digits in (
        ("All-evidence hit@k", "hit", 1, 3),
        ("Context tokens per question at k", "tokens", 1, 0),
        ("Notes returned at k", "notes", 1, 1),
        (f"Recall@k within the ask budget ({c['context_token_budget']} tokens)", "budget_recall", 1, 3),
    ):
        lines += [
            "",
            f"## {title}",
            "",
            "| mode | " + " | ".join(f"k={k}" for k in ks) + " |",
            "|---|" + "---|" * len(ks),
        ]
        for mode, d in result["modes"].items():
            lines.append(
                f"| {mode} | " + " | ".join(_f(d["overall"].get(f"{key}@{k}"), scale, digits) for k in ks) + " |"
            )
    lines += [
        "",
        "## Recall@10 by category",
        "",
        "| mode | "
        + " | ".join(
            f"{cat} {CATEGORY_NAMES[int(cat)]}" for cat in sorted(next(iter(result["modes"].values()))["by_category"])
        )
        + " |",
    ]
    cats = sorted(next(iter(result["modes"].values()))["by_category"])
    lines.append("|---|" + "---|" * len(cats))
    for mode, d in result["modes"].items():
        lines.append(
            f"| {mode} | " + " | ".join(_f(d["by_category"].get(cat, {}).get("recall@10"), 1, 3) for cat in cats) + " |"
        )
    t = result["target"]
    lines += [
        "",
        "## Target",
        "",
        (
            f"Default search (`{t['default_mode']}`, k={t['default_k']}): recall {_f(t.get('graphmem_recall@10'), 1, 3)} at "
            f"{_f(t.get('graphmem_tokens@10'), 1, 0)} tokens; dense exact recall@40 {_f(t.get('dense_recall@40'), 1, 3)} "
            f"(dense@10 {_f(t.get('dense_recall@10'), 1, 3)}). Recall target met: {_f(t.get('recall_target_met'))}; "
            f"under 1,000 tokens: {_f(t.get('tokens_target_met'))}. The context `ask` builds by default (the same search "
            f"within the {c.get('context_token_budget', 1000)}-token budget): recall {_f(t.get('graphmem_budget_recall@10'), 1, 3)} at "
            f"{_f(t.get('graphmem_budget_tokens@10'), 1, 0)} tokens; target met: {_f(t.get('context_target_met'))}."
        ),
        "",
    ]
    return "\n".join(lines)


def bench_markdown(result: dict[str, Any]) -> str:
    k = result["config"]["k"]
    lines = [
        "# graphmem benchmark",
        "",
        (
            f"{result['machine']['cpus']} CPUs; k={k}; {result['config']['repetitions']} timed repetitions after "
            f"{result['config']['warmup']} warm-up calls ({result['config']['brute_force_repetitions']} for the brute-force scan); "
            f"over-fetch {result['settings']['over_fetch_ratio']}, links per hit {result['settings']['links_per_hit']}."
        ),
        "",
        "## Latency, p50 / p95 ms",
        "",
        "| notes | vector | vector (query text) | vector + 1 hop | + 1 hop (query text) | hybrid + 1 hop (default) | bare index, ids | exact NumPy | brute-force Cypher | speed-up vs brute force |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def pp(r: dict[str, Any], key: str) -> str:
        return f"{_f(r[key]['p50_ms'])} / {_f(r[key]['p95_ms'])}"

    for r in result["sizes"]:
        lines.append(
            f"| {r['size']:,} | {pp(r, 'vector')} | {pp(r, 'vector_with_embedding')} | {pp(r, 'links')} | "
            f"{pp(r, 'links_with_embedding')} | {pp(r, 'hybrid') if 'hybrid' in r else '-'} | {pp(r, 'index_ids_only')} | {pp(r, 'numpy_exact')} | "
            f"{pp(r, 'brute_force_cypher')} | {_f(r.get('speedup_vs_brute_force'), 1, 0)}x |"
        )
    lines += [
        "",
        "## Recall, import, disk",
        "",
        f"| notes | recall@{k} (graphmem vs exact) | bare index recall@{k} | import notes/s (with embedding) | store-only notes/s | embed notes/s | store bytes/note | tx-log bytes/note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["sizes"]:
        disk = r.get("disk") or {}
        lines.append(
            f"| {r['size']:,} | {_f(r.get(f'recall@{k}'), 1, 3)} | {_f(r.get(f'index_ids_recall@{k}'), 1, 3)} | "
            f"{_f(r['import']['notes_per_s'], 1, 0)} | {_f(r['import']['store_notes_per_s'], 1, 0)} | {_f(r['import']['embed_notes_per_s'], 1, 0)} | "
            f"{_f(disk.get('databases', {}).get('delta_bytes_per_note'), 1, 0)} | {_f(disk.get('transactions', {}).get('delta_bytes_per_note'), 1, 0)} |"
        )
    loads = ", ".join(
        f"{r['size']:,}: {r['loadavg_before'][0]:.1f} -> {r.get('loadavg_after', [0])[0]:.1f}"
        for r in result["sizes"]
        if "loadavg_before" in r
    )
    if loads:
        lines += ["", f"Load average (1 min) before -> after each size: {loads}."]
    lines += ["", "## Targets", ""]
    for name, v in result.get("targets", {}).items():
        if isinstance(v, dict):
            lines.append(f"- {name}: {_f(v['value'])} -> {'met' if v['met'] else 'MISSED'}")
        else:
            lines.append(f"- {name}: {v}")
    lines.append("")
    return "\n".join(lines)


def ingest_bench_markdown(result: dict[str, Any]) -> str:
    c, m = result["config"], result["machine"]
    stub = result.get("stub") or {}
    lines = [
        "# Ingest benchmark: concurrent A-MEM ingest vs one add after another",
        "",
        (
            f"Stub LLM with {c['latency']} s per call (JSON replies shaped by the request's schema); "
            f"neighbour_k {c['neighbour_k']}; embeddings of the content only. Machine: {m['cpus']} CPUs, "
            f"load average {m['load_before']} before, {m.get('load_after')} after."
        ),
        "",
        "| level | notes | seconds | notes/s | speedup | lost | duplicates | failed | order violations "
        "| index misses | rebased | tokens/note | LLM calls/note | max calls at once | load after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in stub.get("levels", []):
        lines.append(
            f"| {r['level']} | {r['notes']} | {_f(r['seconds'])} | {_f(r['notes_per_s'])} | {_f(r['speedup'])} "
            f"| {r['lost']} | {r['duplicates']} | {r['failed']} | {r.get('order_violations', '-')} "
            f"| {r.get('index_misses', '-')} "
            f"| {r.get('rebased', '-')} | {_f(r['tokens_per_note'], digits=0)} | {_f(r['llm_calls_per_note'])} "
            f"| {(r.get('stub') or {}).get('max_in_flight', '-')} | {r['load_after'][0]} |"
        )
    t = stub.get("targets") or {}
    if t:
        lines += [
            "",
            f"Targets: speedup at 16 in flight {_f(t['speedup_at_16'])} (>= 10: {_f(t['speedup_at_16_ok'])}); "
            f"lost {t['lost']}; duplicates {t['duplicates']}; order rule held: {_f(t['order_rule_held'])}.",
            "",
            "Order violations: a note's link candidates left out a nearer earlier note still in flight, or held a "
            "later note. Index misses: a nearer earlier note already stored that the approximate vector index "
            "did not return (a sequential add has these too).",
        ]
    local = result.get("local")
    if local:
        rates = local["rates"]
        lines += [
            "",
            f"## Local model {local['model']} ({local['threads']} threads)",
            "",
            f"pp {_f(rates['pp_per_s'], digits=1)} tok/s, tg {_f(rates['tg_per_s'], digits=1)} tok/s ({rates['source']}).",
            "",
            "| level | notes | seconds/note | tokens/note (in/out) | floor s/note | time / floor |",
            "|---|---|---|---|---|---|",
        ]
        for r in local["levels"]:
            lines.append(
                f"| {r['level']} | {r['notes']} | {_f(r['seconds_per_note'])} | {_f(r['tokens_per_note'], digits=0)} "
                f"({_f(r['input_tokens_per_note'], digits=0)}/{_f(r['output_tokens_per_note'], digits=0)}) "
                f"| {_f(r['floor_seconds_per_note'])} | {_f(r['ratio_to_floor'])} |"
            )
        lines += ["", f"Batched throughput over sequential: {_f(local.get('batched_speedup'))}."]
    lines.append("")
    return "\n".join(lines)


def write_outputs(result: dict[str, Any], out_dir: Path, *, plots: bool = True) -> dict[str, Path]:
    """results.json, report.md and the plots for a result of any kind; returns the paths written."""
    from graphmem.evaluation import plots as p

    out_dir.mkdir(parents=True, exist_ok=True)
    kind = result["kind"]
    written = {"json": write_json(out_dir / f"{kind}.json", result)}
    from graphmem.evaluation.decisions import decisions_markdown

    md = {
        "qa": qa_markdown,
        "retrieval": retrieval_markdown,
        "bench": bench_markdown,
        "ingest_bench": ingest_bench_markdown,
        "decisions": decisions_markdown,
    }[kind](result)
    (out_dir / f"{kind}.md").write_text(md, encoding="utf-8")
    written["markdown"] = out_dir / f"{kind}.md"
    if plots:
        if kind == "retrieval" and result["modes"]:
            written["plot"] = p.plot_recall(result, out_dir / "recall_at_k.png")
        elif kind == "bench" and result["sizes"]:
            written["plot"] = p.plot_latency(result, out_dir / "latency_vs_size.png")
        elif kind == "decisions" and result["conversations"]:
            written["plot"] = p.plot_decisions(result, out_dir / "decisions.png")
        elif kind == "ingest_bench" and (result.get("stub") or {}).get("levels"):
            written["plot"] = p.plot_ingest(result, out_dir / "ingest_notes_per_s.png")
        elif kind == "qa" and result["systems"]:
            written["plot"] = p.plot_qa(result, out_dir / "qa_f1_by_category.png")
    return written
