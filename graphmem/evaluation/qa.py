"""LoCoMo question answering: graphmem's memory against baselines, same model, prompts and metrics.

Systems (``QAConfig.systems``; one entry each under ``systems`` in ``qa.json``):

- ``memory``: graphmem as configured (A-MEM ingest: enrichment, links, evolution as set), then ``ask``;
- ``memory@B``: the same notes, ``ask`` within a context budget of ``B`` tokens (the budget curve;
  ``k`` grows with the budget, see ``k_for_budget``);
- ``memory-no-llm``: raw turns stored without any LLM call (``add_many``), each FOLLOWS the turn before
  it, answered by ``ask`` (hybrid search + one hop) within the same budget: graphmem's LLM-free parts;
- ``rag``: the same raw turns, dense top-k (the embedder's cosine, vector index only, no links, no
  full text) packed in rank order within the same budget: what a plain vector store gives;
- ``full-context``: the whole conversation (every selected session under its date) first and the
  question last, so a llama.cpp server's prompt cache reuses the conversation across its questions;
  when it exceeds ``full_context_limit`` tokens the oldest turns are cut and the record says so.

Per conversation the notes live in a scope ``<prefix>-<tag>-<sample_id>`` (the tag names the
configuration, so two configurations never share notes). Everything is resumable: turns already
stored are skipped, and answers are appended to ``answers.jsonl`` as they come and reused on a rerun
with the same configuration of their system (a failed answer is asked again; it is reported as
failed, never scored).

Answer prompts follow A-MEM (reference §1.7): a per-category instruction after the question
(temporal questions get a date instruction); category 5 either offers the two options A-MEM and
LoCoMo offer ("Not mentioned in the conversation" and the dataset's adversarial answer, in seeded
random order: paper-faithful, but it shows the model the distractor) or asks openly.

This module runs a QA evaluation (ingest, answer, score); ``qa_systems`` names the systems and keys
their answers, ``qa_answers`` asks one question of one system and keeps the answers file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from graphmem.config import Settings
from graphmem.errors import InvalidInputError
from graphmem.evaluation import Progress, metrics
from graphmem.evaluation.compare import compare_systems, stratified_sample
from graphmem.evaluation.full_context import FullContext, fit_conversation
from graphmem.evaluation.locomo import QA, Conversation, turn_inputs
from graphmem.evaluation.qa_answers import (
    answer_with_full_context,
    answer_with_memory,
    answer_with_rag,
    cat5_options,
    chosen_option,
    context_moved,
    judge_answer,
    load_answers,
    needs_answer,
)
from graphmem.evaluation.qa_systems import (
    MEMORY,
    MEMORY_ARM,
    QAConfig,
    config_key,
    default_raw_tag,
    derive_tag,
    model_label,
    resolve_arms,
)
from graphmem.models import IngestItem, IngestReport, IngestStatus, Scope
from graphmem.service import AsyncMemoryService

# The A-MEM paper's Table 1 rows for Qwen2.5-1.5B (through Ollama), x100; reference lines only
# (../shared/docs/write-path-evidence.md section 1). The whole-conversation row very likely saw a
# context truncated by Ollama's default window.
PUBLISHED_QWEN25_15B: dict[str, Any] = {
    "source": "A-MEM (Xu et al., 2025), Table 1, LoCoMo, Qwen2.5-1.5B via Ollama; F1 and BLEU-1 x100",
    "rows": {
        "A-MEM (paper)": {
            "f1": {"1": 18.23, "2": 24.32, "3": 16.48, "4": 23.63, "5": 46.00},
            "bleu1": {"1": 11.94, "2": 19.74, "3": 14.31, "4": 19.23, "5": 43.26},
            "rougeL": {"1": 17.94, "2": 27.23, "3": 16.87, "4": 24.38, "5": 46.60},
            "tokens": 1300,
        },
        "LoCoMo whole conversation (paper)": {
            "f1": {"1": 9.05, "2": 4.25, "3": 9.91, "4": 11.15, "5": 40.38},
            "bleu1": {"1": 6.55, "2": 4.04, "3": 8.50, "4": 8.67, "5": 40.23},
            "tokens": 16910,
        },
    },
}


# --- ingest -----------------------------------------------------------------------------------------


_PENDING_MAX = 100_000  # pending notes counted per conversation (a LoCoMo conversation has under 1,000 turns)


async def ingest(
    svc: AsyncMemoryService,
    conversations: Sequence[tuple[Conversation, Scope]],
    tag: str,
    sessions: Sequence[int] | None,
    *,
    concurrency: int | None = None,
    progress: Progress | None = None,
) -> dict[str, dict[str, Any]]:
    """Every conversation into its scope through the agentic ingest (``AsyncMemoryService.ingest_scopes``):
    the conversations in parallel, each in turn order, ``concurrency`` notes in flight over all of
    them. Turns already stored are skipped (resumable); each turn FOLLOWS the one before it in its
    session. Returns the statistics per sample id."""
    batches = [(scope, turn_inputs(conv, sessions, tag=tag)) for conv, scope in conversations]
    label = {scope: f"ingest {conv.sample_id}" for conv, scope in conversations}
    done = dict.fromkeys(label, 0)
    totals = {scope: len(items) for scope, items in batches}

    def seen(item: IngestItem) -> None:
        done[item.scope] += 1
        if progress is not None:
            progress(label[item.scope], done[item.scope], totals[item.scope])

    def judged(scope: Scope, n: int, total: int) -> None:
        # the supersession pass after the last turn: an LLM call or more per note, its own bar
        if progress is not None:
            progress(label[scope].replace("ingest", "check changed facts", 1), n, total)

    reports = await svc.ingest_scopes(batches, concurrency=concurrency, on_item=seen, on_judged=judged)
    stats = {conv.sample_id: _ingest_stats(report) for (conv, _), report in zip(conversations, reports, strict=True)}
    for conv, scope in conversations:
        # the memory as answered, whichever run stored them: notes whose enrichment failed, stored raw
        # until `graphmem repair` (a resumed ingest skips stored notes)
        stats[conv.sample_id]["pending_in_memory"] = len(await svc.store.pending(scope, _PENDING_MAX))
    return stats


def _ingest_stats(report: IngestReport) -> dict[str, Any]:
    summary = report.summary()
    added = [x for x in report.items if x.status == IngestStatus.ADDED]
    usage = report.usage
    stats: dict[str, Any] = {
        "turns": summary["items"],
        "reused": summary["existing"],
        "added": summary["added"],
        "links": summary["links"],
        "evolved": summary["evolved"],
        "rejected": summary["rejected"],
        "rebased": summary["rebased"],
        "pending": summary["pending"],
        "errors": summary["failed"] + summary["skipped"],
        "wall_seconds": summary["seconds"],
        "notes_per_s": summary["notes_per_s"],
    }
    errors = [f"{x.note_id}: {x.error}"[:300] for x in report.failed]
    if errors:
        stats["error_messages"] = errors
    stats["usage"] = usage.model_dump()
    n = max(len(added), 1)
    stats["per_note"] = {
        "llm_calls": usage.llm_calls / n,
        "tokens": usage.total_tokens / n,
        "seconds": usage.total_seconds / n,  # latency of one note, start to commit (they overlap)
        "llm_seconds": usage.llm_seconds / n,
        "embed_seconds": usage.embed_seconds / n,
        "store_seconds": usage.store_seconds / n,
        "wall_seconds": summary["seconds"] / n,  # the ingest's wall time per note added (notes overlap)
    }
    return stats


def summarise_system(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Scores over the answered questions only (a failed answer is counted as failed, never as a zero),
    and the cost per question; same shape for every system."""
    answered = [r for r in records if not r.get("error")]
    rows = [{"category": r["category"], "scores": r["scores"]} for r in answered]
    out = metrics.aggregate(rows)
    for label, sel in (
        ("overall", records),
        *((str(c), [r for r in records if r["category"] == c]) for c in range(1, 6)),
    ):
        if not sel:
            continue
        ok = [r for r in sel if not r.get("error")]
        cost: dict[str, Any] = {
            "count": len(sel),
            "answered": len(ok),
            "failed": len(sel) - len(ok),
            "context_tokens": metrics.mean(r.get("context_tokens", 0) for r in ok),
            "total_tokens": metrics.mean(r.get("total_tokens", 0) for r in ok),
            "input_tokens": metrics.mean(r.get("input_tokens", 0) for r in ok),
            # what the server processed: the input less what its prompt cache held (answers recorded
            # before 7 December 2026 say nothing of the cache and count whole)
            "processed_input_tokens": metrics.mean(
                r.get("input_tokens", 0) - r.get("cached_input_tokens", 0) for r in ok
            ),
            "output_tokens": metrics.mean(r.get("output_tokens", 0) for r in ok),
            "seconds": metrics.mean(r.get("seconds", {}).get("total", 0.0) for r in ok),
            "search_seconds": metrics.mean(r.get("seconds", {}).get("search", 0.0) for r in ok),
            "llm_seconds": metrics.mean(r.get("seconds", {}).get("llm", 0.0) for r in ok),
            "errors": len(sel) - len(ok),
        }
        for state in ("cold", "warm"):  # full context: the prompt cache's effect on the seconds per answer
            timed = [r for r in ok if r.get("cache") == state]
            if timed:
                cost[f"seconds_cache_{state}"] = metrics.mean(r.get("seconds", {}).get("total", 0.0) for r in timed)
                cost[f"answers_cache_{state}"] = len(timed)
                if any("cached_input_tokens" in r for r in timed):
                    cost[f"processed_input_tokens_cache_{state}"] = metrics.mean(
                        r.get("input_tokens", 0) - r.get("cached_input_tokens", 0) for r in timed
                    )
        truncated = sum(1 for r in sel if r.get("truncated"))
        if truncated:
            cost["truncated"] = truncated
        failures = sorted({str(r["error"])[:200] for r in sel if r.get("error")})
        if failures:
            cost["failure_messages"] = failures[:5]
        judged = [r["judge"] for r in ok if r.get("judge") in ("CORRECT", "WRONG")]
        if judged:
            cost["judge_accuracy"] = judged.count("CORRECT") / len(judged)
            cost["judged"] = len(judged)
        out.setdefault("cost", {})[label] = cost
    return out


