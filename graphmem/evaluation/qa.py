"""LoCoMo question answering with graphmem (full A-MEM ingest, then ``ask``), and a full-context baseline.

Per conversation: a fresh scope ``locomo-<tag>-<sample_id>`` (the tag names the configuration, so two
configurations never share notes), one note per turn through the agentic ingest (note construction +
link/evolution with the configured LLM, in turn order, conversations in parallel). Ingest is
resumable: turns already stored (by their ids) are skipped. Answers are appended to ``answers.jsonl`` as they come and
reused on a rerun with the same configuration.

Answer prompts follow A-MEM (reference §1.7): a per-category instruction after the question
(temporal questions get a date instruction); category 5 either offers the two options A-MEM and
LoCoMo offer ("Not mentioned in the conversation" and the dataset's adversarial answer, in seeded
random order: paper-faithful, but it shows the model the distractor) or asks openly.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from graphmem.config import Settings
from graphmem.errors import GraphmemError
from graphmem.evaluation import metrics
from graphmem.evaluation.locomo import CATEGORY_NAMES, QA, Conversation, turn_inputs
from graphmem.models import IngestItem, IngestReport, IngestStatus, Scope, Usage
from graphmem.service import AsyncMemoryService

System = Literal["memory", "full-context"]
Cat5Prompt = Literal["options", "open"]
NOT_MENTIONED = "Not mentioned in the conversation"

Progress = Callable[[str, int, int], None]


@cache
def prompt(name: str) -> str:
    """A prompt file shipped in ``graphmem/evaluation/prompts/``."""
    return (resources.files("graphmem.evaluation") / "prompts" / f"{name}.txt").read_text(encoding="utf-8").strip()


@dataclass
class QAConfig:
    tag: str | None = None  # default: derived from the settings (see derive_tag)
    sessions: list[int] | None = None
    categories: tuple[int, ...] = (1, 2, 3, 4, 5)
    max_questions: int | None = None  # per conversation
    mode: str | None = None  # search mode; default settings.search_mode
    k: int | None = None  # default settings.search_k
    token_budget: int | None = None
    systems: tuple[str, ...] = ("memory",)  # add "full-context" for the baseline
    cat5_prompt: Cat5Prompt = "options"
    judge: bool = False
    seed: int = 0
    ingest_only: bool = False
    concurrency: int | None = None  # notes in flight while ingesting (default: the setting)


def model_label(settings: Settings) -> str:
    provider = settings.resolved_llm_provider
    return settings.local_model if provider == "local" else settings.llm_model


def derive_tag(settings: Settings) -> str:
    """A short, readable tag naming what changes the stored notes: model, ablation switches, embed text."""
    flags = "".join(
        c if on else "-"
        for c, on in (
            ("e", settings.enable_enrichment),
            ("l", settings.enable_links),
            ("v", settings.evolution_enabled),
        )
    )
    key = json.dumps(
        [
            settings.resolved_llm_provider,
            model_label(settings),
            settings.llm_temperature,
            settings.llm_seed,
            flags,
            settings.embed_text_variant,
            settings.neighbour_k,
            settings.embedder,
        ]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:6]
    slug = "".join(ch for ch in model_label(settings).lower() if ch.isalnum() or ch in ".-")[:24]
    return f"{slug}-{flags}-{digest}"


def instructions_for(q: QA, sample_id: str, cfg: QAConfig) -> str:
    if q.category == 2:
        return prompt("answer_temporal")
    if q.category == 5:
        if cfg.cat5_prompt == "open":
            return prompt("answer_adversarial_open")
        options = [NOT_MENTIONED, q.answer]
        random.Random(f"{cfg.seed}:{sample_id}:{q.index}").shuffle(options)
        return prompt("answer_adversarial_options").format(option_a=options[0], option_b=options[1])
    return prompt("answer_default")


def full_context(conv: Conversation, sessions: Sequence[int] | None) -> str:
    """The whole (selected part of the) conversation, one line per turn with its session date."""
    return "\n".join(f"[{s.date_time}] {t.content}" if s.date_time else t.content for s, t in conv.turns(sessions))


# --- ingest -----------------------------------------------------------------------------------------


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

    reports = await svc.ingest_scopes(batches, concurrency=concurrency, on_item=seen)
    return {conv.sample_id: _ingest_stats(report) for (conv, _), report in zip(conversations, reports, strict=True)}


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
    }
    return stats


# --- answering --------------------------------------------------------------------------------------


class JudgeVerdict(BaseModel):
    reason: str = Field("", description="one short sentence")
    label: Literal["CORRECT", "WRONG"]


def _record_base(system: str, conv: Conversation, q: QA, cfg_key: str) -> dict[str, Any]:
    return {
        "key": f"{cfg_key}:{system}:{conv.sample_id}:{q.index}",
        "system": system,
        "sample_id": conv.sample_id,
        "qa_index": q.index,
        "category": q.category,
        "question": q.question,
        "gold": q.answer,
    }


def _usage_fields(usage: Usage) -> dict[str, Any]:
    return {
        "llm_calls": usage.llm_calls,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "seconds": {
            "embed": usage.embed_seconds,
            "search": usage.store_seconds,
            "llm": usage.llm_seconds,
            "total": usage.total_seconds,
        },
    }


async def answer_with_memory(
    svc: AsyncMemoryService, conv: Conversation, q: QA, scope: Scope, cfg: QAConfig, cfg_key: str
) -> dict[str, Any]:
    rec = _record_base("memory", conv, q, cfg_key)
    try:
        res = await svc.ask(
            q.question,
            scope,
            k=cfg.k,
            mode=cfg.mode,
            token_budget=cfg.token_budget,
            instructions=instructions_for(q, conv.sample_id, cfg),
        )
    except GraphmemError as exc:
        return {**rec, "prediction": "", "error": str(exc)[:500], "context_tokens": 0, "notes_used": 0}
    return {
        **rec,
        "prediction": res.answer,
        "context_tokens": res.context_tokens,
        "notes_used": len(res.notes),
        "retrieved": [h.note.source_id for h in res.notes],
        **_usage_fields(res.usage),
    }


async def answer_with_full_context(
    svc: AsyncMemoryService, conv: Conversation, q: QA, cfg: QAConfig, cfg_key: str
) -> dict[str, Any]:
    from graphmem.tokens import count_tokens

    rec = _record_base("full-context", conv, q, cfg_key)
    context = full_context(conv, cfg.sessions)
    usage = Usage()
    started = time.perf_counter()
    try:
        answer = await svc.answer(
            q.question, context, instructions=instructions_for(q, conv.sample_id, cfg), usage=usage
        )
    except GraphmemError as exc:
        return {**rec, "prediction": "", "error": str(exc)[:500], "context_tokens": count_tokens(context)}
    usage.total_seconds = time.perf_counter() - started
    return {
        **rec,
        "prediction": answer,
        "context_tokens": count_tokens(context),
        "notes_used": len(conv.turns(cfg.sessions)),
        **_usage_fields(usage),
    }


async def judge_answer(svc: AsyncMemoryService, rec: dict[str, Any]) -> str | None:
    """LLM judge (categories 1-4): CORRECT / WRONG, None when the judge's output stayed unusable."""
    from langchain_core.messages import HumanMessage

    text = prompt("judge").format(question=rec["question"], gold=rec["gold"], prediction=rec["prediction"])
    llm = await svc.llm_caller()
    verdict, _ = await llm.structured(JudgeVerdict, [HumanMessage(text)], Usage())
    return verdict.label if verdict is not None else None


