"""LLM-free retrieval evaluation on LoCoMo: does search find the evidence turns, at what context size?

For each conversation: the turns are stored raw (``add_many``: no LLM; one note per turn) in their own
scope, or an existing scope is reused (e.g. one enriched by ``graphmem eval locomo``). Then for every
question of categories 1-4 with evidence: evidence recall@k (share of evidence turns retrieved),
all-evidence hit@k, notes returned and context tokens (rendered as ``ask`` renders them) at each k,
for each mode:

- ``vector``, ``links``, ``hybrid``: ``AsyncMemoryService.search`` (``hybrid`` is the default);
- ``dense``: exact NumPy top-k over the same stored vectors (the plain dense-retrieval baseline);
- ``full``: the whole conversation as context (recall 1 by construction; the token cost).

Turns are stored as graphmem stores a conversation: each turn FOLLOWS the previous turn of its session
(``follows_links=False`` is the ablation without them). Raw notes carry no LLM links; reuse a scope
enriched by ``graphmem eval locomo`` to measure those.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from graphmem.evaluation import Progress
from graphmem.evaluation.locomo import (
    CATEGORY_NAMES,
    Conversation,
    turn_inputs,
)
from graphmem.models import LIMITS, Note, Scope, SearchMode
from graphmem.service import AsyncMemoryService, build_context
from graphmem.store import BenchQueries

DEFAULT_KS = (1, 5, 10, 20, 40, 50)
SERVICE_MODES = tuple(m.value for m in SearchMode)
ALL_MODES = (*SERVICE_MODES, "dense", "full")


@dataclass
class RetrievalConfig:
    ks: tuple[int, ...] = DEFAULT_KS
    modes: tuple[str, ...] = ALL_MODES
    sessions: list[int] | None = None
    categories: tuple[int, ...] = (1, 2, 3, 4)
    follows_links: bool = True  # each turn FOLLOWS the previous one of its session (False: ablation)
    reuse_tag: str | None = None  # evaluate an existing scope locomo-<tag>-<sample> instead of ingesting
    max_questions: int | None = None  # per conversation
    token_budget: int | None = None  # for budget_recall@k; default settings.context_token_budget
    tag: str | None = None  # scope tag for the raw notes; default raw-<embed variant>[-follows]
    show_context: bool | None = None  # the notes' LLM contexts in the budgeted context; None: the setting

    def scope_tag(self, variant: str) -> str:
        if self.reuse_tag:
            return self.reuse_tag
        if self.tag:
            return self.tag
        return f"raw-{variant}" + ("-follows" if self.follows_links else "")


def scope_for(tag: str, sample_id: str) -> Scope:
    return Scope(user_id=f"locomo-{tag}-{sample_id}"[:128])


@dataclass
class _Acc:
    """Per-question values for one (mode, k)."""

    recall: list[float] = field(default_factory=list)
    hit: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    notes: list[int] = field(default_factory=list)
    budget_recall: list[float] = field(default_factory=list)
    budget_tokens: list[int] = field(default_factory=list)
    budget_hit: list[float] = field(default_factory=list)  # 1.0: every evidence turn inside the budget
    category: list[int] = field(default_factory=list)


def _recall(found: Sequence[str | None], evidence: set[str]) -> tuple[float, float]:
    got = evidence & {s for s in found if s}
    return len(got) / len(evidence), float(got == evidence)


async def ensure_ingested(
    svc: AsyncMemoryService,
    conv: Conversation,
    scope: Scope,
    tag: str,
    sessions: Sequence[int] | None,
    *,
    follows_links: bool,
) -> dict[str, Any]:
    """Store the turns raw (skipping those already there), each following the previous turn unless disabled."""
    items = turn_inputs(conv, sessions, tag=tag, follows=follows_links)
    started = time.perf_counter()
    existing = await svc.find_by_source([i.source_id for i in items if i.source_id], scope)
    missing = [i for i in items if i.source_id not in existing]
    if missing:
        await svc.add_many(missing, scope, batch_size=256)
    ingest_s = time.perf_counter() - started
    links = sum(i.follows is not None for i in items)
    return {"turns": len(items), "added": len(missing), "ingest_seconds": ingest_s, "follows_links": links}


async def evaluate_conversation(
    svc: AsyncMemoryService,
    conv: Conversation,
    cfg: RetrievalConfig,
    *,
    progress: Progress | None = None,
) -> tuple[dict[str, dict[int, _Acc]], dict[str, Any]]:
    """Per-question recall for every mode and k on one conversation; returns (accumulators, info)."""
    variant = svc.settings.embed_text_variant
    tag = cfg.scope_tag(variant)
    scope = scope_for(tag, conv.sample_id)
    if cfg.reuse_tag:
        info: dict[str, Any] = {"turns": len(conv.turns(cfg.sessions)), "added": 0, "reused": True}
    else:
        info = await ensure_ingested(svc, conv, scope, tag, cfg.sessions, follows_links=cfg.follows_links)
    bq = BenchQueries(svc.store)
    info["scope"] = str(scope)
    info["links_in_scope"] = await bq.link_count(scope)

    # The stored notes, their vectors (for the exact dense baseline) and their rendered token cost.
    ids, sources, matrix = await bq.vectors(scope)
    wanted = conv.dia_ids(cfg.sessions)
    keep = [i for i, s in enumerate(sources) if s in wanted]
    ids = [ids[i] for i in keep]
    sources = [sources[i] for i in keep]
    matrix = matrix[keep] if len(keep) else matrix
    notes_by_id: dict[str, Note] = {}
    for start in range(0, len(ids), LIMITS.page_max):
        for n in await svc.list(scope, limit=LIMITS.page_max, offset=start):
            notes_by_id[n.id] = n
    # written as ask writes it
    shown = svc.settings.answer_shows_context if cfg.show_context is None else cfg.show_context
    full_context = build_context([notes_by_id[i] for i in ids if i in notes_by_id], with_context=shown)
    full_tokens = full_context.tokens
    info["notes"] = len(ids)
    info["full_context_tokens"] = full_tokens

    questions = []
    skipped_no_evidence = 0
    for q in conv.questions(categories=cfg.categories, sessions=cfg.sessions):
        ev = set(q.evidence) & wanted
        if not ev:
            skipped_no_evidence += 1
            continue
        questions.append((q, ev))
    if cfg.max_questions is not None:
        questions = questions[: cfg.max_questions]
    info["questions"] = len(questions)
    info["skipped_no_evidence"] = skipped_no_evidence
    if not questions:
        return {}, info

    qvecs = await svc.embedder.aembed_documents([q.question for q, _ in questions])
    budget = cfg.token_budget or svc.settings.context_token_budget
    full_notes = [notes_by_id[i] for i in ids if i in notes_by_id]
    full_budgeted = build_context(full_notes, budget, with_context=shown)
    full_kept = [full_notes[j].source_id for j in full_budgeted.used]
    accs: dict[str, dict[int, _Acc]] = {m: {k: _Acc() for k in cfg.ks} for m in cfg.modes}
    kmax = max(cfg.ks)
    qmat = np.asarray(qvecs, dtype=np.float32)
    dense_order: np.ndarray | None = None
    if "dense" in cfg.modes and len(ids):
        sims = qmat @ matrix.T  # unit vectors: dot product is cosine
        dense_order = np.argsort(-sims, axis=1, kind="stable")[:, :kmax]

    total = len(questions)
    for qi, ((q, ev), qv) in enumerate(zip(questions, qvecs, strict=True)):
        for mode in cfg.modes:
            for k in cfg.ks:
                acc = accs[mode][k]
                if mode == "full":  # the whole conversation: the same context for every question
                    found = [notes_by_id[i].source_id for i in ids if i in notes_by_id]
                    r, hit = _recall(found, ev)
                    acc.recall.append(r)
                    acc.hit.append(hit)
                    acc.tokens.append(full_tokens)
                    acc.notes.append(len(found))
                    br, bhit = _recall(full_kept, ev)
                    acc.budget_recall.append(br)
                    acc.budget_hit.append(bhit)
                    acc.budget_tokens.append(full_budgeted.tokens)
                    acc.category.append(q.category)
                    continue
                if mode == "dense":
                    assert dense_order is not None
                    found_ids = [ids[j] for j in dense_order[qi, :k]]
                else:
                    hits = await svc.search(q.question, scope, k=k, mode=mode, query_embedding=qv)
                    found_ids = [h.note.id for h in hits]
                    for h in hits:
                        notes_by_id.setdefault(h.note.id, h.note)
                found_notes = [notes_by_id[i] for i in found_ids if i in notes_by_id]
                found = [n.source_id for n in found_notes]
                r, hit = _recall(found, ev)
                acc.recall.append(r)
                acc.hit.append(hit)
                acc.tokens.append(build_context(found_notes, with_context=shown).tokens)
                acc.notes.append(len(found_ids))
                if mode == "dense":
                    ctx = build_context(found_notes, budget, with_context=shown)
                    kept, kept_tokens = [found_notes[j].source_id for j in ctx.used], ctx.tokens
                else:  # the budgeted measures are of the context ask gives the answer model at this k
                    asked = await svc.ask_context(
                        q.question, scope, k=k, mode=mode, token_budget=budget, show_context=shown, query_embedding=qv
                    )
                    kept, kept_tokens = [h.note.source_id for h in asked.hits], asked.tokens
                br, bhit = _recall(kept, ev)
                acc.budget_recall.append(br)
                acc.budget_hit.append(bhit)
                acc.budget_tokens.append(kept_tokens)
                acc.category.append(q.category)
        if progress is not None:
            progress(conv.sample_id, qi + 1, total)
    return accs, info


def _summary(acc: _Acc, idx: Sequence[int] | None = None) -> dict[str, float | int | None]:
    sel = range(len(acc.recall)) if idx is None else idx

    def m(vals: Sequence[float | int]) -> float | None:
        chosen = [vals[i] for i in sel]
        return float(np.mean(chosen)) if chosen else None

    def p(vals: Sequence[int], q: float) -> float | None:
        chosen = [vals[i] for i in sel]
        return float(np.percentile(chosen, q)) if chosen else None

    return {
        "recall": m(acc.recall),
        "hit": m(acc.hit),
        "tokens": m(acc.tokens),
        "tokens_p95": p(acc.tokens, 95),
        "notes": m(acc.notes),
        "budget_recall": m(acc.budget_recall),
        "budget_tokens": m(acc.budget_tokens),
        "budget_hit": m(acc.budget_hit),
        "count": len(list(sel)),
    }


def merge(
    parts: Sequence[dict[str, dict[int, _Acc]]], modes: Sequence[str], ks: Sequence[int]
) -> dict[str, dict[int, _Acc]]:
    out: dict[str, dict[int, _Acc]] = {m: {k: _Acc() for k in ks} for m in modes}
    for part in parts:
        for m, by_k in part.items():
            for k, a in by_k.items():
                for name in (
                    "recall",
                    "hit",
                    "tokens",
                    "notes",
                    "budget_recall",
                    "budget_tokens",
                    "budget_hit",
                    "category",
                ):
                    getattr(out[m][k], name).extend(getattr(a, name))
    return out


def summarise(accs: dict[str, dict[int, _Acc]], ks: Sequence[int]) -> dict[str, Any]:
    """{mode: {"overall": {"recall@k", "hit@k", "tokens@k", ...}, "by_category": {cat: {...}}}}."""
    result: dict[str, Any] = {}
    for mode, by_k in accs.items():
        overall: dict[str, Any] = {}
        by_cat: dict[str, dict[str, Any]] = {}
        for k in ks:
            a = by_k[k]
            for name, val in _summary(a).items():
                if name == "count":
                    overall["count"] = val
                    continue
                overall[f"{name}@{k}"] = val
            for cat in sorted(set(a.category)):
                idx = [i for i, c in enumerate(a.category) if c == cat]
                entry = by_cat.setdefault(str(cat), {"name": CATEGORY_NAMES.get(cat, str(cat))})
                for name, val in _summary(a, idx).items():
                    if name == "count":
                        entry["count"] = val
                        continue
                    entry[f"{name}@{k}"] = val
        result[mode] = {"overall": overall, "by_category": by_cat}
    return result


def target_check(summary: dict[str, Any], default_mode: str, default_k: int, ks: Sequence[int]) -> dict[str, Any]:
    """The issue's target: default search at k=10 reaches dense's recall at k=40, under 1,000 tokens."""
    out: dict[str, Any] = {"default_mode": default_mode, "default_k": default_k}
    mode = summary.get(default_mode, {}).get("overall", {})
    dense = summary.get("dense", {}).get("overall", {})
    out["graphmem_recall@10"] = mode.get(f"recall@{default_k}")
    out["graphmem_tokens@10"] = mode.get(f"tokens@{default_k}")
    out["dense_recall@40"] = dense.get("recall@40") if 40 in ks else None
    out["dense_recall@10"] = dense.get(f"recall@{default_k}")
    if out["graphmem_recall@10"] is not None and out["dense_recall@40"] is not None:
        out["recall_target_met"] = out["graphmem_recall@10"] >= out["dense_recall@40"]
    if out["graphmem_tokens@10"] is not None:
        out["tokens_target_met"] = out["graphmem_tokens@10"] < 1000
    # What `ask` sends by default: the same search within the context budget.
    out["graphmem_budget_recall@10"] = mode.get(f"budget_recall@{default_k}")
    out["graphmem_budget_tokens@10"] = mode.get(f"budget_tokens@{default_k}")
    if out["graphmem_budget_recall@10"] is not None and out["dense_recall@40"] is not None:
        out["context_target_met"] = (
            out["graphmem_budget_recall@10"] >= out["dense_recall@40"] and out["graphmem_budget_tokens@10"] < 1000
        )
    return out


async def run_retrieval_eval(
    svc: AsyncMemoryService,
    conversations: Sequence[Conversation],
    cfg: RetrievalConfig,
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The whole retrieval evaluation; returns the JSON-ready result."""
    started = time.perf_counter()
    parts = []
    infos: dict[str, Any] = {}
    for conv in conversations:
        accs, info = await evaluate_conversation(svc, conv, cfg, progress=progress)
        parts.append(accs)
        infos[conv.sample_id] = info
    merged = merge([p for p in parts if p], cfg.modes, cfg.ks)
    summary = summarise(merged, cfg.ks)
    s = svc.settings
    default_mode, default_k = s.search_mode, s.search_k
    return {
        "kind": "retrieval",
        "config": {
            **{k: v for k, v in asdict(cfg).items() if k != "ks"},
            "ks": list(cfg.ks),
            "tag": cfg.scope_tag(s.embed_text_variant),
            "embed_text_variant": s.embed_text_variant,
            "embedder": s.embedder,
            "links_per_hit": s.links_per_hit,
            "answer_links_per_hit": s.resolved_answer_links_per_hit,
            "answer_fill_links_per_hit": s.answer_fill_links_per_hit,
            "over_fetch_ratio": s.over_fetch_ratio,
            "context_token_budget": cfg.token_budget or s.context_token_budget,
            "default_mode": default_mode,
            "default_k": default_k,
        },
        "conversations": infos,
        "modes": summary,
        "target": target_check(summary, default_mode, default_k, cfg.ks),
        "seconds": time.perf_counter() - started,
    }