def select_questions(conversations: Sequence[Conversation], cfg: QAConfig) -> dict[str, list[QA]]:
    """The questions asked per conversation: categories and sessions, ``max_questions`` per conversation,
    then ``sample`` over all of them (seeded by ``cfg.seed``, stratified by category)."""
    chosen: list[tuple[str, QA]] = []
    for conv in conversations:
        qs = conv.questions(categories=cfg.categories, sessions=cfg.sessions)
        if cfg.max_questions is not None:
            qs = qs[: cfg.max_questions]
        chosen += [(conv.sample_id, q) for q in qs]
    if cfg.sample is not None:
        chosen = stratified_sample(
            chosen, cfg.sample, stratum=lambda x: x[1].category, key=lambda x: f"{x[0]}:{x[1].index}", seed=cfg.seed
        )
    out: dict[str, list[QA]] = {conv.sample_id: [] for conv in conversations}
    for sid, q in chosen:
        out[sid].append(q)
    return out


def _scope(cfg: QAConfig, tag: str, sample_id: str) -> Scope:
    return Scope(user_id=f"{cfg.scope_prefix}-{tag}-{sample_id}"[:128])


async def ingest_raw(
    svc: AsyncMemoryService, conv: Conversation, scope: Scope, tag: str, sessions: Sequence[int] | None
) -> dict[str, Any]:
    """The raw turns (no LLM call), each FOLLOWS the turn before it in its session; turns already stored
    are skipped (the same notes ``eval retrieval`` stores under the same tag)."""
    items = turn_inputs(conv, sessions, tag=tag, follows=True)
    started = time.perf_counter()
    existing = await svc.find_by_source([i.source_id for i in items if i.source_id], scope)
    missing = [i for i in items if i.source_id not in existing]
    if missing:
        await svc.add_many(missing, scope, batch_size=256)
    seconds = time.perf_counter() - started
    return {
        "scope": str(scope),
        "turns": len(items),
        "added": len(missing),
        "reused": len(items) - len(missing),
        "seconds": seconds,
        "seconds_per_note": seconds / len(missing) if missing else None,
    }


