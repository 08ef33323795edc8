"""The systems a QA run answers with (``memory``, ``memory@B``, the baselines and the ablation arms), the
run's configuration, and the keys their answers are stored under: an answer is reused only under the
configuration it was given in (see ``qa``'s docstring for what each system is)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from graphmem.config import Settings
from graphmem.errors import InvalidInputError
from graphmem.evaluation.links import ARMS as LINKS_ARMS
from graphmem.evaluation.links import arm_tag
from graphmem.evaluation.locomo import CATEGORY_NAMES
from graphmem.models import LIMITS, TEXT_FIELDS
from graphmem.service import AsyncMemoryService, answer_prompt_digest

Cat5Prompt = Literal["options", "open"]

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
    # reuse a stored memory answer only while ask still gives it the same context (see context_moved)
    recheck_contexts: bool = False


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


# The answer prompt (system text and template) every stored answer so far was given under; see below.
ANSWER_PROMPT_V1 = "dfe3840443"


def answer_rules_digest() -> str:
    """The per-category answer rules' text (``prompts/answer_*.txt``) and the answer prompt in every
    answer's key: an answer given under other rules or another prompt is asked again, never mixed into
    a resumed run's scores. The prompt joins the digest only once it differs from the one every answer
    before it was given under, so that those answers keep their keys."""
    folder = resources.files("graphmem.evaluation") / "prompts"
    rules = sorted((f.name, f.read_text(encoding="utf-8")) for f in folder.iterdir() if f.name.startswith("answer_"))
    prompt = answer_prompt_digest()
    return _hash(rules if prompt == ANSWER_PROMPT_V1 else [*rules, prompt])[:8]


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
            # Appended only when on (the default since 7 December, night), likewise. "answer-fill-N" keyed the
            # first fill, whose linked notes the search could rank among the hits (displacing some).
            *([f"answer-fill-after-{n}"] if (n := settings.answer_fill_links_per_hit) else []),
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


def config_key(svc: AsyncMemoryService, tag: str, cfg: QAConfig) -> str:
    """The answers key of the ``memory`` system for this configuration."""
    s = svc.settings
    return _memory_key(
        s, tag, cfg.mode or s.search_mode, cfg.k or s.answer_k, cfg.token_budget or s.context_token_budget, cfg
    )
