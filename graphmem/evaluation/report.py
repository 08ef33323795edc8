"""Write results: JSON with every number, a Markdown report, PNG plots."""

from __future__ import annotations

import itertools
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


def _qa_cat_label(key: str, names: dict[str, str]) -> str:
    base, _, mode = key.partition("-")
    name = names.get(base, CATEGORY_NAMES.get(int(base), base) if base.isdigit() else base)
    return f"{base} {name}" + (f" ({mode})" if mode else "")


def _score(data: dict[str, Any], cat: str, metric: str = "f1") -> Any:
    if cat == "overall":
        return data["overall"].get("excluded", {}).get(metric)
    return data["by_category"].get(cat, {}).get(metric)


def _answered(cost: dict[str, Any] | None) -> str:
    if not cost:
        return "-"
    failed = cost.get("failed", cost.get("errors", 0))
    text = f"{cost.get('answered', cost['count'] - failed)}/{cost['count']}"
    return text + (f" (**{failed} failed**)" if failed else "")


def qa_side_by_side(result: dict[str, Any]) -> list[str]:
    """One line per system (and the paper's reference rows): F1 x100 per category, cost per answer."""
    names = result["config"].get("category_names") or {str(k): v for k, v in CATEGORY_NAMES.items()}
    cats = ["1", "2", "3", "4", "5-amem", "5-locomo", "overall"]
    head = [_qa_cat_label(c, names) if c != "overall" else "overall (1-4)" for c in cats]
    lines = [
        "## Systems side by side (A-MEM F1 x100; failed answers are not scored)",
        "",
        "| system | " + " | ".join(head) + " | answered | context tokens | LLM tokens | s / answer |",
        "|---|" + "---|" * (len(cats) + 4),
    ]
    for system, data in result["systems"].items():
        cost = data.get("cost", {}).get("overall")
        lines.append(
            f"| {system} | "
            + " | ".join(_f(_score(data, c), 100, 1) for c in cats)
            + f" | {_answered(cost)} | {_f((cost or {}).get('context_tokens'), 1, 0)} | "
            f"{_f((cost or {}).get('total_tokens'), 1, 0)} | {_f((cost or {}).get('seconds'), 1, 1)} |"
        )
    ref = result.get("reference")
    if ref:
        for label, row in ref["rows"].items():
            f1 = row["f1"]
            lines.append(
                f"| {label} | "
                + " | ".join(_f(f1.get(c.split("-")[0]) if c != "5-locomo" else None, 1, 1) for c in cats[:-1])
                + f" | - | - | - | {row['tokens']:,} (paper) | - |"
            )
        lines += ["", f"Reference rows: {ref['source']}; their category 5 is A-MEM's scoring (`5-amem`)."]
    lines.append("")
    return lines


def qa_budget_curve(result: dict[str, Any]) -> list[str]:
    arms = result["config"].get("arms", {})
    curve = [s for s in result["systems"] if s.startswith("memory@")]
    if not curve:
        return []
    rows = sorted(curve, key=lambda s: int(s.split("@")[1]))
    if "full-context" in result["systems"]:
        rows.append("full-context")
    cats = ["1", "2", "3", "4", "5-amem", "overall"]
    lines = [
        "## Budget curve (memory at each context budget, beside the whole history)",
        "",
        "| system | budget | k | "
        + " | ".join(c if c != "overall" else "overall (1-4)" for c in cats)
        + " | context tokens | LLM input tokens | processed by the server | s / answer | answered |",
        "|---|---|---|" + "---|" * (len(cats) + 5),
    ]
    for system in rows:
        data = result["systems"][system]
        arm = arms.get(system, {})
        cost = data.get("cost", {}).get("overall") or {}
        budget = arm.get("budget") if system != "full-context" else "whole"
        lines.append(
            f"| {system} | {budget if budget is not None else '-'} | {arm.get('k') or '-'} | "
            + " | ".join(_f(_score(data, c), 100, 1) for c in cats)
            + f" | {_f(cost.get('context_tokens'), 1, 0)} | {_f(cost.get('input_tokens'), 1, 0)} | "
            f"{_f(cost.get('processed_input_tokens'), 1, 0)} | {_f(cost.get('seconds'), 1, 1)} | "
            f"{_answered(cost or None)} |"
        )
    lines += [
        "",
        "LLM input tokens are what the server was sent; a llama.cpp server's prompt cache processes only the part "
        "after the prefix it already holds (for full context: the question). Processed: the input less what the "
        "server said its cache held (`cached_input_tokens` per answer; answers recorded before 7 December 2026 "
        "did not record it and count whole); the seconds show the cache's effect too.",
        "",
    ]
    return lines