async def _check_arm_scopes(
    svc: AsyncMemoryService, arm_scopes: Mapping[tuple[str, str], Scope], scopes: Mapping[str, Scope], tag: str
) -> None:
    """An ablation arm answers from the copy of the memory that `eval links` made; an empty or stale
    copy (the memory's ingest grew since) would score another memory than the one it names."""
    stored: dict[Scope, int] = {}
    for (system, sid), scope in arm_scopes.items():
        for sc in (scope, scopes[sid]):
            if sc not in stored:
                stored[sc] = await svc.count(sc)
        if stored[scope] != stored[scopes[sid]]:
            state = "does not exist" if stored[scope] == 0 else f"holds {stored[scope]} notes"
            raise InvalidInputError(
                f"{system}: its scope {scope} {state} and the memory {scopes[sid]} holds {stored[scopes[sid]]}: "
                f"build the arms with `graphmem eval links --reuse-tag {tag}` (without --drop-arms) after the "
                "ingest, then answer"
            )


def pending_answers(
    settings: Settings, conversations: Sequence[Conversation], cfg: QAConfig, answers: Path
) -> dict[str, int]:
    """How many answers each system still has to ask, by the answers file (read, nothing else): a run
    whose full-context answers are all there needs no full-context server."""
    tag = cfg.tag or derive_tag(settings)
    arms = resolve_arms(settings, cfg, tag, cfg.raw_tag or default_raw_tag(settings))
    done = load_answers(answers)
    questions = select_questions(conversations, cfg)
    return {
        arm.system: sum(needs_answer(done, arm.record_key(sid, q.index)) for sid, qs in questions.items() for q in qs)
        for arm in arms
    }


