"""LongMemEval data (Wu et al., ICLR 2025) as the QA harness's conversations.

Format (``longmemeval_s.json``, ``_m``, ``_oracle``): a JSON list of question instances, each with
``question_id`` (ending in ``_abs`` for an abstention question: the history does not hold the
answer), ``question_type``, ``question``, ``answer``, ``question_date`` ("2023/05/30 (Tue) 23:40"),
``haystack_session_ids``, ``haystack_dates`` and ``haystack_sessions`` (one list of turns per session,
each ``{"role": "user"|"assistant", "content": ..., "has_answer": true}`` where the turn holds
evidence) and ``answer_session_ids``.

Every instance has its own history, so each becomes one ``Conversation`` with one question (sample id
= question id, its own scope): sessions numbered from 1 in the given order under their dates, turns
``D<session>:<turn>``, the question's evidence the turns marked ``has_answer`` (else every turn of the
answer sessions). Dates become ``YYYY-MM-DD HH:MM`` so the service reads them as event times. The question date goes into the answer instruction.

Question types map onto the harness's five category ids (``CATEGORY_NAMES``); abstention questions are
category 5, scored as LoCoMo scores category 5 (``5-locomo``: did the answer decline) and asked with
the open prompt (their ``answer`` is an explanation, not a distractor to offer).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInputError
from graphmem.evaluation.locomo import QA, Conversation, Session, Turn

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-session",
    2: "temporal-reasoning",
    3: "knowledge-update",
    4: "single-session",
    5: "abstention",
}
QUESTION_TYPES: dict[str, int] = {
    "multi-session": 1,
    "temporal-reasoning": 2,
    "knowledge-update": 3,
    "single-session-user": 4,
    "single-session-assistant": 4,
    "single-session-preference": 4,
}
MAX_TURN_CHARS = 7000  # under the service's default content limit (8,000 characters); longer turns are cut

_DATE = re.compile(r"^\s*(\d{4})/(\d{2})/(\d{2})\s*(?:\((\w+)\))?\s*(\d{1,2}:\d{2})?\s*$")


def normalise_date(text: str | None) -> str | None:
    """``"2023/05/20 (Sat) 02:21"`` -> ``"2023-05-20 02:21"`` (readable by the service's date parser,
    which a weekday would defeat); other text is returned unchanged."""
    if not text:
        return None
    m = _DATE.match(str(text))
    if not m:
        return str(text)
    y, mo, d, _weekday, hm = m.groups()
    return f"{y}-{mo}-{d}" + (f" {hm}" if hm else "")


def category_of(question_id: str, question_type: str) -> int:
    if question_id.endswith("_abs"):
        return 5
    try:
        return QUESTION_TYPES[question_type]
    except KeyError:
        raise InvalidInputError(f"{question_id}: unknown question_type {question_type!r}") from None


def _instance(raw: Any, where: str, max_chars: int) -> Conversation:
    if not isinstance(raw, dict):
        raise InvalidInputError(f"{where}: not a LongMemEval question instance")
    try:
        qid = str(raw["question_id"])
        qtype = str(raw["question_type"])
        sessions_raw = raw["haystack_sessions"]
        dates = raw.get("haystack_dates") or [None] * len(sessions_raw)
    except KeyError as exc:
        raise InvalidInputError(f"{where}: not a LongMemEval question instance (missing {exc})") from None
    if not isinstance(sessions_raw, list) or len(dates) != len(sessions_raw):
        raise InvalidInputError(f"{where} {qid}: haystack_sessions and haystack_dates differ in length")
    session_ids = [str(x) for x in raw.get("haystack_session_ids") or []]
    answer_sessions = {str(x) for x in raw.get("answer_session_ids") or []}
    sessions: list[Session] = []
    evidence: list[str] = []
    fallback: list[str] = []
    cut = 0
    for s_index, (turns_raw, date) in enumerate(zip(sessions_raw, dates, strict=True), start=1):
        turns = []
        is_answer_session = s_index <= len(session_ids) and session_ids[s_index - 1] in answer_sessions
        for t_index, t in enumerate(turns_raw or [], start=1):
            try:
                role, content = str(t["role"]), str(t["content"])
            except (KeyError, TypeError) as exc:
                raise InvalidInputError(f"{where} {qid} session {s_index} turn {t_index}: lacks {exc}") from None
            if len(content) > max_chars:
                content = content[: max_chars - 1] + "…"
                cut += 1
            dia_id = f"D{s_index}:{t_index}"
            turns.append(Turn(dia_id=dia_id, speaker=role, text=content))
            if t.get("has_answer"):
                evidence.append(dia_id)
            if is_answer_session:
                fallback.append(dia_id)
        sessions.append(Session(number=s_index, date_time=normalise_date(date), turns=tuple(turns)))
    category = category_of(qid, qtype)
    qa = QA(
        index=0,
        question=str(raw.get("question", "")),
        answer=str(raw.get("answer", "")),
        category=category,
        evidence=tuple(evidence or fallback),
        raw_evidence=tuple(sorted(answer_sessions)),
        question_date=normalise_date(raw.get("question_date")),
    )
    extra = {
        "question_type": qtype,
        "abstention": qid.endswith("_abs"),
        "haystack_session_ids": session_ids,
        "answer_session_ids": sorted(answer_sessions),
        "turns_cut": cut,
    }
    return Conversation(qid, "user", "assistant", tuple(sessions), (qa,), extra)


def load_longmemeval(path: str | Path, *, max_chars: int = MAX_TURN_CHARS) -> list[Conversation]:
    """Read a LongMemEval JSON file (a list of question instances, or one instance)."""
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
        raise InvalidInputError(f"{p}: expected a list of LongMemEval question instances")
    convs = [_instance(raw, str(p), max_chars) for raw in data]
    ids = [c.sample_id for c in convs]
    if len(set(ids)) != len(ids):
        raise InvalidInputError(f"{p}: question ids repeat")
    return convs
