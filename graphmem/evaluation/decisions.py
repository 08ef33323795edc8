"""Decision quality: are the LLM's links and evolutions the ones a reader would sign off?

Gold conversations (``gold/decisions.json``, format below) are added turn by turn through the real
service (enrichment, neighbours, link/evolution decision, guards), each conversation in a fresh
scope; then the links, evolutions, refusals and enrichments are scored against the gold.

Gold format (``graphmem.decisions-gold/1``): ``{"format", "description", "conversations": [...]}``;
a conversation has ``id``, ``people``, ``turns`` (``n`` from 1, ``time`` ISO, ``speaker``, ``text``,
``keep``: words naming what the turn is about; ``must_not``: regular expressions, matched without
case, of statements its note must not make: a wrong owner, a wrong actor, an invented fact) and three lists of turn pairs ``[later, earlier]``:
``related`` (a reader expects a link), ``acceptable`` (a link is fine, not expected) and
``contradicts`` (the two cannot both be true; counted as related too). Every other pair is a wrong
link. See docs/evaluation.md for the metric definitions.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from graphmem.errors import InvalidInputError
from graphmem.evaluation import Progress
from graphmem.models import FOLLOWS_REASON, Link, LinkType, NeighbourChange, Note, Scope, Usage, check_id
from graphmem.service import (
    content_words,
    copies,
    sentence_refusal,
    sentences,
    speaker_of,
    stem,
    supported_share,
    tokens,
)
from graphmem.service import cosine as _cos

Embed = Callable[[Sequence[str]], list[list[float]]]
Pair = tuple[int, int]

GOLD_FORMAT = "graphmem.decisions-gold/1"


# --- gold --------------------------------------------------------------------------------------------


class GoldTurn(BaseModel):
    n: int = Field(ge=1)
    time: datetime
    speaker: str = Field(min_length=1, max_length=100)
    text: str = Field(min_length=1, max_length=4000)
    keep: list[str] = Field(default_factory=list)
    must_not: list[str] = Field(default_factory=list)

    @field_validator("must_not")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as e:
                raise ValueError(f"must_not {pattern!r} is not a regular expression: {e}") from None
        return value

    def statements_made(self, text: str) -> list[str]:
        """The ``must_not`` patterns that a text of this turn's note matches."""
        return [p for p in self.must_not if re.search(p, text, re.IGNORECASE)]

    @property
    def content(self) -> str:
        """The note text of the turn, as a conversation is stored: 'Speaker: text'."""
        return f"{self.speaker}: {self.text}"


class GoldConversation(BaseModel):
    id: str
    people: list[str] = Field(default_factory=list)
    note: str | None = None
    turns: list[GoldTurn] = Field(min_length=2)
    related: set[Pair] = Field(default_factory=set)
    acceptable: set[Pair] = Field(default_factory=set)
    contradicts: set[Pair] = Field(default_factory=set)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        try:
            return check_id(value, "conversation id")  # it becomes a scope part
        except InvalidInputError as e:
            raise ValueError(str(e)) from None

    @field_validator("related", "acceptable", "contradicts", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> set[Pair]:
        if not isinstance(value, list):
            raise ValueError("must be a list of [later, earlier] turn pairs")
        out: set[Pair] = set()
        for item in value:
            if not (isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(x, int) for x in item)):
                raise ValueError(f"{item!r} is not a pair of turn numbers")
            a, b = item
            if a == b:
                raise ValueError(f"{item!r} pairs a turn with itself")
            out.add((max(a, b), min(a, b)))
        return out

    @model_validator(mode="after")
    def _consistent(self) -> GoldConversation:
        numbers = [t.n for t in self.turns]
        if numbers != list(range(1, len(numbers) + 1)):
            raise ValueError("turns must be numbered 1, 2, 3... in order")
        for name in ("related", "acceptable", "contradicts"):
            bad = [p for p in getattr(self, name) if p[0] > len(numbers)]
            if bad:
                raise ValueError(f"{name}: pairs {sorted(bad)} name turns that do not exist")
        self.related |= self.contradicts
        both = self.related & self.acceptable
        if both:
            raise ValueError(f"pairs {sorted(both)} are both related and acceptable")
        return self

    @property
    def linkable(self) -> set[Pair]:
        return self.related | self.acceptable