async def run_qa_eval(
    svc: AsyncMemoryService,
    conversations: Sequence[Conversation],
    cfg: QAConfig,
    out_dir: Path,
    *,
    progress: Progress | None = None,
    full_context_svc: AsyncMemoryService | None = None,
) -> dict[str, Any]:
    """Ingest (resumable), answer with every system (resumable), score; returns the JSON-ready result and
    appends to ``answers.jsonl``. ``full_context_svc`` answers the full-context arm (a service whose model
    server holds the whole conversation); default ``svc``."""
    started = time.perf_counter()
    st = svc.settings
    tag = cfg.tag or derive_tag(st)
    raw_tag = cfg.raw_tag or default_raw_tag(st)
    arms = resolve_arms(st, cfg, tag, raw_tag)
    kinds = {a.kind for a in arms}
    out_dir.mkdir(parents=True, exist_ok=True)
    answers_path = cfg.answers or out_dir / "answers.jsonl"
    answers_path.parent.mkdir(parents=True, exist_ok=True)
    done = load_answers(answers_path)
    questions = select_questions(conversations, cfg)
    n_questions = sum(len(v) for v in questions.values())

    ingest_stats: dict[str, Any] = {}
    raw_stats: dict[str, Any] = {}
    scopes = {conv.sample_id: _scope(cfg, tag, conv.sample_id) for conv in conversations}
    raw_scopes = {conv.sample_id: _scope(cfg, raw_tag, conv.sample_id) for conv in conversations}
    if MEMORY in kinds and not cfg.score_only:
        pairs = [(conv, scopes[conv.sample_id]) for conv in conversations]
        stats = await ingest(svc, pairs, tag, cfg.sessions, concurrency=cfg.concurrency, progress=progress)
        ingest_stats = {conv.sample_id: {"scope": str(scope), **stats[conv.sample_id]} for conv, scope in pairs}
    if kinds & {"rag", "memory-no-llm"} and not cfg.score_only:
        for conv in conversations:
            raw_stats[conv.sample_id] = await ingest_raw(svc, conv, raw_scopes[conv.sample_id], raw_tag, cfg.sessions)

    # A conversation whose memory is not complete (turns that failed, retried on the next run) gets no
    # memory answers in this run: an answer stored now would never be asked again on the whole memory.
    incomplete = {sid: st["errors"] for sid, st in ingest_stats.items() if st.get("errors")}
    arm_scopes = {
        (arm.system, conv.sample_id): _scope(cfg, arm.scope_tag or tag, conv.sample_id)
        for arm in arms
        if arm.kind == MEMORY_ARM
        for conv in conversations
        if questions[conv.sample_id] and conv.sample_id not in incomplete
    }
    if not (cfg.ingest_only or cfg.score_only):
        await _check_arm_scopes(svc, arm_scopes, scopes, tag)
    skipped: dict[str, str] = {
        sid: f"{n} turns failed to store (first: {_first_error(ingest_stats[sid])}); the memory's answers wait "
        "for a rerun, which retries them"
        for sid, n in incomplete.items()
    }

    fits: dict[str, FullContext] = {}
    records: list[dict[str, Any]] = []
    partial: dict[str, Any] | None = None
    rechecked = {"checked": 0, "moved": 0}  # --recheck-contexts: stored memory answers, and those asked again
    if not cfg.ingest_only:
        # What this run must ask (a resumed run skips the rest): the bar whose rate and ETA mean something.
        keys = {
            arm.system: [
                arm.record_key(sid, q.index)
                for sid, qs in questions.items()
                for q in qs
                if not (arm.kind in (MEMORY, MEMORY_ARM) and sid in incomplete)
            ]
            for arm in arms
        }
        held = {key for ks in keys.values() for key in ks if not needs_answer(done, key)}
        todo = len({key for ks in keys.values() for key in ks} - held)  # a key two systems share is asked once
        asked = 0
        warmed: set[str] = set()  # conversations whose full context the server has seen in this run
        # Each system's bar starts at the answers the file already holds and moves only when one is asked,
        # so that its rate and ETA count this run's answers, not the resumed ones passed over.
        per_arm = {system: sum(key in held for key in ks) for system, ks in keys.items()}
        if progress is not None and not cfg.score_only:
            for arm in arms:
                progress(f"answer {arm.system}", per_arm[arm.system], n_questions)
        missing = dict.fromkeys((a.system for a in arms), 0)  # score only: answers not in the file yet
        with answers_path.open("a", encoding="utf-8") as sink:
            for conv in conversations:
                qs = questions[conv.sample_id]
                if not qs:
                    continue
                for arm in arms:
                    if arm.kind in (MEMORY, MEMORY_ARM) and conv.sample_id in incomplete:
                        continue
                    # the scope `ask` answers a memory arm from (None: not a memory arm)
                    memory_scope = {
                        MEMORY: scopes.get(conv.sample_id),
                        MEMORY_ARM: arm_scopes.get((arm.system, conv.sample_id)),
                        "memory-no-llm": raw_scopes.get(conv.sample_id),
                    }.get(arm.kind)
                    for q in qs:
                        key = arm.record_key(conv.sample_id, q.index)
                        if cfg.score_only and needs_answer(done, key):
                            missing[arm.system] += 1
                            continue
                        ask = needs_answer(done, key)
                        if not ask and cfg.recheck_contexts and memory_scope is not None and not cfg.score_only:
                            rechecked["checked"] += 1
                            if await context_moved(svc, done[key], q, memory_scope, cfg, arm):
                                rechecked["moved"] += 1
                                ask = True
                                todo += 1
                        if ask:
                            if memory_scope is not None:
                                rec = await answer_with_memory(svc, conv, q, memory_scope, cfg, arm)
                                if not needs_answer(done, key):  # asked again: its context had moved
                                    rec["context_moved"] = True
                            elif arm.kind == "rag":
                                rec = await answer_with_rag(svc, conv, q, raw_scopes[conv.sample_id], cfg, arm)
                            else:
                                if conv.sample_id not in fits:
                                    fits[conv.sample_id] = fit_conversation(conv, cfg.sessions, cfg.full_context_limit)
                                fc = fits[conv.sample_id]
                                rec = await answer_with_full_context(full_context_svc or svc, conv, q, fc, cfg, arm)
                                # the first question of a conversation in this run fills the prompt cache
                                rec["cache"] = "warm" if conv.sample_id in warmed else "cold"
                                warmed.add(conv.sample_id)
                            if arm.kind != "full-context" and cfg.answer_prompt_cache is not None:
                                rec["prompt_cache"] = cfg.answer_prompt_cache  # False: the answer repeats
                            sink.write(json.dumps(rec, ensure_ascii=False) + "\n")
                            sink.flush()
                            done[key] = rec
                            asked += 1
                            if progress is not None:
                                progress("answers to ask in this run, all systems", asked, todo)
                        if key not in held:  # asked in this run (by this system or one sharing its answers)
                            per_arm[arm.system] += 1
                            if progress is not None:
                                progress(f"answer {arm.system}", per_arm[arm.system], n_questions)
                        records.append({**done[key], "system": arm.system})
        if cfg.score_only:
            records, partial = _answered_by_all(records, [a.system for a in arms], missing, n_questions)
        if "full-context" in kinds:  # what the arm sent (and cut) per conversation, also for reused answers
            for conv in conversations:
                if questions[conv.sample_id] and conv.sample_id not in fits:
                    fits[conv.sample_id] = fit_conversation(conv, cfg.sessions, cfg.full_context_limit)

    # Scores (cheap, recomputed every run) and the optional judge (LLM, cached in the records).
    said: dict[str, str] = {}  # what is scored: the prediction, or the option a letter chose
    for rec in records:
        said[rec["key"]] = rec["prediction"]
        if rec["category"] == 5 and cfg.cat5_prompt == "options":
            options = cat5_options(cfg.seed, rec["sample_id"], rec["qa_index"], rec["gold"])
            said[rec["key"]] = chosen_option(rec["prediction"], options)
        rec["scores"] = metrics.score_answer(said[rec["key"]], rec["gold"], rec["category"])
    std = [r for r in records if r["category"] != 5]
    sims = metrics.sbert_similarities([r["prediction"] for r in std], [r["gold"] for r in std], svc.embedder)
    adv = [r for r in records if r["category"] == 5]
    adv_sims = metrics.sbert_similarities([said[r["key"]] for r in adv], [r["gold"] for r in adv], svc.embedder)
    for r, s in zip(std, sims, strict=True):
        r["scores"]["standard"]["sbert"] = s
    for r, s in zip(adv, adv_sims, strict=True):
        r["scores"]["amem"]["sbert"] = s
    if cfg.judge:
        verdicts: dict[str, str | None] = {}
        for i, r in enumerate(std):
            if r.get("judge") is None and r["prediction"] and not r.get("error"):
                if r["key"] not in verdicts:
                    verdicts[r["key"]] = await judge_answer(svc, r)
                r["judge"] = verdicts[r["key"]]
                done[r["key"]]["judge"] = r["judge"]
            if progress is not None:
                progress("judge", i + 1, len(std))
        if verdicts:  # keep judge labels for reruns
            with answers_path.open("w", encoding="utf-8") as sink:
                for rec in done.values():
                    sink.write(json.dumps(rec, ensure_ascii=False) + "\n")

    systems = [a.system for a in arms]
    by_system = {system: summarise_system([r for r in records if r["system"] == system]) for system in systems}
    comparisons = compare_systems(records, systems, reps=cfg.bootstrap, seed=cfg.seed) if len(systems) > 1 else []
    config = {
        **{k: v for k, v in asdict(cfg).items() if k != "full_context_settings"},  # named below
        "tag": tag,
        "raw_tag": raw_tag,
        "config_key": config_key(svc, tag, cfg),
        "arms": {a.system: {"kind": a.kind, "k": a.k, "budget": a.budget, "key": a.key} for a in arms},
        "llm_provider": st.resolved_llm_provider,
        "llm_model": model_label(st),
        "llm_temperature": st.llm_temperature,
        "llm_seed": st.llm_seed,
        "search_mode": cfg.mode or st.search_mode,
        "k": cfg.k or st.answer_k,
        "context_token_budget": cfg.token_budget or st.context_token_budget,
        "links_per_hit": st.links_per_hit,
        "answer_links_per_hit": st.resolved_answer_links_per_hit,
        "answer_fill_links_per_hit": st.answer_fill_links_per_hit,
        "enable_enrichment": st.enable_enrichment,
        "enable_links": st.enable_links,
        "enable_evolution": st.evolution_enabled,
        "embed_text_variant": st.embed_text_variant,
        "answer_shows_context": st.answer_shows_context,
        # answers of memory and rag in this report asked with the prompt cache, or before it was
        # recorded (an older answers file): they may not repeat
        "answers_maybe_cached": sum(
            1 for r in records if r["system"] != "full-context" and r.get("prompt_cache") is not False
        ),
        "meteor_uses_wordnet": metrics.meteor_uses_wordnet(),
        "category_names": {str(k): v for k, v in cfg.category_names.items()},
    }
    fs = full_context_svc.settings if full_context_svc is not None else cfg.full_context_settings
    if fs is not None:
        config["full_context_server"] = {
            "llm_model": model_label(fs),
            "local_llm_port": fs.local_llm_port,
            "local_llm_ctx": fs.local_llm_ctx,
            "local_llm_parallel": fs.local_llm_parallel,
        }
    return {
        "kind": "qa",
        "config": config,
        "ingest": ingest_stats,
        "ingest_raw": raw_stats,
        "skipped": skipped,
        "partial": partial,
        "contexts_rechecked": rechecked if cfg.recheck_contexts else None,
        "full_context": {sid: fc.info() for sid, fc in fits.items()},
        "systems": by_system,
        "comparisons": comparisons,
        "reference": PUBLISHED_QWEN25_15B if cfg.reference else None,
        "questions": len({(r["sample_id"], r["qa_index"]) for r in records}),
        "seconds": time.perf_counter() - started,
    }


def _answered_by_all(
    records: list[dict[str, Any]], systems: Sequence[str], missing: Mapping[str, int], asked: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A score-only run's records cut to the questions every system that has begun has answered, so
    that their scores and paired differences stand on the same questions; and what is left to ask (a
    system with no answer yet shows no scores)."""
    have: dict[str, set[tuple[str, int]]] = {s: set() for s in systems}
    for r in records:
        have[r["system"]].add((r["sample_id"], r["qa_index"]))
    begun = [qs for qs in have.values() if qs]
    common = set.intersection(*begun) if begun else set()
    kept = [r for r in records if (r["sample_id"], r["qa_index"]) in common]
    return kept, {"questions": asked, "scored": len(common), "missing": dict(missing)}


def _first_error(stats: Mapping[str, Any]) -> str:
    """The first failed turn's error without its note id, so a report says why turns failed."""
    messages = stats.get("error_messages") or ["no error message recorded"]
    return str(messages[0]).split(": ", 1)[-1][:200]
