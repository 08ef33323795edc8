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
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from graphmem.config import Settings
from graphmem.errors import GraphmemError, InvalidInputError
from graphmem.evaluation import Progress, metrics
from graphmem.evaluation.compare import compare_systems, stratified_sample
from graphmem.evaluation.full_context import FullContext, fit_conversation
from graphmem.evaluation.links import ARMS as LINKS_ARMS
from graphmem.evaluation.links import arm_tag
from graphmem.evaluation.locomo import CATEGORY_NAMES, QA, Conversation, turn_inputs
from graphmem.models import LIMITS, TEXT_FIELDS, IngestItem, IngestReport, IngestStatus, Note, Scope, Usage
from graphmem.service import AsyncMemoryService, Context, build_context

Cat5Prompt = Literal["options", "open"]
NOT_MENTIONED = "Not mentioned in the conversation"

MEMORY = "memory"
# The memory's own notes answered with / without their LLM-written contexts (issue 27's question: does
# what enrichment writes help the answer, or only take the budget?); the one the setting picks shares
# the memory's answers.
CONTEXT_ARMS = {"memory-with-context": True, "memory-no-context": False}
# The write-path ablation as QA (issue 26, deliverable 5): the memory's notes with one LLM step taken
# out post hoc, answered from the arm scopes `eval links` derives from the same ingest (system -> arm);
# memory-full answers from the arms' copy of the whole memory, the control taken at the same moment.
ABLATION_ARMS = {f"{MEMORY}-{arm}": arm for arm in LINKS_ARMS if arm != "with-context"}
MEMORY_ARM = "memory-arm"
BASELINES: tuple[str, ...] = ("full-context", "rag", "memory-no-llm", *CONTEXT_ARMS, *ABLATION_ARMS)
RAG_K = 50  # dense candidates for the rag arm; the budget, not k, decides how many are kept

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
    k: int | None = None  # default settings.answer_k (the hits ask packs)
    token_budget: int | None = None
    systems: tuple[str, ...] = (MEMORY,)  # see the module docstring; systems_for() builds the tuple
    cat5_prompt: Cat5Prompt = "options"
    judge: bool = False
    seed: int = 0
    ingest_only: bool = False
    # score what the answers file holds: nothing stored or asked, every system on the questions all of
    # them answered (a long run's interim result, while it goes on or after it was stopped)
    score_only: bool = False
    concurrency: int | None = None  # notes in flight while ingesting (default: the setting)
    sample: int | None = None  # a seeded sample of this many questions, stratified by category
    rag_k: int = RAG_K
    raw_tag: str | None = None  # scope tag of the raw turns (rag, memory-no-llm); default raw-<variant>-follows
    full_context_limit: int | None = None  # counted tokens of conversation the full-context arm may send
    # the full-context server's settings when its answers are all in the answers file (none started)
    full_context_settings: Settings | None = None
    bootstrap: int = 2000  # resamples of each paired difference
    scope_prefix: str = "locomo"
    reference: bool = True  # the paper's Qwen2.5-1.5B rows beside the results (LoCoMo only)
    category_names: dict[int, str] = field(default_factory=lambda: dict(CATEGORY_NAMES))
    answers: Path | None = None  # the answers file; default <out>/answers.jsonl (several reports may share one)
    # the local model's answers reuse llama-server's prompt cache (None: not the local model); the
    # harness turns it off so that the same prompt gets the same answer in every run
    answer_prompt_cache: bool | None = None


def model_label(settings: Settings) -> str:
    provider = settings.resolved_llm_provider
    return settings.local_model if provider == "local" else settings.llm_model


def derive_tag(settings: Settings) -> str:
    """A short, readable tag naming what changes the stored notes: model, ablation switches, embed text,
    and every write-path setting (a change gives a new tag, so a resumed ingest is one configuration)."""
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
            # What the write path decides since issues 25-28: a resumed ingest never mixes two of them.
            settings.link_decision,
            settings.link_candidates,
            settings.link_threshold,
            settings.link_word_candidates,
            settings.ground_enrichment,
            settings.evolution_reembed,
            settings.enable_supersession,
            settings.supersession_candidates,
            settings.supersession_threshold,
            settings.supersession_gate,
            # only where it changes what an ingest stores, so that earlier tags stay as they were
            *([settings.evolution_neighbours] if settings.evolution_enabled and settings.evolution_neighbours else []),
            *(["evolution_words"] if settings.evolution_words else []),
        ]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:6]
    slug = "".join(ch for ch in model_label(settings).lower() if ch.isalnum() or ch in ".-")[:24]
    return f"{slug}-{flags}-{digest}"


