"""Asking one question of one system (the memory's ``ask``, plain RAG, the whole conversation), the
per-category answer rules (A-MEM's, reference section 1.7), the optional LLM judge, and the answers
file a run appends to and resumes from."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from graphmem.errors import GraphmemError
from graphmem.evaluation.full_context import FullContext
from graphmem.evaluation.locomo import QA, Conversation
from graphmem.evaluation.qa_systems import Arm, QAConfig
from graphmem.models import Note, Scope, Usage
from graphmem.service import AsyncMemoryService, Context, build_context

NOT_MENTIONED = "Not mentioned in the conversation"


@cache
def prompt(name: str) -> str:
    """A prompt file shipped in ``graphmem/evaluation/prompts/``."""
    return (resources.files("graphmem.evaluation") / "prompts" / f"{name}.txt").read_text(encoding="utf-8").strip()


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


def rag_context(ranked: Sequence[Note], budget: int) -> Context:
    """The rag arm's context: dense hits in rank order, each kept while the budget holds (a note that
    would overflow is skipped, as ``ask`` packs), written as ``ask`` writes notes."""
    return build_context(ranked, budget)


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


def _context_args(cfg: QAConfig, arm: Arm) -> dict[str, Any]:
    """What ``ask`` builds a memory arm's context from (one place for the answer and its recheck)."""
    return {"k": arm.k, "mode": cfg.mode, "token_budget": arm.budget, "show_context": arm.show_context}


async def answer_with_memory(
    svc: AsyncMemoryService, conv: Conversation, q: QA, scope: Scope, cfg: QAConfig, arm: Arm
) -> dict[str, Any]:
    """``ask`` on the scope (the memory's notes, or the raw turns for memory-no-llm) within the arm's budget."""
    rec = _record_base(arm, conv, q)
    try:
        res = await svc.ask(
            q.question, scope, instructions=instructions_for(q, conv.sample_id, cfg), **_context_args(cfg, arm)
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


async def context_moved(
    svc: AsyncMemoryService, rec: dict[str, Any], q: QA, scope: Scope, cfg: QAConfig, arm: Arm
) -> bool:
    """Would ``ask`` give a stored memory answer another context today? Its key names the settings and
    the ingest, not the database's state, which moves a context too (the full-text index's term
    statistics span every scope): ``--recheck-contexts`` asks such a question again."""
    got = await svc.ask_context(q.question, scope, **_context_args(cfg, arm))
    return [h.note.source_id for h in got.hits] != (rec.get("retrieved") or [])


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
