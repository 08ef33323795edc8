"""BEAM data (Tavakoli et al., 2025: "Beyond a Million Tokens") as the QA harness's conversations.

One chat is a folder (``chats/100K/1/``) with ``chat.json`` and ``probing_questions/probing_questions.json``:

- ``chat.json``: a list of batches, each ``{"batch_number": n, "turns": [[message, ...], ...]}``; a
  message is ``{"role": "user"|"assistant", "id": int, "content": ..., "time_anchor": "March-15-2024"}``
  (the anchor on a batch's first message only); user messages end in an index marker ``->-> 1,1``.
- ``probing_questions.json``: question type -> list of questions, each with ``question``, the gold
  answer (``answer``, ``ideal_answer`` or ``ideal_response``) and ``source_chat_ids`` (message ids: a
  list, or for updates and contradictions a dict of lists such as ``original_info`` / ``updated_info``).

A chat becomes one ``Conversation`` (sample id ``beam-<folder>``, e.g. ``beam-1``): a batch is a session
dated by its anchor, its messages turns ``D<batch>:<k>`` (``roles`` picks which are stored: the user's
messages hold the facts that change and clash; the assistant's are long answers, about four times
the text). The five question types the harness's categories can score are asked; BEAM's other five
(event ordering, multi-session reasoning, summarisation, preference and instruction following) want
rubric-judged long answers and are counted in ``extra["skipped_types"]``. Contradiction questions
want an answer that names both statements; knowledge updates want the newer value.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInputError
from graphmem.evaluation.locomo import QA, Conversation, Session, Turn
from graphmem.evaluation.longmemeval import MAX_TURN_CHARS

CATEGORY_NAMES: dict[int, str] = {
    1: "contradiction-resolution",
    2: "temporal-reasoning",
    3: "knowledge-update",
    4: "information-extraction",
    5: "abstention",
}
QUESTION_TYPES: dict[str, int] = {
    "contradiction_resolution": 1,
    "temporal_reasoning": 2,
    "knowledge_update": 3,
    "information_extraction": 4,
    "abstention": 5,
}
ROLES = ("user", "assistant")

_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")  # the index marker BEAM appends to user messages


def anchor_date(text: str | None) -> str | None:
    """``"March-15-2024"`` -> ``"2024-03-15"``; None when absent or unreadable."""
    if not text:
        return None
    try:
        return datetime.strptime(str(text).strip(), "%B-%d-%Y").date().isoformat()
    except ValueError:
        return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInputError(f"no such file: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: not JSON ({exc})") from None


def _ids(value: Any) -> list[int]:
    """Message ids from ``source_chat_ids``: a list, or a dict of lists (updates, contradictions)."""
    groups = value.values() if isinstance(value, dict) else [value]
    out = []
    for x in (x for g in groups for x in (g if isinstance(g, list) else [g])):
        try:
            out.append(int(x))
        except (TypeError, ValueError):
            continue  # BEAM sometimes names a session in words here; such a reference gives no turn
    return out


def _answer(q: dict[str, Any]) -> str:
    for key in ("answer", "ideal_answer", "ideal_response"):
        if q.get(key):
            return str(q[key])
    return ""


def load_beam_chat(
    folder: str | Path, *, roles: tuple[str, ...] = ROLES, max_chars: int = MAX_TURN_CHARS
) -> Conversation:
    """Read one BEAM chat folder (``chat.json`` and ``probing_questions/probing_questions.json``)."""
    root = Path(folder)
    if root.is_file():  # chat.json given: its folder
        root = root.parent
    unknown = set(roles) - set(ROLES)
    if unknown or not roles:
        raise InvalidInputError(f"roles must be among {', '.join(ROLES)}, got {', '.join(roles) or 'none'}")
    batches = _read_json(root / "chat.json")
    probing = _read_json(root / "probing_questions" / "probing_questions.json")
    if not isinstance(batches, list) or not isinstance(probing, dict):
        raise InvalidInputError(f"{root}: not a BEAM chat (chat.json a list of batches, probing questions a dict)")
    dia_of: dict[int, str] = {}
    sessions: list[Session] = []
    cut = 0
    for b_index, batch in enumerate(batches, start=1):
        try:
            number = int(batch.get("batch_number", b_index))
            groups = batch["turns"]
        except (AttributeError, KeyError, TypeError, ValueError):
            raise InvalidInputError(f"{root}/chat.json batch {b_index}: lacks batch_number or turns") from None
        turns: list[Turn] = []
        date: str | None = None
        for message in (m for group in groups for m in group):
            try:
                role, content, mid = str(message["role"]), str(message["content"]), int(message["id"])
            except (KeyError, TypeError, ValueError) as exc:
                raise InvalidInputError(f"{root}/chat.json batch {number}: a message lacks {exc}") from None
            date = date or anchor_date(message.get("time_anchor"))
            if role not in roles:
                continue
            text = _MARKER.sub("", content).strip()
            if len(text) > max_chars:
                text = text[: max_chars - 1] + "…"
                cut += 1
            dia_of[mid] = f"D{number}:{len(turns) + 1}"
            turns.append(Turn(dia_id=dia_of[mid], speaker=role, text=text))
        sessions.append(Session(number=number, date_time=date, turns=tuple(turns)))
    questions: list[QA] = []
    skipped: dict[str, int] = {}
    for qtype, items in probing.items():
        category = QUESTION_TYPES.get(qtype)
        if category is None:
            skipped[qtype] = len(items) if isinstance(items, list) else 0
            continue
        for q in items if isinstance(items, list) else []:
            source = _ids(q.get("source_chat_ids") or [])
            questions.append(
                QA(
                    index=len(questions),
                    question=str(q.get("question", "")),
                    answer=_answer(q),
                    category=category,
                    evidence=tuple(dict.fromkeys(dia_of[i] for i in source if i in dia_of)),
                    raw_evidence=tuple(dict.fromkeys(str(i) for i in source)),
                )
            )
    extra = {"roles": list(roles), "skipped_types": skipped, "turns_cut": cut, "folder": str(root)}
    return Conversation(f"beam-{root.name}", "user", "assistant", tuple(sessions), tuple(questions), extra)


def load_beam(path: str | Path, *, roles: tuple[str, ...] = ROLES) -> list[Conversation]:
    """One chat folder, or a folder of numbered chat folders (``chats/100K``), in number order."""
    root = Path(path)
    if (root / "chat.json").is_file() or root.is_file():
        return [load_beam_chat(root, roles=roles)]
    if not root.is_dir():
        raise InvalidInputError(f"no such folder: {root}")
    chats = sorted(
        (p for p in root.iterdir() if (p / "chat.json").is_file()),
        key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name),
    )
    if not chats:
        raise InvalidInputError(f"{root}: no BEAM chat folders (each with a chat.json)")
    return [load_beam_chat(p, roles=roles) for p in chats]