def instructions_for(q: QA, sample_id: str, cfg: QAConfig) -> str:
    """The per-category answer rule appended to the question (with the question's date when it has one)."""
    dated = f"The question is asked on {q.question_date}.\n" if q.question_date else ""
    if q.category == 2:
        return dated + prompt("answer_temporal")
    if q.category == 5:
        if cfg.cat5_prompt == "open":
            return dated + prompt("answer_adversarial_open")
        options = cat5_options(cfg.seed, sample_id, q.index, q.answer)
        return dated + prompt("answer_adversarial_options").format(option_a=options[0], option_b=options[1])
    return dated + prompt("answer_default")


def cat5_options(seed: int, sample_id: str, index: int, answer: str) -> list[str]:
    """The two options of a category-5 question, (a) then (b), in the seeded order the prompt shows."""
    options = [NOT_MENTIONED, answer]
    random.Random(f"{seed}:{sample_id}:{index}").shuffle(options)
    return options


_OPTION = re.compile(r"^\s*\(?([ab])\)(?:[\s.:-]*)(.*)$|^\s*([ab])\s*$", re.IGNORECASE | re.DOTALL)


def chosen_option(prediction: str, options: Sequence[str]) -> str:
    """What a reply to the two-option prompt chose: the small model often answers "(a)" or "(b) text"
    although asked for the text; a bare letter becomes its option's text, a letter before text is
    dropped. Any other reply is scored as it is."""
    match = _OPTION.match(prediction or "")
    if match is None:
        return prediction
    letter = (match.group(1) or match.group(3)).lower()
    rest = (match.group(2) or "").strip()
    return rest or options[0 if letter == "a" else 1]


# --- systems ----------------------------------------------------------------------------------------


def parse_baselines(text: str | None) -> tuple[str, ...]:
    """``"full-context,rag"`` -> the baseline names, in order, without repeats; ``none``/empty -> ()."""
    if text is None or text.strip() in ("", "none"):
        return ()
    names = [x.strip() for x in text.split(",") if x.strip() and x.strip() != "none"]
    bad = [n for n in names if n not in BASELINES]
    if bad:
        raise InvalidInputError(f"unknown baseline(s) {', '.join(bad)}; known: none, {', '.join(BASELINES)}")
    return tuple(dict.fromkeys(names))


def parse_budgets(text: str | None) -> tuple[int, ...]:
    """``"500,1000,2000,4000"`` -> sorted distinct context budgets (each within the ask limits)."""
    if not text:
        return ()
    try:
        values = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise InvalidInputError("--budgets must be integers, comma-separated") from None
    bad = [v for v in values if not LIMITS.token_budget_min <= v <= LIMITS.token_budget_max]
    if bad:
        raise InvalidInputError(
            f"budgets must be {LIMITS.token_budget_min}..{LIMITS.token_budget_max} tokens (got {bad[0]})"
        )
    return tuple(values)


def budget_system(budget: int) -> str:
    return f"{MEMORY}@{budget}"


def systems_for(
    baselines: Sequence[str], budgets: Sequence[int] = (), *, baseline_only: bool = False
) -> tuple[str, ...]:
    """The systems of a run: the memory (unless only baselines), one per budget, then the baselines."""
    out = [] if baseline_only else [MEMORY]
    out += [budget_system(b) for b in budgets]
    out += list(baselines)
    if not out:
        raise InvalidInputError("nothing to answer: --baseline-only without a baseline or budget")
    return tuple(dict.fromkeys(out))


def k_for_budget(budget: int, base_k: int, base_budget: int) -> int:
    """Search k for a context budget: the default k at the default budget and below, growing in
    proportion above it (about 100 counted tokens per retrieved note and its turn links), so a larger
    budget has notes to fill it with."""
    return min(LIMITS.k_max, max(base_k, round(base_k * budget / base_budget)))