def _load_answers(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            out[rec["key"]] = rec
    return out


def config_key(svc: AsyncMemoryService, tag: str, cfg: QAConfig) -> str:
    s = svc.settings
    key = json.dumps(
        [
            tag,
            cfg.mode or s.search_mode,
            cfg.k or s.search_k,
            cfg.token_budget or s.context_token_budget,
            cfg.cat5_prompt,
            cfg.seed,
            cfg.sessions,
            model_label(s),
            s.llm_temperature,
            s.links_per_hit,
            "answers-v1",
        ],
    )
    return hashlib.sha256(key.encode()).hexdigest()[:10]


def summarise_system(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    rows = [{"category": r["category"], "scores": r["scores"]} for r in records]
    out = metrics.aggregate(rows)
    for label, sel in (
        ("overall", records),
        *((str(c), [r for r in records if r["category"] == c]) for c in range(1, 6)),
    ):
        if not sel:
            continue
        cost = {
            "count": len(sel),
            "context_tokens": metrics.mean(r.get("context_tokens", 0) for r in sel),
            "total_tokens": metrics.mean(r.get("total_tokens", 0) for r in sel),
            "input_tokens": metrics.mean(r.get("input_tokens", 0) for r in sel),
            "output_tokens": metrics.mean(r.get("output_tokens", 0) for r in sel),
            "seconds": metrics.mean(r.get("seconds", {}).get("total", 0.0) for r in sel),
            "search_seconds": metrics.mean(r.get("seconds", {}).get("search", 0.0) for r in sel),
            "llm_seconds": metrics.mean(r.get("seconds", {}).get("llm", 0.0) for r in sel),
            "errors": sum(1 for r in sel if r.get("error")),
        }
        judged = [r["judge"] for r in sel if r.get("judge") in ("CORRECT", "WRONG")]
        if judged:
            cost["judge_accuracy"] = judged.count("CORRECT") / len(judged)
            cost["judged"] = len(judged)
        out.setdefault("cost", {})[label] = cost
    return out


async def run_qa_eval(
    svc: AsyncMemoryService,
    conversations: Sequence[Conversation],
    cfg: QAConfig,
    out_dir: Path,
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Ingest (resumable), answer, score; returns the JSON-ready result and writes answers.jsonl."""
    started = time.perf_counter()
    tag = cfg.tag or derive_tag(svc.settings)
    key = config_key(svc, tag, cfg)
    out_dir.mkdir(parents=True, exist_ok=True)
    answers_path = out_dir / "answers.jsonl"
    done = _load_answers(answers_path)
    ingest_stats: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    scopes = [(conv, Scope(user_id=f"locomo-{tag}-{conv.sample_id}"[:128])) for conv in conversations]
    if "memory" in cfg.systems:
        stats = await ingest(svc, scopes, tag, cfg.sessions, concurrency=cfg.concurrency, progress=progress)
        ingest_stats = {conv.sample_id: {"scope": str(scope), **stats[conv.sample_id]} for conv, scope in scopes}
    with answers_path.open("a", encoding="utf-8") as sink:
        for conv, scope in scopes:
            if cfg.ingest_only:
                continue
            questions = conv.questions(categories=cfg.categories, sessions=cfg.sessions)
            if cfg.max_questions is not None:
                questions = questions[: cfg.max_questions]
            for system in cfg.systems:
                for i, q in enumerate(questions):
                    rec_key = f"{key}:{system}:{conv.sample_id}:{q.index}"
                    rec = done.get(rec_key)
                    if rec is None or rec.get("error"):
                        if system == "memory":
                            rec = await answer_with_memory(svc, conv, q, scope, cfg, key)
                        else:
                            rec = await answer_with_full_context(svc, conv, q, cfg, key)
                        sink.write(json.dumps(rec, ensure_ascii=False) + "\n")
                        sink.flush()
                        done[rec_key] = rec
                    records.append(rec)
                    if progress is not None:
                        progress(f"answer {system} {conv.sample_id}", i + 1, len(questions))

    # Scores (cheap, recomputed every run) and the optional judge (LLM, cached in the records).
    for rec in records:
        rec["scores"] = metrics.score_answer(rec["prediction"], rec["gold"], rec["category"])
    std = [r for r in records if r["category"] != 5]
    sims = metrics.sbert_similarities([r["prediction"] for r in std], [r["gold"] for r in std], svc.embedder)
    adv = [r for r in records if r["category"] == 5]
    adv_sims = metrics.sbert_similarities([r["prediction"] for r in adv], [r["gold"] for r in adv], svc.embedder)
    for r, s in zip(std, sims, strict=True):
        r["scores"]["standard"]["sbert"] = s
    for r, s in zip(adv, adv_sims, strict=True):
        r["scores"]["amem"]["sbert"] = s
    if cfg.judge:
        for i, r in enumerate(std):
            if r.get("judge") is None and r["prediction"]:
                r["judge"] = await judge_answer(svc, r)
            if progress is not None:
                progress("judge", i + 1, len(std))
    if cfg.judge or any("judge" in r for r in records):  # keep judge labels for reruns
        with answers_path.open("w", encoding="utf-8") as sink:
            for rec in done.values():
                match = next((r for r in records if r["key"] == rec["key"]), rec)
                sink.write(json.dumps({k: v for k, v in match.items() if k != "scores"}, ensure_ascii=False) + "\n")

    by_system = {system: summarise_system([r for r in records if r["system"] == system]) for system in cfg.systems}
    st = svc.settings
    return {
        "kind": "qa",
        "config": {
            **asdict(cfg),
            "tag": tag,
            "config_key": key,
            "llm_provider": st.resolved_llm_provider,
            "llm_model": model_label(st),
            "llm_temperature": st.llm_temperature,
            "llm_seed": st.llm_seed,
            "search_mode": cfg.mode or st.search_mode,
            "k": cfg.k or st.search_k,
            "context_token_budget": cfg.token_budget or st.context_token_budget,
            "links_per_hit": st.links_per_hit,
            "enable_enrichment": st.enable_enrichment,
            "enable_links": st.enable_links,
            "enable_evolution": st.evolution_enabled,
            "embed_text_variant": st.embed_text_variant,
            "meteor_uses_wordnet": metrics.meteor_uses_wordnet(),
            "category_names": CATEGORY_NAMES,
        },
        "ingest": ingest_stats,
        "systems": by_system,
        "questions": len({(r["sample_id"], r["qa_index"]) for r in records}),
        "seconds": time.perf_counter() - started,
    }
