"""``graphmem eval updates``: memory that changes over time (issue 28) against gold conversations.

Each gold conversation (``gold/updates.json``, written for graphmem) is added turn by turn through the
service in a fresh scope, as a user would (``add`` with the turn's time, FOLLOWS the previous turn),
then its questions are asked (``ask``, the defaults). Scored:

- supersession: the (newer turn, older turn) pairs the adds recorded against the gold ``supersedes``
  (precision: pairs in ``acceptable`` count neither way; a pair recorded the wrong way round is wrong);
- conflicts: the pairs recorded as clashing (unordered) against the gold ``conflicts``;
- knock-on: the turns reported out of date against the gold ``knock_on`` turns;
- answers: right when the answer contains one of the question's ``expect`` strings (and, for a
  ``clash``, every one of its ``expect_all``), case-insensitive; accuracy per kind (now, before,
  when, clash);
- cost per note: LLM calls, tokens and seconds of the adds.

``compare=True`` runs every conversation a second time with supersession off (the same service
settings otherwise), so the answers' accuracy can be read against the defaults before issue 28.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from graphmem.evaluation import Progress
from graphmem.models import Note, Scope, Usage

Pair = tuple[int, int]
Kind = Literal["now", "before", "when", "clash"]
KINDS: tuple[Kind, ...] = ("now", "before", "when", "clash")


class UpdateTurn(BaseModel):
    n: int
    time: str
    speaker: str
    text: str

    @property
    def content(self) -> str:
        return f"{self.speaker}: {self.text}"


class UpdateQuestion(BaseModel):
    q: str
    kind: Kind
    expect: list[str] = Field(default_factory=list)
    expect_all: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _something_expected(self) -> UpdateQuestion:
        if not self.expect and not self.expect_all:
            raise ValueError(f"question {self.q!r} expects nothing")
        return self

    def right(self, answer: str) -> bool:
        text = answer.lower()
        any_ok = not self.expect or any(e.lower() in text for e in self.expect)
        return any_ok and all(e.lower() in text for e in self.expect_all)


class UpdateConversation(BaseModel):
    id: str
    turns: list[UpdateTurn]
    supersedes: list[Pair] = Field(default_factory=list)
    acceptable: list[Pair] = Field(default_factory=list)
    conflicts: list[Pair] = Field(default_factory=list)
    knock_on: list[Pair] = Field(default_factory=list)
    questions: list[UpdateQuestion] = Field(default_factory=list)

    @model_validator(mode="after")
    def _turns_exist(self) -> UpdateConversation:
        ns = {t.n for t in self.turns}
        if len(ns) != len(self.turns):
            raise ValueError(f"{self.id}: turn numbers repeat")
        for a, b in [*self.supersedes, *self.acceptable, *self.conflicts, *self.knock_on]:
            if a not in ns or b not in ns or a == b:
                raise ValueError(f"{self.id}: pair ({a}, {b}) names a missing turn or one turn twice")
        return self


class UpdatesGold(BaseModel):
    format: Literal["graphmem.updates-gold/1"]
    about: str = ""
    conversations: list[UpdateConversation]


def default_gold_path() -> Path:
    return Path(__file__).with_name("gold") / "updates.json"


def load_gold(path: str | Path | None = None, ids: Sequence[str] | None = None) -> list[UpdateConversation]:
    gold = UpdatesGold.model_validate(json.loads(Path(path or default_gold_path()).read_text(encoding="utf-8")))
    convs = gold.conversations
    if ids:
        known = {c.id for c in convs}
        missing = [i for i in ids if i not in known]
        if missing:
            raise ValueError(f"unknown conversation ids: {', '.join(missing)}")
        convs = [c for c in convs if c.id in set(ids)]
    return convs


@dataclass
class UpdatesConfig:
    gold: Path | None = None
    conversations: tuple[str, ...] = ()
    compare: bool = False  # also run with supersession off
    keep_notes: bool = False
    run_id: str | None = None


def _ratio(num: float, den: float) -> float | None:
    return round(num / den, 3) if den else None


def score_pairs(found: set[Pair], gold: set[Pair], acceptable: set[Pair]) -> dict[str, Any]:
    tp = len(found & gold)
    fp = sorted(found - gold - acceptable)
    return {
        "found": len(found),
        "gold": len(gold),
        "right": tp,
        "wrong": [list(p) for p in fp],
        "missed": [list(p) for p in sorted(gold - found)],
        "precision": _ratio(tp, tp + len(fp)),
        "recall": _ratio(tp, len(gold)),
    }


def _unordered(pairs: Sequence[Pair] | set[Pair]) -> set[Pair]:
    return {(min(a, b), max(a, b)) for a, b in pairs}


async def run_conversation(
    svc: Any, gold: UpdateConversation, scope: Scope, *, keep_notes: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Add the turns in order, ask the questions; the raw outcomes, by turn number."""
    from graphmem.service import refused_as_both_hold

    turn_of: dict[str, int] = {}
    superseded: set[Pair] = set()
    conflicts: set[Pair] = set()
    knock_on: set[Pair] = set()
    refused: set[Pair] = set()  # pairs the second question ("can both be true at once?") kept out
    costs: list[dict[str, float]] = []
    previous: str | None = None
    steps = len(gold.turns) + len(gold.questions)
    for i, turn in enumerate(gold.turns, 1):
        res = await svc.add(turn.content, scope, event_time=turn.time, follows=previous)
        turn_of[res.note.id] = turn.n
        previous = res.note.id
        for s in res.superseded:
            superseded.add((turn_of[s.newer_id], turn_of[s.older_id]))
        for c in res.conflicts:
            conflicts.add((turn_of[c.note_id], turn_of[c.other_id]))
        for k in res.knock_on:
            if k.outdated:
                knock_on.add((turn_of[k.note_id], turn_of[k.superseded_id]))
        for line in res.rejected:
            if (other := refused_as_both_hold(line)) in turn_of:
                refused.add((turn.n, turn_of[other]))
        u = res.usage
        costs.append({"calls": u.llm_calls, "tokens": u.total_tokens, "seconds": u.total_seconds})
        if progress is not None:
            progress(f"updates {gold.id}", i, steps)
    answers = []
    for j, q in enumerate(gold.questions, 1):
        asked = await svc.ask(q.q, scope)
        answers.append({"q": q.q, "kind": q.kind, "answer": asked.answer, "right": q.right(asked.answer)})
        if progress is not None:
            progress(f"updates {gold.id}", len(gold.turns) + j, steps)
    if not keep_notes:
        for note_id in turn_of:
            await svc.delete(note_id, scope)
    return {
        "superseded": superseded,
        "conflicts": conflicts,
        "knock_on": knock_on,
        "refused": refused,
        "answers": answers,
        "costs": costs,
    }


