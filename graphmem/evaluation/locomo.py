"""LoCoMo data: loader, turns as notes, questions with their evidence.

The data set (CC BY-NC 4.0) is read from a path given at run time and never copied into the
repository. Format: a JSON list of samples, each with ``sample_id``, ``conversation``
(``speaker_a``, ``speaker_b``, ``session_N_date_time``, ``session_N``: turns with ``speaker``,
``dia_id`` such as ``D1:3``, ``text``, optional ``blip_caption``) and ``qa`` (``question``,
``answer`` or for category 5 ``adversarial_answer``, ``evidence``: dia ids, ``category``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInputError
from graphmem.models import NoteInput

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"D\d+:\d+")
_SAFE = re.compile(r"[^A-Za-z0-9_.:@\-]")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    blip_caption: str | None = None

    @property
    def content(self) -> str:
        """The note content: ``"{speaker}: {text}"`` plus the image caption when the turn shows one."""
        base = f"{self.speaker}: {self.text}"
        return f"{base} [image: {self.blip_caption}]" if self.blip_caption else base


@dataclass(frozen=True)
class Session:
    number: int
    date_time: str | None
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class QA:
    index: int  # position in the sample's qa list (stable question id)
    question: str
    answer: str  # gold answer; for category 5 the adversarial (distractor) answer
    category: int
    evidence: tuple[str, ...]  # well-formed dia ids, as given (may name turns that do not exist)
    raw_evidence: tuple[str, ...] = ()
    question_date: str | None = None  # when the question is asked (LongMemEval); LoCoMo has none

    @property
    def is_adversarial(self) -> bool:
        return self.category == 5


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    qa: tuple[QA, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def turns(self, sessions: Iterable[int] | None = None) -> list[tuple[Session, Turn]]:
        wanted = None if sessions is None else set(sessions)
        return [(s, t) for s in self.sessions if wanted is None or s.number in wanted for t in s.turns]

    def session_of(self, dia_id: str) -> int | None:
        m = re.match(r"D(\d+):", dia_id)
        return int(m.group(1)) if m else None

    def dia_ids(self, sessions: Iterable[int] | None = None) -> set[str]:
        return {t.dia_id for _, t in self.turns(sessions)}

    def questions(
        self,
        *,
        categories: Iterable[int] | None = None,
        sessions: Iterable[int] | None = None,
    ) -> list[QA]:
        """Questions of the given categories; with ``sessions``, only those whose every evidence turn was
        in those sessions (and which have evidence), since the others cannot be answered from them."""
        cats = None if categories is None else set(categories)
        known = self.dia_ids(sessions) if sessions is not None else None
        out = []
        for q in self.qa:
            if cats is not None and q.category not in cats:
                continue
            if known is not None and (not q.evidence or not set(q.evidence) <= known):
                continue
            out.append(q)
        return out


def parse_evidence(values: Any) -> tuple[str, ...]:
    """Dia ids from an evidence list; tolerant of the data's typos ('D8:6; D9:17', 'D:11:26')."""
    out: list[str] = []
    for v in values or []:
        text = str(v).replace("D:", "D")
        for m in _DIA_ID.findall(text):
            if m not in out:
                out.append(m)
    return tuple(out)


def _sample(raw: dict[str, Any], where: str) -> Conversation:
    try:
        sample_id = str(raw["sample_id"])
        conv = raw["conversation"]
        speaker_a, speaker_b = str(conv["speaker_a"]), str(conv["speaker_b"])
    except (KeyError, TypeError) as exc:
        raise InvalidInputError(f"{where}: not a LoCoMo sample (missing {exc})") from None
    sessions = []
    for key, turns in conv.items():
        m = _SESSION_KEY.match(key)
        if not m or not isinstance(turns, list):
            continue
        number = int(m.group(1))
        parsed = []
        for i, t in enumerate(turns):
            try:
                parsed.append(
                    Turn(
                        dia_id=str(t["dia_id"]),
                        speaker=str(t["speaker"]),
                        text=str(t["text"]),
                        blip_caption=str(t["blip_caption"]) if t.get("blip_caption") else None,
                    )
                )
            except (KeyError, TypeError) as exc:
                raise InvalidInputError(f"{where} {sample_id} {key}[{i}]: turn lacks {exc}") from None
        date = conv.get(f"{key}_date_time")
        sessions.append(Session(number=number, date_time=str(date) if date else None, turns=tuple(parsed)))
    sessions.sort(key=lambda s: s.number)
    qas = []
    for i, q in enumerate(raw.get("qa") or []):
        category = int(q.get("category", 0))
        answer = q.get("adversarial_answer") if category == 5 else q.get("answer")
        if answer is None:  # a few category-5 items carry `answer` instead
            answer = q.get("answer", q.get("adversarial_answer", ""))
        qas.append(
            QA(
                index=i,
                question=str(q.get("question", "")),
                answer="" if answer is None else str(answer),
                category=category,
                evidence=parse_evidence(q.get("evidence")),
                raw_evidence=tuple(str(e) for e in q.get("evidence") or []),
            )
        )
    extra = {k: v for k, v in raw.items() if k not in ("sample_id", "conversation", "qa")}
    return Conversation(sample_id, speaker_a, speaker_b, tuple(sessions), tuple(qas), extra)


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo JSON file (a list of samples, or one sample)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInputError(f"no such file: {p}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{p}: not JSON ({exc})") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise InvalidInputError(f"{p}: expected a list of LoCoMo samples")
    return [_sample(raw, str(p)) for raw in data]


def note_id(tag: str, sample_id: str, dia_id: str) -> str:
    """Deterministic note id, unique per (run tag, sample, turn): note ids are global in the database."""
    return _SAFE.sub("_", f"lm-{tag}-{sample_id}-{dia_id}")[:128]


def scope_tag(scope: Any) -> str:
    """A short tag naming a scope, so importing one file into two scopes makes distinct note ids."""
    import hashlib

    return "s" + hashlib.sha256(str(scope).encode("utf-8")).hexdigest()[:10]


def turn_inputs(
    conv: Conversation, sessions: Iterable[int] | None = None, *, tag: str = "import", follows: bool = True
) -> list[NoteInput]:
    """One NoteInput per turn, in conversation order (event time = the session's date string); with
    ``follows``, each turn FOLLOWS the previous turn of its session."""
    out: list[NoteInput] = []
    previous: tuple[int, str] | None = None
    for session, turn in conv.turns(sessions):
        nid = note_id(tag, conv.sample_id, turn.dia_id)
        after = previous[1] if follows and previous is not None and previous[0] == session.number else None
        out.append(
            NoteInput(
                content=turn.content,
                note_id=nid,
                event_time=session.date_time,
                source_id=turn.dia_id,
                category=None,
                follows=after,
            )
        )
        previous = (session.number, nid)
    return out


def select(conversations: Sequence[Conversation], ids: Sequence[str] | None) -> list[Conversation]:
    """The conversations named by sample id (or 1-based position), all when ``ids`` is empty."""
    if not ids:
        return list(conversations)
    by_id = {c.sample_id: c for c in conversations}
    out = []
    for x in ids:
        if x in by_id:
            out.append(by_id[x])
        elif x.isdigit() and 1 <= int(x) <= len(conversations):
            out.append(conversations[int(x) - 1])
        else:
            raise InvalidInputError(f"no conversation {x!r}; known: {', '.join(by_id)}")
    return out


def parse_sessions(text: str | None) -> list[int] | None:
    """'1', '1-3', '1,4,7' -> session numbers; None/'' -> all."""
    if not text:
        return None
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out