class GoldFile(BaseModel):
    format: Literal["graphmem.decisions-gold/1"]
    description: str = ""
    conversations: list[GoldConversation] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> GoldFile:
        ids = [c.id for c in self.conversations]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"conversation ids used twice: {sorted(dup)}")
        return self


def default_gold_path() -> Path:
    return Path(str(resources.files("graphmem.evaluation") / "gold" / "decisions.json"))


def load_gold(path: str | Path | None = None, ids: Sequence[str] | None = None) -> list[GoldConversation]:
    """Read and check a gold file (the shipped one by default); ``ids`` selects conversations."""
    where = Path(path) if path is not None else default_gold_path()
    try:
        raw = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInputError(f"no gold file at {where}") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where} is not JSON: {exc}") from None
    try:
        gold = GoldFile.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise InvalidInputError(
            f"{where}: {loc}: {err['msg']} (format {GOLD_FORMAT}, see docs/evaluation.md)"
        ) from None
    convs = gold.conversations
    if ids:
        known = {c.id: c for c in convs}
        missing = [i for i in ids if i not in known]
        if missing:
            raise InvalidInputError(f"unknown conversation(s) {', '.join(missing)}; known: {', '.join(known)}")
        convs = [known[i] for i in ids]
    return convs


# --- one run -----------------------------------------------------------------------------------------


@dataclass
class TurnRun:
    """What one add did: the note as added, the neighbours shown, links, evolutions, refusals, cost."""

    n: int
    note: Note
    candidates: list[str]
    links: list[Link]
    evolved: list[NeighbourChange]
    rejected: list[str]
    usage: Usage


@dataclass
class ConversationRun:
    conversation: str
    turns: list[TurnRun] = field(default_factory=list)
    final: dict[str, Note] = field(default_factory=dict)  # note id -> the note after all turns

    def turn_of(self) -> dict[str, int]:
        return {t.note.id: t.n for t in self.turns}


def llm_links(turn: TurnRun) -> list[Link]:
    """The links the LLM decided: all but the caller's conversation-turn link (FOLLOWS to the previous turn)."""
    return [lk for lk in turn.links if not (lk.type == LinkType.FOLLOWS and lk.reason == FOLLOWS_REASON)]


# --- scoring (pure) ----------------------------------------------------------------------------------


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def keeps_subject(text: str, keep: Sequence[str]) -> bool:
    """Does a context still name what its note is about (one of the gold ``keep`` words, by stem)?"""
    if not keep:
        return True
    stems = {stem(t) for t in tokens(text)}
    low = text.lower()
    for k in keep:
        words = tokens(k)
        if len(words) > 1 and k.lower() in low:
            return True
        if len(words) == 1 and (stem(words[0]) in stems or any(s.startswith(words[0].lower()) for s in stems)):
            return True
    return False


# P(yes) thresholds the sweep reports: a run at a low GRAPHMEM_LINK_THRESHOLD scores every higher one too,
# since a pairwise link's strength is its P(yes) and no later decision depends on which links were kept
SWEEP = (0.1, 0.15, 0.2, 0.22, 0.24, 0.25, 0.26, 0.28, 0.3, 0.35, 0.4, 0.5)


def _by_threshold(links: Sequence[dict[str, Any]], related: set[Pair]) -> dict[str, dict[str, int]]:
    """Per threshold: links kept (strength >= it), wrong among them, and gold related pairs they join."""
    out: dict[str, dict[str, int]] = {}
    for t in SWEEP:
        kept = [lk for lk in links if lk["strength"] >= t]
        out[f"{t:.2f}"] = {
            "links": len(kept),
            "wrong": sum(1 for lk in kept if lk["verdict"] == "wrong"),
            "related_found": len(related & {(lk["from"], lk["to"]) for lk in kept}),
        }
    return out