def _refused(gold: UpdateConversation, refused: set[Pair]) -> dict[str, Any]:
    """Pairs the second question kept out: a gold change among them cost recall, the others were caught."""
    changes = set(gold.supersedes) | set(gold.acceptable) | _unordered(gold.conflicts)
    lost = sorted(p for p in refused if p in changes or (min(p), max(p)) in changes)
    return {"gold": [list(p) for p in lost], "other": len(refused) - len(lost)}


def score_conversation(gold: UpdateConversation, run: dict[str, Any]) -> dict[str, Any]:
    found_knock = {n for n, _ in run["knock_on"]}
    gold_knock = {n for n, _ in gold.knock_on}
    return {
        "id": gold.id,
        "supersession": score_pairs(run["superseded"], set(gold.supersedes), set(gold.acceptable)),
        "conflicts": score_pairs(_unordered(run["conflicts"]), _unordered(gold.conflicts), set()),
        "knock_on": {
            "found": sorted(found_knock),
            "gold": sorted(gold_knock),
            "right": len(found_knock & gold_knock),
            "recall": _ratio(len(found_knock & gold_knock), len(gold_knock)),
        },
        "refused": _refused(gold, run["refused"]),
        "answers": run["answers"],
        "costs": run["costs"],
    }


def overall(scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def pooled(section: str) -> dict[str, Any]:
        right = sum(s[section]["right"] for s in scores)
        wrong = sum(len(s[section]["wrong"]) for s in scores)
        gold = sum(s[section]["gold"] for s in scores)
        return {
            "right": right,
            "wrong": wrong,
            "gold": gold,
            "precision": _ratio(right, right + wrong),
            "recall": _ratio(right, gold),
        }

    answers = [a for s in scores for a in s["answers"]]
    by_kind = {}
    for kind in KINDS:
        of_kind = [a for a in answers if a["kind"] == kind]
        if of_kind:
            by_kind[kind] = {
                "right": sum(a["right"] for a in of_kind),
                "asked": len(of_kind),
                "accuracy": _ratio(sum(a["right"] for a in of_kind), len(of_kind)),
            }
    costs = [c for s in scores for c in s["costs"]]
    knock_right = sum(s["knock_on"]["right"] for s in scores)
    knock_gold = sum(len(s["knock_on"]["gold"]) for s in scores)
    knock_found = sum(len(s["knock_on"]["found"]) for s in scores)

    def mean(key: str) -> float | None:
        return round(statistics.fmean(c[key] for c in costs), 2) if costs else None

    return {
        "supersession": pooled("supersession"),
        "conflicts": pooled("conflicts"),
        "knock_on": {
            "right": knock_right,
            "found": knock_found,
            "gold": knock_gold,
            "precision": _ratio(knock_right, knock_found),
            "recall": _ratio(knock_right, knock_gold),
        },
        "refused": {
            "gold": sum(len(s["refused"]["gold"]) for s in scores),
            "other": sum(s["refused"]["other"] for s in scores),
        },
        "answers": by_kind,
        "answers_all": _ratio(sum(a["right"] for a in answers), len(answers)),
        "per_note": {"llm_calls": mean("calls"), "tokens": mean("tokens"), "seconds": mean("seconds")},
    }


async def _arm(
    svc: Any, convs: Sequence[UpdateConversation], cfg: UpdatesConfig, run_id: str, arm: str, progress: Progress | None
) -> Any:
    scores = []
    for conv in convs:
        scope = Scope(user_id="eval-updates", agent_id=f"{conv.id}-{arm}", run_id=run_id)
        run = await run_conversation(svc, conv, scope, keep_notes=cfg.keep_notes, progress=progress)
        scores.append(score_conversation(conv, run))
    return {"overall": overall(scores), "conversations": scores}


async def run_updates_eval(
    svc: Any, cfg: UpdatesConfig, *, progress: Progress | None = None, baseline: Any = None
) -> dict[str, Any]:
    """Run the selected gold conversations and score them; ``baseline``: a service with supersession
    off, run on the same gold when ``cfg.compare`` (the caller builds it)."""
    convs = load_gold(cfg.gold, cfg.conversations or None)
    run_id = cfg.run_id or datetime.now().strftime("run-%Y%m%d-%H%M%S")
    started = time.perf_counter()
    result: dict[str, Any] = {
        "kind": "updates",
        "config": {
            "gold": str(cfg.gold or default_gold_path()),
            "conversations": [c.id for c in convs],
            "run_id": run_id,
            "supersession_candidates": svc.settings.supersession_candidates,
            "supersession_threshold": svc.settings.supersession_threshold,
            "link_decision": svc.settings.resolved_link_decision,
            "llm": svc.settings.local_model
            if svc.settings.resolved_llm_provider == "local"
            else svc.settings.llm_model,
        },
    }
    # The arm is named by what the service does (GRAPHMEM_ENABLE_SUPERSESSION=false runs the "off" arm alone).
    arm = "on" if svc.settings.enable_supersession else "off"
    result[f"supersession_{arm}"] = await _arm(svc, convs, cfg, run_id, arm, progress)
    if cfg.compare and baseline is not None:
        result["supersession_off"] = await _arm(baseline, convs, cfg, run_id, "off", progress)
    result["config"]["seconds"] = round(time.perf_counter() - started, 1)
    return result


def updates_markdown(result: dict[str, Any]) -> str:
    def f(v: Any) -> str:
        return "-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)

    lines = ["# graphmem eval updates", ""]
    cfg = result["config"]
    lines.append(
        f"LLM {cfg['llm']}, {len(cfg['conversations'])} conversations, threshold {cfg['supersession_threshold']}, "
        f"{cfg['supersession_candidates']} candidates, {cfg.get('seconds')} s"
    )
    lines.append("")
    lines.append(
        "| arm | supersession P | R | conflicts found/gold | refused: gold/other | knock-on R | now | before | "
        "when | clash | calls/note | tokens/note | s/note |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for arm in ("supersession_on", "supersession_off"):
        if arm not in result:
            continue
        o = result[arm]["overall"]
        acc: dict[str, Any] = {k: o["answers"].get(k) for k in KINDS}

        def a(k: str, acc: dict[str, Any] = acc) -> str:
            x = acc.get(k)
            return f"{x['right']}/{x['asked']}" if x else "-"

        lines.append(
            f"| {arm} | {f(o['supersession']['precision'])} | {f(o['supersession']['recall'])} | "
            f"{o['conflicts']['right']}/{o['conflicts']['gold']} | {o['refused']['gold']}/{o['refused']['other']} | "
            f"{f(o['knock_on']['recall'])} | "
            f"{a('now')} | {a('before')} | {a('when')} | {a('clash')} | {f(o['per_note']['llm_calls'])} | "
            f"{f(o['per_note']['tokens'])} | {f(o['per_note']['seconds'])} |"
        )
    lines.append("")
    for arm in ("supersession_on", "supersession_off"):
        if arm not in result:
            continue
        lines.append(f"## {arm}")
        for c in result[arm]["conversations"]:
            s = c["supersession"]
            lines.append(
                f"- {c['id']}: supersession wrong {s['wrong']}, missed {s['missed']}; conflicts "
                f"{c['conflicts']['right']}/{c['conflicts']['gold']}; knock-on found {c['knock_on']['found']}; "
                f"refused as both true: gold {c['refused']['gold']}, other {c['refused']['other']}"
            )
            for ans in c["answers"]:
                mark = "right" if ans["right"] else "WRONG"
                lines.append(f"  - [{ans['kind']}] {ans['q']} -> {ans['answer'][:120]!r} ({mark})")
        lines.append("")
    return "\n".join(lines)


def write_outputs(result: dict[str, Any], out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    kind = result["kind"]
    paths = {"json": out / f"{kind}.json", "markdown": out / f"{kind}.md"}
    paths["json"].write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    md = probe_markdown(result) if kind == "updates_probe" else updates_markdown(result)
    paths["markdown"].write_text(md, encoding="utf-8")
    return paths


# --- the decision alone: one yes/no per pair of turns, no enrichment, nothing stored --------------------


def _turn_note(turn: UpdateTurn, scope: Scope) -> Note:
    return Note(id=f"t{turn.n}", content=turn.content, scope=scope, event_time=datetime.fromisoformat(turn.time))


async def probe_conversation(
    svc: Any, gold: UpdateConversation, *, concurrency: int = 4, progress: Progress | None = None
) -> dict[str, Any]:
    """P(yes) of the supersession question for every pair of turns about the same person (earlier,
    later), and of the knock-on question for the turns of the gold's knock-on changes; nothing stored.
    What the threshold decides, without the candidate search and the enrichment around it."""
    from graphmem.service import judge_knock_on, judge_supersession, same_person

    llm = await svc.llm_caller()
    scope = Scope(user_id="eval-updates-probe")
    notes = {t.n: _turn_note(t, scope) for t in gold.turns}
    pairs = [(a, b) for a in notes for b in notes if a < b and same_person(notes[b], notes[a])]
    knock = [
        (t, new)
        for new, old in gold.supersedes
        for t in notes
        if t < new and t != old and (new, t) not in set(gold.supersedes) and same_person(notes[new], notes[t])
    ]
    usage = Usage()
    gate = asyncio.Semaphore(concurrency)
    done = 0
    total = len(pairs) + len(knock)

    async def ask(kind: str, a: int, b: int) -> float:
        nonlocal done
        async with gate:
            if kind == "supersede":
                p = await judge_supersession(llm, notes[a], notes[b], usage)
            else:
                p = await judge_knock_on(llm, notes[a], notes[b], usage)
        done += 1
        if progress is not None:
            progress(f"probe {gold.id}", done, total)
        return p

    probs = await asyncio.gather(
        *(ask("supersede", a, b) for a, b in pairs), *(ask("knock_on", t, new) for t, new in knock)
    )
    gold_pairs = {(old, new) for new, old in gold.supersedes}
    acceptable = {(old, new) for new, old in gold.acceptable}
    conflicts = _unordered(gold.conflicts)
    gold_knock = {(t, new) for t, old in gold.knock_on for new in [n for n, o in gold.supersedes if o == old]}
    return {
        "id": gold.id,
        "supersede": [
            {
                "earlier": a,
                "later": b,
                "p": round(p, 3),
                "gold": "yes"
                if (a, b) in gold_pairs or (a, b) in conflicts
                else "ok"
                if (a, b) in acceptable
                else "no",
            }
            for (a, b), p in zip(pairs, probs[: len(pairs)], strict=True)
        ],
        "knock_on": [
            {"note": t, "change": new, "p": round(p, 3), "gold": "yes" if (t, new) in gold_knock else "no"}
            for (t, new), p in zip(knock, probs[len(pairs) :], strict=True)
        ],
        "calls": usage.llm_calls,
        "seconds": round(usage.llm_seconds, 1),
    }


def threshold_table(probes: Sequence[dict[str, Any]], section: str) -> list[dict[str, Any]]:
    """Precision and recall of a section's yes/no answers at each threshold ('ok' pairs not counted)."""
    rows = [r for p in probes for r in p[section]]
    table = []
    for t in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        said = [r for r in rows if r["p"] >= t and r["gold"] != "ok"]
        tp = sum(r["gold"] == "yes" for r in said)
        gold = sum(r["gold"] == "yes" for r in rows)
        table.append(
            {
                "threshold": t,
                "said_yes": len(said),
                "right": tp,
                "precision": _ratio(tp, len(said)),
                "recall": _ratio(tp, gold),
            }
        )
    return table


async def run_probe(svc: Any, cfg: UpdatesConfig, *, progress: Progress | None = None) -> dict[str, Any]:
    convs = load_gold(cfg.gold, cfg.conversations or None)
    started = time.perf_counter()
    probes = [await probe_conversation(svc, c, progress=progress) for c in convs]
    return {
        "kind": "updates_probe",
        "config": {
            "gold": str(cfg.gold or default_gold_path()),
            "conversations": [c.id for c in convs],
            "llm": svc.settings.local_model
            if svc.settings.resolved_llm_provider == "local"
            else svc.settings.llm_model,
            "seconds": round(time.perf_counter() - started, 1),
        },
        "supersede_thresholds": threshold_table(probes, "supersede"),
        "knock_on_thresholds": threshold_table(probes, "knock_on"),
        "conversations": probes,
    }


def probe_markdown(result: dict[str, Any]) -> str:
    cfg = result["config"]
    lines = [
        "# graphmem eval updates --probe",
        "",
        f"LLM {cfg['llm']}, {len(cfg['conversations'])} conversations, {cfg['seconds']} s; one yes/no per pair.",
        "",
    ]
    for section in ("supersede", "knock_on"):
        lines += [f"## {section}", "", "| threshold | said yes | right | precision | recall |", "|---|---|---|---|---|"]
        for r in result[f"{section}_thresholds"]:
            lines.append(f"| {r['threshold']} | {r['said_yes']} | {r['right']} | {r['precision']} | {r['recall']} |")
        lines.append("")
    return "\n".join(lines)