@dataclass(frozen=True)
class Arm:
    """One system of a run and how its answers are keyed."""

    system: str  # the name in qa.json
    kind: str  # memory | memory-arm | memory-no-llm | rag | full-context
    k: int | None = None
    budget: int | None = None
    key: str = ""  # hash of the configuration its answers depend on
    answer_system: str = ""  # the system name in the answers' keys (memory@B at the defaults is memory)
    show_context: bool | None = None  # the notes' LLM-written contexts in the answer (None: the setting)
    scope_tag: str | None = None  # memory-arm: the tag of the arm's scopes (locomo-<tag>.<arm>-<sample>)

    def record_key(self, sample_id: str, qa_index: int) -> str:
        return f"{self.key}:{self.answer_system}:{sample_id}:{qa_index}"


def _hash(parts: Sequence[Any]) -> str:
    return hashlib.sha256(json.dumps(list(parts), default=str).encode()).hexdigest()[:10]


def answer_rules_digest() -> str:
    """The per-category answer rules' text (``prompts/answer_*.txt``) in every answer's key: an
    answer given under other rules is asked again, never mixed into a resumed run's scores."""
    folder = resources.files("graphmem.evaluation") / "prompts"
    rules = sorted((f.name, f.read_text(encoding="utf-8")) for f in folder.iterdir() if f.name.startswith("answer_"))
    return _hash(rules)[:8]


def _memory_key(settings: Settings, tag: str, mode: Any, k: int, budget: int, cfg: QAConfig) -> str:
    # The parts since the baselines were added, and the answer rules' digest (issue 26, 6 December: the
    # temporal rule changed, and answers given under the old one must not be reused).
    return _hash(
        [
            tag,
            mode,
            k,
            budget,
            cfg.cat5_prompt,
            cfg.seed,
            cfg.sessions,
            model_label(settings),
            settings.llm_temperature,
            settings.links_per_hit,
            "answers-v1",
            # Appended only when off, so that answers written before the setting existed keep their keys.
            *([] if settings.answer_shows_context else ["answer-content-only"]),
            *([] if settings.answer_links_per_hit is None else [f"answer-links-{settings.answer_links_per_hit}"]),
            # Appended unless search reads every field (the default until 7 December), likewise.
            *([] if settings.search_fields == TEXT_FIELDS else [f"search-text-{settings.search_text_fields}"]),
            answer_rules_digest(),
        ]
    )


def default_raw_tag(settings: Settings) -> str:
    """The scope tag of raw turns with FOLLOWS links: the one ``eval retrieval`` fills, so both share it."""
    return f"raw-{settings.embed_text_variant}-follows"


def resolve_arms(settings: Settings, cfg: QAConfig, tag: str, raw_tag: str) -> list[Arm]:
    mode = cfg.mode or settings.search_mode
    base_k = cfg.k or settings.answer_k
    base_budget = cfg.token_budget or settings.context_token_budget
    arms = []
    for system in cfg.systems:
        if system == MEMORY:
            key = _memory_key(settings, tag, mode, base_k, base_budget, cfg)
            arms.append(Arm(system, MEMORY, base_k, base_budget, key, MEMORY))
        elif system.startswith(f"{MEMORY}@"):
            budget = int(system.split("@", 1)[1])
            k = k_for_budget(budget, base_k, base_budget)
            same = (k, budget) == (base_k, base_budget)
            key = _memory_key(settings, tag, mode, k, budget, cfg)
            arms.append(Arm(system, MEMORY, k, budget, key, MEMORY if same else system))
        elif system in CONTEXT_ARMS:
            shown = CONTEXT_ARMS[system]
            key = _memory_key(
                settings.model_copy(update={"answer_shows_context": shown}), tag, mode, base_k, base_budget, cfg
            )
            same = settings.answer_shows_context == shown  # the memory itself already answers this way
            arms.append(Arm(system, MEMORY, base_k, base_budget, key, MEMORY if same else system, shown))
        elif system in ABLATION_ARMS:
            scope_tag = arm_tag(tag, ABLATION_ARMS[system])
            key = _memory_key(settings, scope_tag, mode, base_k, base_budget, cfg)
            arms.append(Arm(system, MEMORY_ARM, base_k, base_budget, key, system, scope_tag=scope_tag))
        elif system == "memory-no-llm":
            # raw turns have no LLM context to show or hide: one key whatever the setting says
            raw = settings.model_copy(update={"answer_shows_context": True})
            key = _memory_key(raw, raw_tag, mode, base_k, base_budget, cfg)
            arms.append(Arm(system, system, base_k, base_budget, key, system))
        elif system == "rag":
            parts = ["rag", raw_tag, cfg.rag_k, base_budget, cfg.cat5_prompt, cfg.seed, cfg.sessions]
            key = _hash(
                [
                    *parts,
                    model_label(settings),
                    settings.llm_temperature,
                    settings.embedder,
                    "rag-v1",
                    answer_rules_digest(),
                ]
            )
            arms.append(Arm(system, system, cfg.rag_k, base_budget, key, system))
        elif system == "full-context":
            parts = ["full-context", cfg.full_context_limit, cfg.cat5_prompt, cfg.seed, cfg.sessions]
            key = _hash([*parts, model_label(settings), settings.llm_temperature, "fc-v2", answer_rules_digest()])
            arms.append(Arm(system, system, None, cfg.full_context_limit, key, system))
        else:
            raise InvalidInputError(f"unknown system {system!r}")
    return arms