def score_conversation(gold: GoldConversation, run: ConversationRun, embed: Embed) -> dict[str, Any]:
    """Every metric of one conversation run; ``embed`` embeds texts (for drift)."""
    turn_of = run.turn_of()
    by_n = {t.n: t for t in run.turns}
    text_of = {t.n: gold.turns[t.n - 1].content for t in run.turns}

    # Links: each LLM link as a pair of turns; several links on one pair count once for recall.
    links: list[dict[str, Any]] = []
    for t in run.turns:
        for lk in llm_links(t):
            other = turn_of.get(lk.target_id)
            if other is None:
                continue
            pair = (max(t.n, other), min(t.n, other))
            verdict = (
                "contradicts"
                if pair in gold.contradicts
                else "related"
                if pair in gold.related
                else ("acceptable" if pair in gold.acceptable else "wrong")
            )
            sources = [text_of[t.n], text_of[other], t.note.context, by_n[other].note.context]
            links.append(
                {
                    "from": t.n,
                    "to": other,
                    "type": lk.type.value,
                    "strength": lk.strength,
                    "reason": lk.reason,
                    "verdict": verdict,
                    "copied_reason": copies(lk.reason, [s for s in sources if s]),
                    "reason_names_both": bool(content_words(lk.reason) & content_words(text_of[t.n]))
                    and bool(content_words(lk.reason) & content_words(text_of[other])),
                }
            )
    good = [lk for lk in links if lk["verdict"] != "wrong"]
    joined = {(lk["from"], lk["to"]) for lk in links}
    found = gold.related & joined
    shown = {(t.n, turn_of[c]) for t in run.turns for c in t.candidates if c in turn_of}
    contradict_links = [lk for lk in links if lk["type"] == LinkType.CONTRADICTS.value]

    # Evolutions: each changed neighbour; drift when the new context is closer to another note's text.
    evolutions: list[dict[str, Any]] = []
    for t in run.turns:
        for ch in t.evolved:
            target = turn_of.get(ch.note_id)
            if target is None:
                continue
            evolutions.append(
                {
                    "by": t.n,
                    "note": target,
                    "context_before": ch.before.get("context", ""),
                    "context_after": ch.after.get("context", ""),
                    "tags_removed": sorted(set(ch.before.get("tags", [])) - set(ch.after.get("tags", []))),
                    "keywords_removed": sorted(set(ch.before.get("keywords", [])) - set(ch.after.get("keywords", []))),
                }
            )
    changed = [e for e in evolutions if e["context_after"] and e["context_after"] != e["context_before"]]
    if changed:
        numbers = sorted(text_of)
        vectors = embed([text_of[n] for n in numbers] + [e["context_after"] for e in changed])
        own = dict(zip(numbers, vectors[: len(numbers)], strict=True))
        for e, vec in zip(changed, vectors[len(numbers) :], strict=True):
            sims = {n: _cos(vec, v) for n, v in own.items()}
            closest = max(sims, key=lambda n: sims[n])
            e["similarity_own"] = round(sims[e["note"]], 4)
            e["closest_note"] = closest
            e["drift"] = closest != e["note"]
            e["keeps_subject"] = keeps_subject(e["context_after"], gold.turns[e["note"] - 1].keep)

    # Enrichment as first written (before any evolution): is it supported by the note's words?
    faithful_note, faithful_shown, kw_faithful, subject = [], [], [], []
    for t in run.turns:
        if not t.note.context:
            continue
        shown_texts = [text_of[turn_of[c]] for c in t.candidates if c in turn_of]
        faithful_note.append(supported_share(t.note.context, [text_of[t.n]]))
        faithful_shown.append(supported_share(t.note.context, [text_of[t.n], *shown_texts]))
        if t.note.keywords:
            kw_faithful.append(supported_share(" ".join(t.note.keywords), [text_of[t.n]]))
        subject.append(keeps_subject(t.note.context, gold.turns[t.n - 1].keep))

    # Faithfulness that sees roles: what the note (context as written and as evolved) says
    # against the gold's must_not statements, and context sentences the grounding checks would refuse.
    # contexts only: a sentence pattern run over a list of keywords matches words from unrelated items
    said: dict[int, list[str]] = {t.n: [t.note.context] for t in run.turns}
    for e in changed:
        said.setdefault(e["note"], []).append(e["context_after"])
    role_errors = [
        {"turn": n, "statement": p, "text": text}
        for n, texts in sorted(said.items())
        for text in texts
        for p in gold.turns[n - 1].statements_made(text)
    ]
    unsupported = [
        {"turn": t.n, "sentence": s, "why": why}
        for t in run.turns
        for s in sentences(t.note.context)
        if (why := sentence_refusal(s, text_of[t.n], speaker_of(text_of[t.n]))) is not None
    ]
    must_not_turns = sum(1 for t in run.turns if gold.turns[t.n - 1].must_not)

    n_turns = len(run.turns)
    usage = [t.usage for t in run.turns]
    return {
        "conversation": gold.id,
        "turns": n_turns,
        "links": {
            "llm_links": len(links),
            "precision": _ratio(len(good), len(links)),
            "recall": _ratio(len(found), len(gold.related)),
            "related_pairs": len(gold.related),
            "related_found": len(found),
            "candidate_recall": _ratio(len(gold.related & shown), len(gold.related)),
            "wrong": len(links) - len(good),
            "false_contradicts": sum(1 for lk in contradict_links if lk["verdict"] != "contradicts"),
            "true_contradicts": len({(lk["from"], lk["to"]) for lk in contradict_links} & gold.contradicts),
            "gold_contradicts": len(gold.contradicts),
            "types": dict(Counter(lk["type"] for lk in links)),
            "copied_reasons": sum(1 for lk in links if lk["copied_reason"]),
            "copied_reason_share": _ratio(sum(1 for lk in links if lk["copied_reason"]), len(links)),
            "reasons_naming_both_share": _ratio(sum(1 for lk in links if lk["reason_names_both"]), len(links)),
            "by_threshold": _by_threshold(links, gold.related),
        },
        "evolution": {
            "evolutions": len(evolutions),
            "context_changes": len(changed),
            "drift": sum(1 for e in changed if e.get("drift")),
            "subject_kept_share": _ratio(sum(1 for e in changed if e.get("keeps_subject")), len(changed)),
            "tag_or_keyword_removals": sum(1 for e in evolutions if e["tags_removed"] or e["keywords_removed"]),
        },
        "enrichment": {
            "context_supported_by_note": statistics.fmean(faithful_note) if faithful_note else None,
            "context_supported_by_note_or_neighbours": statistics.fmean(faithful_shown) if faithful_shown else None,
            "keywords_supported_by_note": statistics.fmean(kw_faithful) if kw_faithful else None,
            "context_names_subject_share": _ratio(sum(subject), len(subject)),
            "role_errors": len(role_errors),
            "turns_with_must_not": must_not_turns,
            "unsupported_sentences": len(unsupported),
            "contexts": sum(1 for t in run.turns if t.note.context),
        },
        "role_error_list": role_errors,
        "unsupported_list": unsupported,
        "cost": {
            "llm_calls_per_note": _ratio(sum(u.llm_calls for u in usage), n_turns),
            "tokens_per_note": _ratio(sum(u.total_tokens for u in usage), n_turns),
            "input_tokens_per_note": _ratio(sum(u.input_tokens for u in usage), n_turns),
            "output_tokens_per_note": _ratio(sum(u.output_tokens for u in usage), n_turns),
            "seconds_per_note_median": _median([u.total_seconds for u in usage]),
            "repairs": sum(u.repairs for u in usage),
        },
        "rejected": [f"turn {t.n}: {r}" for t in run.turns for r in t.rejected],
        "link_list": links,
        "evolution_list": evolutions,
    }