def qa_comparisons(result: dict[str, Any]) -> list[str]:
    comps = result.get("comparisons") or []
    if not comps:
        return []
    groups = ["overall", "1", "2", "3", "4", "5-amem", "5-locomo"]
    lines = [
        "## Differences between systems (A-MEM F1 x100, a - b, paired bootstrap 95 % interval)",
        "",
        "Over the questions both systems answered (n in brackets).",
        "",
        "| a - b | " + " | ".join(g if g != "overall" else "overall (1-4)" for g in groups) + " |",
        "|---|" + "---|" * len(groups),
    ]
    for c in comps:
        cells = []
        for g in groups:
            d = c["groups"].get(g)
            cells.append(
                "-"
                if not d
                else f"{d['mean'] * 100:+.1f} [{d['ci95_low'] * 100:+.1f}, {d['ci95_high'] * 100:+.1f}] ({d['n']})"
            )
        lines.append(f"| {c['a']} - {c['b']} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def qa_full_context(result: dict[str, Any]) -> list[str]:
    fits = result.get("full_context") or {}
    if not fits:
        return []
    server = result["config"].get("full_context_server")
    where = (
        f"its own model server ({server['local_llm_parallel']} slot(s) of {server['local_llm_ctx']:,} tokens, "
        f"port {server['local_llm_port']})"
        if server
        else "the main model server"
    )
    limit = result["config"].get("full_context_limit")
    limit_text = f"at most {limit:,} counted tokens of conversation" if limit else "no limit on the conversation"
    lines = [
        "## Full context: what was sent",
        "",
        (
            f"Conversation first, question last, answered on {where}; {limit_text}. When a conversation does not fit, "
            "its oldest turns are cut; answers on a cut conversation are marked `truncated` in answers.jsonl."
        ),
        "",
        "| conversation | tokens (whole) | tokens sent | fits | turns sent | turns cut | sessions cut | first turn sent |",
        "|---|---|---|---|---|---|---|---|",
    ]
    fc_cost = (result["systems"].get("full-context") or {}).get("cost", {}).get("overall") or {}
    if "seconds_cache_cold" in fc_cost or "seconds_cache_warm" in fc_cost:
        lines[4:4] = [
            (
                f"Seconds per answer: {_f(fc_cost.get('seconds_cache_cold'), 1, 1)} for the first question of a "
                f"conversation in a run (prompt cache cold: the whole conversation processed; "
                f"n={fc_cost.get('answers_cache_cold', 0)}), {_f(fc_cost.get('seconds_cache_warm'), 1, 1)} for "
                f"the others (the cached conversation reused; n={fc_cost.get('answers_cache_warm', 0)})."
                + (
                    f" Tokens the server processed per answer: {_f(fc_cost.get('processed_input_tokens_cache_cold'), 1, 0)}"
                    f" cold, {_f(fc_cost.get('processed_input_tokens_cache_warm'), 1, 0)} warm."
                    if "processed_input_tokens_cache_warm" in fc_cost or "processed_input_tokens_cache_cold" in fc_cost
                    else ""
                )
            ),
            "",
        ]
    for sid, fc in fits.items():
        lines.append(
            f"| {sid} | {fc['whole_tokens']:,} | {fc['tokens']:,} | {_f(fc['fits'])} | {fc['turns']} | {fc['cut_turns']} | "
            f"{_ranges(fc['cut_sessions']) if fc['cut_sessions'] else '-'} | {fc['first_turn'] or '-'} |"
        )
    lines.append("")
    return lines


def qa_markdown(result: dict[str, Any]) -> str:
    c = result["config"]
    names = c.get("category_names") or {str(k): v for k, v in CATEGORY_NAMES.items()}
    lines = [
        "# QA evaluation" if c.get("scope_prefix", "locomo") != "locomo" else "# LoCoMo QA evaluation",
        "",
        (
            f"Model `{c['llm_model']}` ({c['llm_provider']}), temperature {c['llm_temperature']}, seed {c['llm_seed']}; "
            f"search mode `{c['search_mode']}`, k={c['k']}, context budget {c['context_token_budget']} tokens; "
            f"tag `{c['tag']}`; category-5 prompt `{c['cat5_prompt']}`; sessions {c['sessions'] or 'all'}; "
            f"{result['questions']} questions"
            + (f" (a seeded sample of {c['sample']}, stratified by category)" if c.get("sample") else "")
            + f". METEOR with WordNet synonyms: {_f(c['meteor_uses_wordnet'])}."
        ),
        "",
        (
            "Scores x100. Category 5 is shown in both modes: `amem` (scored against the adversarial answer, as "
            "A-MEM publishes) and `locomo` (1 when the answer declines). Overall `excluded` = categories 1-4. "
            "Failed answers (an LLM error such as HTTP 400) are counted as failed and left out of every score."
        ),
        "",
    ]
    for sid, why in (result.get("skipped") or {}).items():
        lines += [f"**{sid}: not answered by the memory in this run**: {why}.", ""]
    if partial := result.get("partial"):
        left = ", ".join(f"{system} {n}" for system, n in partial["missing"].items())
        lines += [
            f"**Interim scores (`--score-only`)**: {partial['scored']} of {partial['questions']} questions, those "
            f"every system with answers has answered; answers still to ask: {left}.",
            "",
        ]
    if rechecked := result.get("contexts_rechecked"):
        lines += [
            f"**Contexts rechecked (`--recheck-contexts`)**: of {rechecked['checked']} stored memory answers, "
            f"{rechecked['moved']} had a context `ask` no longer gives and were asked again.",
            "",
        ]
    lines += qa_side_by_side(result)
    lines += qa_budget_curve(result)
    lines += qa_comparisons(result)
    lines += qa_full_context(result)
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
                f"| {_qa_cat_label(cat, names)} | {row['count']} | "
                + " | ".join(_f(row.get(m), 100) for m in metrics)
                + " |"
            )
        for mode, row in data["overall"].items():
            lines.append(
                f"| overall ({mode}) | {row['count']} | " + " | ".join(_f(row.get(m), 100) for m in metrics) + " |"
            )
        cost = data.get("cost", {})
        if cost:
            lines += [
                "",
                "| category | answered | context tokens | total tokens (LLM) | seconds | search s | LLM s | judge acc. |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for cat, row in cost.items():
                lines.append(
                    f"| {cat} | {_answered(row)} | {_f(row['context_tokens'], 1, 0)} | {_f(row['total_tokens'], 1, 0)} | "
                    f"{_f(row['seconds'])} | {_f(row['search_seconds'], 1, 3)} | {_f(row['llm_seconds'])} | "
                    f"{_f(row.get('judge_accuracy'), 100, 1)} |"
                )
            failures = (cost.get("overall") or {}).get("failure_messages")
            if failures:
                lines += ["", "Failures (first kinds): " + "; ".join(f"`{m}`" for m in failures)]
        lines.append("")
    if result.get("ingest"):
        lines += [
            "## Ingest (full A-MEM add per turn)",
            "",
            "| conversation | turns | added | reused | links | evolved | pending: this run / in the memory | errors | "
            "LLM calls/note | tokens/note | s/note (latency) | wall s/note |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for sid, st in result["ingest"].items():
            pn = st["per_note"]
            lines.append(
                f"| {sid} | {st['turns']} | {st['added']} | {st['reused']} | {st['links']} | {st['evolved']} | {st['pending']} / {st.get('pending_in_memory', '-')} | "
                f"{st['errors']} | {_f(pn['llm_calls'])} | {_f(pn['tokens'], 1, 0)} | {_f(pn['seconds'])} | "
                f"{_f(pn.get('wall_seconds'))} |"
            )
        lines += [
            "",
            "Pending: notes whose enrichment failed (the model's reply was refused or the call failed), stored raw "
            "and searched as such until `graphmem repair` runs them again; a resumed ingest does not retry them.",
            "",
        ]
    if result.get("ingest_raw"):
        lines += [
            "## Ingest of the raw turns (rag, memory-no-llm: no LLM call)",
            "",
            "| conversation | scope | turns | added | reused | s/note |",
            "|---|---|---|---|---|---|",
        ]
        for sid, st in result["ingest_raw"].items():
            lines.append(
                f"| {sid} | `{st['scope']}` | {st['turns']} | {st['added']} | {st['reused']} | "
                f"{_f(st.get('seconds_per_note'), 1, 4)} |"
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


def _pm(rnd: dict[str, Any] | None) -> str:
    return "-" if not rnd else f"{rnd['mean']:.3f} ± {rnd['std']:.3f}"


def _x(v: Any) -> str:
    if v is None:
        return "-"
    return "inf" if v == float("inf") else f"{v:.2f}x"


def _ci(d: dict[str, Any] | None) -> str:
    if not d:
        return "-"
    return f"{d['mean']:+.3f} [{d['ci95_low']:+.3f}, {d['ci95_high']:+.3f}]"


def _ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 5] -> '1-3,5'."""
    runs = [[n for _, n in g] for _, g in itertools.groupby(enumerate(sorted(numbers)), lambda x: x[1] - x[0])]
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def links_markdown(result: dict[str, Any]) -> str:
    c = result["config"]
    used = {sid: i for sid, i in result["conversations"].items() if i.get("notes")}
    lines = [
        "# LLM links on LoCoMo: evidence connectivity and the A-MEM ablation",
        "",
        (
            f"Scopes `locomo-{c['reuse_tag']}-<sample>` ({len(used)} conversation{'s' if len(used) != 1 else ''}, "
            f"{sum(i['notes'] for i in used.values())} notes; sessions: "
            + "; ".join(f"{sid} {_ranges(i['sessions'])}" for sid, i in used.items())
            + f"); categories {', '.join(map(str, c['categories']))}."
        ),
        "",
    ]
    missing = {sid: i["turns_missing"] for sid, i in used.items() if i.get("turns_missing")}
    if missing:
        lines += [
            f"Turns of those sessions not stored (failed or not yet ingested; their evidence counts as missed): {missing}.",
            "",
        ]
    conn = result.get("connectivity")
    if conn:
        t = conn["target"]
        lines += [
            "## Evidence connectivity",
            "",
            (
                f"{conn['pairs']} pairs of evidence turns from {conn['questions']} questions with two or more "
                f"(counted per question). LLM links: every link but the turn links (`FOLLOWS`, reason "
                f'"{c["follows_reason"]}"), undirected. Random: the LLM-link graph rewired by degree-preserving '
                f"double edge swaps ({c['samples']} samples, {c['swaps_per_edge']} swaps per edge, seed {c['seed']}): "
                "mean ± standard deviation; p = share of random graphs joining at least as many pairs. Nearest: each "
                "note linked to as many of its most similar earlier notes as it made LLM links."
            ),
            "",
        ]
        for hop, title in (("hop1", "joined by a link (1 hop)"), ("hop2", "within 2 hops")):
            lines += [
                f"### Pairs {title}",
                "",
                "| pairs | n | LLM links | random, same degrees | ratio | p | nearest-neighbour links | turn links | LLM + turn links |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for name, row in conn["subsets"].items():
                rnd = row["random"][hop]
                lines.append(
                    f"| {name} | {row['pairs']} | {_f(row['llm'][hop], 1, 3)} | {_pm(rnd)} | {_x(row['ratio'][hop])} | "
                    f"{_f(rnd['p_value'] if rnd else None, 1, 3)} | {_f(row['nearest'][hop], 1, 3)} | "
                    f"{_f(row['turn'][hop], 1, 3)} | {_f(row['all_links'][hop], 1, 3)} |"
                )
            lines.append("")
        lines += [
            "### Graphs",
            "",
            "| conversation | notes | LLM links | linked notes | mean degree | max degree | turn links | questions | pairs | swaps accepted |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for sid, g in conn["graphs"].items():
            lines.append(
                f"| {sid} | {g['notes']} | {g['llm_links']} | {g['linked_notes']} | {_f(g['mean_degree'])} | "
                f"{g['max_degree']} | {g['turn_links']} | {g['questions']} | {g['pairs']} | {_f(g['swaps_accepted'], 1, 3)} |"
            )
        verdict = (
            f"1 hop {_x(t['hop1_ratio'])} -> {_f(t['hop1_met'])}; within 2 hops {_x(t['hop2_ratio'])} -> {_f(t['hop2_met'])}"
            if t["hop1_ratio"] is not None or t["hop2_ratio"] is not None
            else "not measurable (no evidence pairs, or no LLM links and so no random ones)"
        )
        lines += [
            "",
            (
                f"Target (LLM links join evidence pairs at least {t['ratio_required']:.0f}x as often as random links "
                f"with the same degrees): {verdict}."
            ),
            "",
        ]
    ab = result.get("ablation")
    if ab:
        arms = list(ab["arms"])
        k = ab["k"]
        metric = ab["metric"]
        others = [a for a in arms if a != "full"]
        d = ab["deltas"]
        lines += [
            "## Ablation on retrieval (A-MEM Table 3, done on recall)",
            "",
            (
                f"Recall@{k} within the ask budget ({c['context_token_budget']} tokens): the evidence in the context "
                f"`ask` gives the answer model (search `{ab['mode']}`, k={k}, "
                f"{c.get('answer_links_per_hit', c['links_per_hit'])} linked notes per hit, "
                f"{c.get('answer_fill_links_per_hit', 0)} per hit after the hits while the budget holds; "
                "a superseded note kept, "
                f"marked, beside its current one), on the same {ab['questions']} questions; arms built from the "
                "ingested scopes by export and import (`no-links`: LLM links dropped, turn links kept; "
                "`no-evolution`: evolved notes back to their values before their first evolution, re-embedded; "
                "`strongest-evolution`: only the evolutions an add made through its strongest link kept "
                "(`GRAPHMEM_EVOLUTION_NEIGHBOURS=1`), the others undone; "
                "`no-enrichment`: keywords, tags and context emptied, re-embedded from the content alone; "
                "`no-supersession`: supersessions and conflicts dropped; `with-context`: the notes as stored, "
                "each with its LLM-written context in the answer context; `word-evolution`: no evolution, and each "
                "note's keywords lent to the earlier notes its LLM links point to, an evolution without a call; "
                "`content-vector`: every note's search vector embedded from its content alone, its enrichment "
                "kept for the full-text index and the answer). "
                "Effects: full minus the arm, paired over questions, 95% bootstrap interval."
            ),
            "",
            "| category | n | " + " | ".join(arms) + " | " + " | ".join(f"full - {a}" for a in others) + " |",
            "|---|---|" + "---|" * (len(arms) + len(others)),
        ]
        first = ab["arms"][arms[0]]
        cats = sorted(first["by_category"])
        lines.append(
            f"| overall | {first['overall'].get('count', 0)} | "
            + " | ".join(_f(ab["arms"][a]["overall"].get(metric), 1, 3) for a in arms)
            + " | "
            + " | ".join(_ci(d[a]["full_minus_arm"]) for a in others)
            + " |"
        )
        for cat in cats:
            lines.append(
                f"| {_cat_label(cat)} | {first['by_category'][cat].get('count', 0)} | "
                + " | ".join(_f(ab["arms"][a]["by_category"].get(cat, {}).get(metric), 1, 3) for a in arms)
                + " | "
                + " | ".join(_ci(d[a]["by_category"].get(cat)) for a in others)
                + " |"
            )
        for name, pair in (ab.get("pairs") or {}).items():
            lines += [
                "",
                f"`{name}` (paired, 95% bootstrap interval): overall {_ci(pair['arm_minus_other'])}; "
                + "; ".join(f"{_cat_label(cat)} {_ci(pair['by_category'].get(cat))}" for cat in cats)
                + ".",
            ]
        hit = f"budget_hit@{k}"
        if any(hit in ab["arms"][a]["overall"] for a in arms):
            lines += [
                "",
                "Share of questions with every evidence turn inside the budget (what a multi-hop answer needs):",
                "",
                "| category | " + " | ".join(arms) + " |",
                "|---|" + "---|" * len(arms),
                "| overall | " + " | ".join(_f(ab["arms"][a]["overall"].get(hit), 1, 3) for a in arms) + " |",
            ]
            for cat in cats:
                lines.append(
                    f"| {_cat_label(cat)} | "
                    + " | ".join(_f(ab["arms"][a]["by_category"].get(cat, {}).get(hit), 1, 3) for a in arms)
                    + " |"
                )
        lines += [
            "",
            f"| arm | LLM links | evolution | enrichment | supersession | recall@{k} (all notes returned) | all-evidence hit@{k} | notes@{k} | tokens kept within budget |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for a in arms:
            o = ab["arms"][a]["overall"]
            lines.append(
                f"| {a} | {_f(ab['arms'][a]['links'])} | {_f(ab['arms'][a]['evolution'])} | "
                f"{_f(ab['arms'][a].get('enrichment', True))} | {_f(ab['arms'][a].get('updates', True))} | "
                f"{_f(o.get(f'recall@{k}'), 1, 3)} | "
                f"{_f(o.get(f'hit@{k}'), 1, 3)} | {_f(o.get(f'notes@{k}'), 1, 1)} | {_f(o.get(f'budget_tokens@{k}'), 1, 0)} |"
            )
        lines += [
            "",
            "| conversation | evolved notes | evolutions | other versions | links full / no-links | embedding check (min cosine) |",
            "|---|---|---|---|---|---|",
        ]
        for sid, i in used.items():
            arm_info = i.get("arms") or {}
            if not arm_info:
                continue
            lines.append(
                f"| {sid} | {arm_info['evolved_notes']} | {arm_info['evolutions']} | {arm_info['other_versions']} | "
                f"{arm_info['full']['links']} / {arm_info['no-links']['links']} | {_f(arm_info['embedding_check_min_cosine'], 1, 4)} |"
            )
        lines.append("")
    rejudged = {sid: i["rejudged_updates"] for sid, i in used.items() if i.get("rejudged_updates")}
    if rejudged:
        lines += [
            "Supersessions judged again before the arms were built (`--rejudge-updates`, today's rules):",
            "",
            "| conversation | notes judged | supersessions | conflicts | knock-on reports | LLM calls | tokens | seconds |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for sid, r in rejudged.items():
            lines.append(
                f"| {sid} | {r['notes_judged']} | {r['supersessions']} | {r['conflicts']} | {r['knock_on']} | "
                f"{r['llm_calls']} | {r['tokens']} | {r['seconds']} |"
            )
        lines.append("")
    return "\n".join(lines)


def _fetch_text(result: dict[str, Any]) -> str:
    """How the vector search fetched on the run's server line."""
    st, server = result["settings"], result.get("server") or {}
    if server.get("line") == "2026":
        return f"Neo4j {server.get('version')}: scope filtered inside the index, SEARCH LIMIT {st.get('in_index_over_fetch')} x k"
    scan = st.get("exact_scan_max_notes")
    head = f"Neo4j {server['version']}: " if server else ""
    return f"{head}over-fetch {st['over_fetch_ratio']} x k" + (
        f", scopes up to {scan:,} notes scanned exactly once it falls short" if scan else ""
    )


def bench_markdown(result: dict[str, Any]) -> str:
    k = result["config"]["k"]
    lines = [
        "# graphmem benchmark",
        "",
        (
            f"{result['machine']['cpus']} CPUs; k={k}; {result['config']['repetitions']} timed repetitions after "
            f"{result['config']['warmup']} warm-up calls ({result['config']['brute_force_repetitions']} for the brute-force scan); "
            f"{_fetch_text(result)}, links per hit {result['settings']['links_per_hit']}."
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
    if result.get("tenants"):
        lines += ["", *tenant_markdown([result])]
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
        "| index misses | rebased | notes/write | tokens/note | LLM calls/note | max calls at once | load after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in stub.get("levels", []):
        lines.append(
            f"| {r['level']} | {r['notes']} | {_f(r['seconds'])} | {_f(r['notes_per_s'])} | {_f(r['speedup'])} "
            f"| {r['lost']} | {r['duplicates']} | {r['failed']} | {r.get('order_violations', '-')} "
            f"| {r.get('index_misses', '-')} "
            f"| {r.get('rebased', '-')} | {_f(r.get('notes_per_write'))} | {_f(r['tokens_per_note'], digits=0)} "
            f"| {_f(r['llm_calls_per_note'])} | {(r.get('stub') or {}).get('max_in_flight', '-')} | {r['load_after'][0]} |"
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


def _server(result: dict[str, Any]) -> str:
    server = result.get("server") or {}
    at = f" at {server['address']}" if server.get("address") else ""
    return f"{server.get('line', '?')} ({server.get('version', '?')}){at}"


def tenant_markdown(runs: list[dict[str, Any]]) -> list[str]:
    """The tenant case of each run: p50 / p95 ms and recall@k for the small and the big tenant."""
    first = runs[0]["tenants"]
    k = runs[0]["config"]["k"]
    lines = [
        f"## Tenant case: {first['notes']:,} notes, {first['tenants']} tenants (one holds half, the searched small one 1 %)",
        "",
        f"| server | tenant | notes | vector p50 / p95 | recall@{k} | hybrid p50 / p95 | 5.26 over-fetch alone p50 / p95, recall@{k} |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        t = run.get("tenants") or {}
        for label in ("small", "big"):
            e = t.get(label)
            if not e:
                continue
            over = e.get("vector_over_fetch_only")
            over_text = (
                f"{_f(over['p50_ms'])} / {_f(over['p95_ms'])}, {_f(e.get(f'over_fetch_only_recall@{k}'), 1, 3)}"
                if over
                else "-"
            )
            lines.append(
                f"| {_server(run)} | {label} | {e['notes']:,} | {_f(e['vector']['p50_ms'])} / {_f(e['vector']['p95_ms'])} | "
                f"{_f(e.get(f'recall@{k}'), 1, 3)} | {_f(e['hybrid']['p50_ms'])} / {_f(e['hybrid']['p95_ms'])} | {over_text} |"
            )
    return lines


def bench_lines_markdown(result: dict[str, Any]) -> str:
    """Several servers (a 5.26 and a 2026 one) side by side, then each run's own report."""
    runs = result["runs"]
    k = runs[0]["config"]["k"]
    lines = [
        "# graphmem benchmark, server lines side by side",
        "",
        "p50 / p95 ms with the query embedding given (the store path); recall of graphmem's vector search "
        "against the exact NumPy top-k. The same notes and queries on every server.",
        "",
        f"| notes | server | vector | vector + 1 hop | hybrid + 1 hop | recall@{k} | import store-only notes/s |",
        "|---|---|---|---|---|---|---|",
    ]

    def pp(r: dict[str, Any], key: str) -> str:
        return f"{_f(r[key]['p50_ms'])} / {_f(r[key]['p95_ms'])}" if key in r else "-"

    sizes = sorted({r["size"] for run in runs for r in run["sizes"]})
    for size in sizes:
        for run in runs:
            for r in run["sizes"]:
                if r["size"] == size:
                    lines.append(
                        f"| {size:,} | {_server(run)} | {pp(r, 'vector')} | {pp(r, 'links')} | {pp(r, 'hybrid')} | "
                        f"{_f(r.get(f'recall@{k}'), 1, 3)} | {_f(r['import']['store_notes_per_s'], 1, 0)} |"
                    )
    if any(run.get("tenants") for run in runs):
        lines += ["", *tenant_markdown([run for run in runs if run.get("tenants")])]
    for run in runs:
        lines += ["", f"# {_server(run)}", "", *bench_markdown(run).splitlines()[1:]]
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
        "links": links_markdown,
        "bench_lines": bench_lines_markdown,
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
        elif kind == "bench_lines":
            for run in result["runs"]:
                server = run.get("server") or {}
                line = server.get("line", "server")
                if "address" in server:  # two servers of one line must not share a file
                    line += "-" + server["address"].replace(":", "-")
                if run["sizes"]:
                    written[f"plot {line}"] = p.plot_latency(run, out_dir / f"latency_vs_size-{line}.png")
        elif kind == "qa" and result["systems"]:
            written["plot"] = p.plot_qa(result, out_dir / "qa_f1_by_category.png")
        elif kind == "links" and (result.get("connectivity") or result.get("ablation")):
            written["plot"] = p.plot_links(result, out_dir / "links.png")
    return written