def rag_context(ranked: Sequence[Note], budget: int) -> Context:
    """The rag arm's context: dense hits in rank order, each kept while the budget holds (a note that
    would overflow is skipped, as ``ask`` packs), written as ``ask`` writes notes."""
    return build_context(ranked, budget)


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


# --- answering --------------------------------------------------------------------------------------


class JudgeVerdict(BaseModel):
    reason: str = Field("", description="one short sentence")
    label: Literal["CORRECT", "WRONG"]


def _record_base(arm: Arm, conv: Conversation, q: QA) -> dict[str, Any]:
    return {
        "key": arm.record_key(conv.sample_id, q.index),
        "system": arm.answer_system,
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
        "cached_input_tokens": usage.cached_input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "seconds": {
            "embed": usage.embed_seconds,
            "search": usage.store_seconds,
            "llm": usage.llm_seconds,
            "total": usage.total_seconds,
        },
    }


def _failed(rec: dict[str, Any], exc: Exception, **extra: Any) -> dict[str, Any]:
    """A failed answer: kept with its error (reported as failed, never scored) and asked again on a rerun."""
    return {**rec, "prediction": "", "error": f"{type(exc).__name__}: {exc}"[:500], **extra}


async def answer_with_memory(
    svc: AsyncMemoryService, conv: Conversation, q: QA, scope: Scope, cfg: QAConfig, arm: Arm
) -> dict[str, Any]:
    """``ask`` on the scope (the memory's notes, or the raw turns for memory-no-llm) within the arm's budget."""
    rec = _record_base(arm, conv, q)
    try:
        res = await svc.ask(
            q.question,
            scope,
            k=arm.k,
            mode=cfg.mode,
            token_budget=arm.budget,
            instructions=instructions_for(q, conv.sample_id, cfg),
            show_context=arm.show_context,
        )
    except GraphmemError as exc:
        return _failed(rec, exc, context_tokens=0, notes_used=0)
    return {
        **rec,
        "prediction": res.answer,
        "context_tokens": res.context_tokens,
        "notes_used": len(res.notes),
        "retrieved": [h.note.source_id for h in res.notes],
        **_usage_fields(res.usage),
    }


async def answer_with_rag(
    svc: AsyncMemoryService, conv: Conversation, q: QA, scope: Scope, cfg: QAConfig, arm: Arm
) -> dict[str, Any]:
    """Plain RAG over the raw turns: dense top-k (vector index only) packed within the budget."""
    rec = _record_base(arm, conv, q)
    usage = Usage()
    started = time.perf_counter()
    try:
        hits = await svc.search(q.question, scope, k=arm.k, mode="vector", usage=usage)
        ctx = rag_context([h.note for h in hits], arm.budget or svc.settings.context_token_budget)
        answer = await svc.answer(
            q.question, ctx.text or "(no notes)", instructions=instructions_for(q, conv.sample_id, cfg), usage=usage
        )
    except GraphmemError as exc:
        return _failed(rec, exc, context_tokens=0, notes_used=0)
    usage.total_seconds = time.perf_counter() - started
    return {
        **rec,
        "prediction": answer,
        "context_tokens": ctx.tokens,
        "notes_used": len(ctx.used),
        "retrieved": [hits[i].note.source_id for i in ctx.used],
        **_usage_fields(usage),
    }