def overall(scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Pooled over conversations (micro averages), with the per-conversation worst cases the targets name."""
    links = sum(s["links"]["llm_links"] for s in scores)
    wrong = sum(s["links"]["wrong"] for s in scores)
    related = sum(s["links"]["related_pairs"] for s in scores)
    found = sum(s["links"]["related_found"] for s in scores)
    turns = sum(s["turns"] for s in scores)
    changes = sum(s["evolution"]["context_changes"] for s in scores)
    types: Counter[str] = Counter()
    for s in scores:
        types.update(s["links"]["types"])

    def pooled(section: str, key: str) -> float | None:
        vals = [(s[section][key], s["turns"]) for s in scores if s[section][key] is not None]
        total = sum(w for _, w in vals)
        return sum(v * w for v, w in vals) / total if total else None

    sweep = {}
    for t in scores[0]["links"]["by_threshold"] if scores else ():
        kept = sum(s["links"]["by_threshold"][t]["links"] for s in scores)
        bad = sum(s["links"]["by_threshold"][t]["wrong"] for s in scores)
        hit = sum(s["links"]["by_threshold"][t]["related_found"] for s in scores)
        sweep[t] = {"links": kept, "link_precision": _ratio(kept - bad, kept), "related_recall": _ratio(hit, related)}
    return {
        "conversations": len(scores),
        "turns": turns,
        "llm_links": links,
        "link_precision": _ratio(links - wrong, links),
        "related_recall": _ratio(found, related),
        "candidate_recall": pooled("links", "candidate_recall"),
        "false_contradicts_total": sum(s["links"]["false_contradicts"] for s in scores),
        "false_contradicts_max_per_conversation": max((s["links"]["false_contradicts"] for s in scores), default=0),
        "true_contradicts": sum(s["links"]["true_contradicts"] for s in scores),
        "gold_contradicts": sum(s["links"]["gold_contradicts"] for s in scores),
        "types": dict(types),
        "copied_reason_share": _ratio(sum(s["links"]["copied_reasons"] for s in scores), links),
        "evolutions": sum(s["evolution"]["evolutions"] for s in scores),
        "context_changes": changes,
        "drift": sum(s["evolution"]["drift"] for s in scores),
        "enrichment_context_supported_by_note": pooled("enrichment", "context_supported_by_note"),
        "enrichment_context_supported_by_note_or_neighbours": pooled(
            "enrichment", "context_supported_by_note_or_neighbours"
        ),
        "enrichment_keywords_supported_by_note": pooled("enrichment", "keywords_supported_by_note"),
        "role_errors": sum(s["enrichment"]["role_errors"] for s in scores),
        "turns_with_must_not": sum(s["enrichment"]["turns_with_must_not"] for s in scores),
        "unsupported_sentences": sum(s["enrichment"]["unsupported_sentences"] for s in scores),
        "contexts": sum(s["enrichment"]["contexts"] for s in scores),
        "llm_calls_per_note": pooled("cost", "llm_calls_per_note"),
        "tokens_per_note": pooled("cost", "tokens_per_note"),
        "seconds_per_note_median": _median(
            [s["cost"]["seconds_per_note_median"] for s in scores if s["cost"]["seconds_per_note_median"] is not None]
        ),
        "rejected": sum(len(s["rejected"]) for s in scores),
        "by_threshold": sweep,
    }


# --- running -----------------------------------------------------------------------------------------


@dataclass
class DecisionsConfig:
    gold: Path | None = None  # None: the shipped gold file
    conversations: tuple[str, ...] = ()  # ids; empty: all
    follows: bool = True  # each turn FOLLOWS the previous one, as conversations are stored
    keep_notes: bool = False  # leave the run's notes in Neo4j (to explore them in Browser)
    run_id: str | None = None  # the scope's run id; default: the time of the run


async def run_conversation(
    svc: Any, gold: GoldConversation, scope: Scope, *, follows: bool = True, progress: Progress | None = None
) -> ConversationRun:
    """Add the gold turns in order through the service and record what each add decided."""
    run = ConversationRun(conversation=gold.id)
    previous: str | None = None
    for turn in gold.turns:
        res = await svc.add(turn.content, scope, event_time=turn.time, follows=previous if follows else None)
        run.turns.append(
            TurnRun(
                n=turn.n,
                note=res.note,
                candidates=list(getattr(res, "candidates", [])),
                links=list(res.links),
                evolved=list(res.evolved),
                rejected=list(res.rejected),
                usage=res.usage,
            )
        )
        previous = res.note.id
        if progress is not None:
            progress(f"decisions {gold.id}", turn.n, len(gold.turns))
    for t in run.turns:
        run.final[t.note.id] = await svc.get(t.note.id, scope)
    return run


def settings_summary(settings: Any) -> dict[str, Any]:
    provider = settings.resolved_llm_provider
    return {
        "llm_provider": provider,
        "llm_model": settings.local_model if provider == "local" else settings.llm_model,
        "llm_temperature": settings.llm_temperature,
        "llm_seed": settings.llm_seed,
        "enable_enrichment": settings.enable_enrichment,
        "enable_links": settings.enable_links,
        "enable_evolution": settings.evolution_enabled,
        "neighbour_k": settings.neighbour_k,
        "link_decision": settings.resolved_link_decision,
        "link_candidates": settings.link_candidates,
        "link_threshold": settings.link_threshold,
        "embed_text_variant": settings.embed_text_variant,
    }


async def run_decisions_eval(svc: Any, cfg: DecisionsConfig, *, progress: Progress | None = None) -> dict[str, Any]:
    """Run every selected gold conversation in a fresh scope and score it; returns the result dict."""
    convs = load_gold(cfg.gold, cfg.conversations or None)
    run_id = cfg.run_id or datetime.now().strftime("run-%Y%m%d-%H%M%S")
    started = time.perf_counter()

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in svc.embedder.embed_documents(list(texts))]

    scores, runs = [], []
    for conv in convs:
        scope = Scope(user_id="eval-decisions", agent_id=conv.id, run_id=run_id)
        run = await run_conversation(svc, conv, scope, follows=cfg.follows, progress=progress)
        scores.append(score_conversation(conv, run, embed))
        runs.append(run)
        if not cfg.keep_notes:
            for t in run.turns:
                await svc.delete(t.note.id, scope)
    return {
        "kind": "decisions",
        "config": {
            **settings_summary(svc.settings),
            "gold": str(cfg.gold or default_gold_path()),
            "conversations": [c.id for c in convs],
            "follows": cfg.follows,
            "run_id": run_id,
            "kept_notes": cfg.keep_notes,
            "seconds": round(time.perf_counter() - started, 1),
        },
        "overall": overall(scores),
        "conversations": scores,
    }


def _sweep_lines(c: dict[str, Any], o: dict[str, Any]) -> list[str]:
    """The pairwise decision at each P(yes) threshold from this run's threshold up (a link's strength is
    its P(yes)), so one run at a low threshold calibrates the setting."""
    if c.get("link_decision") != "pairwise" or not o.get("by_threshold"):
        return []
    rows = [(t, r) for t, r in o["by_threshold"].items() if float(t) >= c["link_threshold"] - 1e-9]
    lines = ["| P(yes) threshold | links | precision | recall |", "|---|---|---|---|"]
    for t, r in rows:
        p, rc = r["link_precision"], r["related_recall"]
        lines.append(
            f"| {t} | {r['links']} | {'-' if p is None else f'{p:.2f}'} | {'-' if rc is None else f'{rc:.2f}'} |"
        )
    return [*lines, ""] if rows else []


def decisions_markdown(result: dict[str, Any]) -> str:
    c, o = result["config"], result["overall"]

    def f(v: Any, digits: int = 2) -> str:
        if v is None:
            return "-"
        return f"{v:.{digits}f}" if isinstance(v, float) else str(v)

    lines = [
        "# Decision quality (gold conversations)",
        "",
        f"Model `{c['llm_model']}` ({c['llm_provider']}), temperature {c['llm_temperature']}, links "
        f"{'on' if c['enable_links'] else 'off'}, evolution {'on' if c['enable_evolution'] else 'off'}, "
        f"{c['neighbour_k']} neighbours shown, link decision {c.get('link_decision', '?')}"
        + (
            f" ({c['link_candidates']} candidates, P(yes) >= {c['link_threshold']})"
            if c.get("link_decision") == "pairwise"
            else ""
        )
        + f"; {o['conversations']} conversations, {o['turns']} turns; "
        f"run `{c['run_id']}` took {c['seconds']} s.",
        "",
        "| metric | value | target |",
        "|---|---|---|",
        f"| link precision (related or acceptable / all LLM links) | {f(o['link_precision'])} ({o['llm_links']} links) | >= 0.8 |",
        f"| recall of related pairs | {f(o['related_recall'])} | >= 0.5 |",
        f"| related pairs among the neighbours shown (ceiling of recall) | {f(o['candidate_recall'])} | |",
        f"| false CONTRADICTS, most in one conversation (total) | {o['false_contradicts_max_per_conversation']} ({o['false_contradicts_total']}) | <= 1 |",
        f"| true CONTRADICTS found / gold | {o['true_contradicts']} / {o['gold_contradicts']} | |",
        f"| link reasons copying a note's text or context | {f(o['copied_reason_share'])} | |",
        f"| evolutions (context changes) | {o['evolutions']} ({o['context_changes']}) | |",
        f"| evolution drift | {o['drift']} | 0 |",
        f"| enrichment: context words found in the note | {f(o['enrichment_context_supported_by_note'])} | |",
        f"| enrichment: context words found in the note or its neighbours | {f(o['enrichment_context_supported_by_note_or_neighbours'])} | |",
        f"| enrichment: keyword words found in the note | {f(o['enrichment_keywords_supported_by_note'])} | |",
        f"| enrichment: statements the gold forbids (wrong owner or actor, invented; {o.get('turns_with_must_not', 0)} turns checked) | {o.get('role_errors', '-')} | 0 |",
        f"| enrichment: context sentences the note does not support (grounding checks; {o.get('contexts', 0)} contexts) | {o.get('unsupported_sentences', '-')} | 0 |",
        f"| LLM calls per note | {f(o['llm_calls_per_note'])} | |",
        f"| tokens per note | {f(o['tokens_per_note'], 0)} | |",
        f"| seconds per note (median) | {f(o['seconds_per_note_median'], 1)} | |",
        f"| proposals refused by the service | {o['rejected']} | |",
        "",
        f"Link types: {', '.join(f'{k} {v}' for k, v in sorted(o['types'].items())) or 'none'}.",
        "",
        *_sweep_lines(c, o),
        "| conversation | turns | links | precision | recall | shown | false / true CONTRADICTS | drift | tokens/note | s/note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in result["conversations"]:
        lk, ev, co = s["links"], s["evolution"], s["cost"]
        lines.append(
            f"| {s['conversation']} | {s['turns']} | {lk['llm_links']} | {f(lk['precision'])} | {f(lk['recall'])} | "
            f"{f(lk['candidate_recall'])} | {lk['false_contradicts']} / {lk['true_contradicts']} of {lk['gold_contradicts']} | "
            f"{ev['drift']} | {f(co['tokens_per_note'], 0)} | {f(co['seconds_per_note_median'], 1)} |"
        )
    for s in result["conversations"]:
        lines += ["", f"## {s['conversation']}", "", "| link | type | verdict | reason |", "|---|---|---|---|"]
        for lk in s["link_list"]:
            flag = " (copied)" if lk["copied_reason"] else ""
            lines.append(f"| {lk['from']} -> {lk['to']} | {lk['type']} | {lk['verdict']} | {lk['reason']}{flag} |")
        for e in s["evolution_list"]:
            drift = " **drift**" if e.get("drift") else ""
            lines.append(
                f"\nTurn {e['by']} evolved note {e['note']}{drift}: {e['context_before']!r} -> {e['context_after']!r}"
            )
        for r in s.get("role_error_list", []):
            lines.append(f"\nTurn {r['turn']} says what the gold forbids ({r['statement']!r}): {r['text']!r}")
        for u in s.get("unsupported_list", []):
            lines.append(f"\nTurn {u['turn']} context sentence {u['sentence']!r} {u['why']}")
        if s["rejected"]:
            lines += ["", "Refused: " + "; ".join(s["rejected"])]
    return "\n".join(lines) + "\n"