async def answer_with_full_context(
    svc: AsyncMemoryService, conv: Conversation, q: QA, fc: FullContext, cfg: QAConfig, arm: Arm
) -> dict[str, Any]:
    """The whole conversation first, the question last (``svc.answer``'s prompt: notes, then question)."""
    rec = {
        **_record_base(arm, conv, q),
        "context_tokens": fc.tokens,
        "notes_used": fc.turns,
        "truncated": not fc.fits,
        "cut_turns": fc.cut_turns,
    }
    usage = Usage()
    started = time.perf_counter()
    try:
        answer = await svc.answer(
            q.question, fc.text or "(no notes)", instructions=instructions_for(q, conv.sample_id, cfg), usage=usage
        )
    except GraphmemError as exc:
        return _failed(rec, exc)
    usage.total_seconds = time.perf_counter() - started
    return {**rec, "prediction": answer, **_usage_fields(usage)}


async def judge_answer(svc: AsyncMemoryService, rec: dict[str, Any]) -> str | None:
    """LLM judge (categories 1-4): CORRECT / WRONG, None when the judge's output stayed unusable.
    Asked through the answering model: the evaluation's is the one without the prompt cache, whose
    verdicts repeat."""
    from langchain_core.messages import HumanMessage

    text = prompt("judge").format(question=rec["question"], gold=rec["gold"], prediction=rec["prediction"])
    llm = await svc.answer_caller()
    verdict, _ = await llm.structured(JudgeVerdict, [HumanMessage(text)], Usage())
    return verdict.label if verdict is not None else None


def load_answers(path: Path) -> dict[str, dict[str, Any]]:
    """The answers file as {key: record}; a later line for a key replaces an earlier one (a retried
    failure), and a line cut off by a crash mid-write is ignored."""
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "key" in rec:
            out[rec["key"]] = rec
    return out


def needs_answer(done: dict[str, dict[str, Any]], key: str) -> bool:
    """Resume rule: a question is asked unless the answers file holds an answer for its key that did not fail."""
    rec = done.get(key)
    return rec is None or bool(rec.get("error"))


def config_key(svc: AsyncMemoryService, tag: str, cfg: QAConfig) -> str:
    """The answers key of the ``memory`` system for this configuration."""
    s = svc.settings
    return _memory_key(
        s, tag, cfg.mode or s.search_mode, cfg.k or s.answer_k, cfg.token_budget or s.context_token_budget, cfg
    )


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
    if not cfg.ingest_only:
        # What this run must ask (a resumed run skips the rest): the bar whose rate and ETA mean something.
        todo = sum(
            needs_answer(done, arm.record_key(sid, q.index))
            for sid, qs in questions.items()
            for q in qs
            for arm in arms
            if not (arm.kind in (MEMORY, MEMORY_ARM) and sid in incomplete)
        )
        asked = 0
        warmed: set[str] = set()  # conversations whose full context the server has seen in this run
        per_arm = dict.fromkeys((a.system for a in arms), 0)
        missing = dict.fromkeys((a.system for a in arms), 0)  # score only: answers not in the file yet
        with answers_path.open("a", encoding="utf-8") as sink:
            for conv in conversations:
                qs = questions[conv.sample_id]
                if not qs:
                    continue
                for arm in arms:
                    if arm.kind in (MEMORY, MEMORY_ARM) and conv.sample_id in incomplete:
                        continue
                    for q in qs:
                        key = arm.record_key(conv.sample_id, q.index)
                        if cfg.score_only and needs_answer(done, key):
                            missing[arm.system] += 1
                            continue
                        if needs_answer(done, key):
                            if arm.kind == MEMORY:
                                rec = await answer_with_memory(svc, conv, q, scopes[conv.sample_id], cfg, arm)
                            elif arm.kind == MEMORY_ARM:
                                scope = arm_scopes[(arm.system, conv.sample_id)]
                                rec = await answer_with_memory(svc, conv, q, scope, cfg, arm)
                            elif arm.kind == "memory-no-llm":
                                rec = await answer_with_memory(svc, conv, q, raw_scopes[conv.sample_id], cfg, arm)
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
                        records.append({**done[key], "system": arm.system})
                        per_arm[arm.system] += 1
                        if progress is not None:
                            progress(f"answer {arm.system}", per_arm[arm.system], n_questions)
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
