"""The answer context: which retrieved notes fit a token budget, and how they are written for the LLM.

Notes are chosen in rank order (the search's judgement of relevance) and written in time order,
grouped under one header per date: a conversation turn carries its session date, and repeating
"[1:56 pm on 8 May, 2023]" on every line cost about a quarter of the context for nothing. Time
order also lets the model read a sequence of events as one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from graphmem.llm.prompts import answer_messages
from graphmem.models import Note, SearchHit
from graphmem.tokens import count_tokens

if TYPE_CHECKING:
    from graphmem.service.updates import Asked

_UNDATED = ""
_EPOCH = datetime(1, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Context:
    text: str
    used: list[int]  # indexes into the notes given, in rank order
    tokens: int


@dataclass(frozen=True)
class AskContext:
    """What ``ask`` shows the answer model: the context's text, the hits it holds (rank order), its
    tokens, the marks under its notes (note id -> line) and what the question asks about in time
    ("now", "before" or None)."""

    text: str
    hits: list[SearchHit]
    tokens: int
    marks: dict[str, str]
    asked: Asked | None


def when(note: Note) -> str:
    """The date label of a note: its event time as the user gave it, else the ISO date."""
    if note.event_time_text:
        return note.event_time_text
    return note.event_time.strftime("%Y-%m-%d") if note.event_time else _UNDATED


def note_line(note: Note, mark: str | None = None, *, with_context: bool = True) -> str:
    extra = f" (context: {note.context})" if note.context and with_context else ""
    below = f"\n  [{mark}]" if mark else ""  # where the note stands in time (issue 28: service/updates.py)
    return f"- {note.content}{extra}{below}"


def _header(label: str) -> str:
    return f"[{label}]"


def render(notes: Sequence[Note], marks: Mapping[str, str] | None = None, *, with_context: bool = True) -> str:
    """Notes in time order, one header per date (undated notes first, without a header); ``marks``:
    a line under a note (note id -> text); ``with_context``: each note's LLM-written context after it."""

    def key(n: Note) -> tuple[datetime, datetime]:
        ev = n.event_time or _EPOCH
        return (ev if ev.tzinfo else ev.replace(tzinfo=UTC), n.created_at)

    lines: list[str] = []
    current: str | None = None
    for n in sorted(notes, key=key):
        label = when(n)
        if label != current and label != _UNDATED:
            lines.append(_header(label))
        current = label
        lines.append(note_line(n, (marks or {}).get(n.id), with_context=with_context))
    return "\n".join(lines)


def build_context(
    notes: Sequence[Note],
    budget: int | None = None,
    *,
    count: Callable[[str], int] = count_tokens,
    marks: Mapping[str, str] | None = None,
    with_context: bool = True,
) -> Context:
    """The notes that fit ``budget`` tokens (all when None), taken in rank order, and their text.

    A note that would overflow is skipped, so a shorter later one may still fit. The cost of a note
    is its line plus, for the first note of a date, that date's header.
    """
    chosen: list[int] = []
    labels: set[str] = set()
    spent = 0
    for i, n in enumerate(notes):
        label = when(n)
        cost = count(note_line(n, (marks or {}).get(n.id), with_context=with_context)) + (
            count(_header(label)) if label != _UNDATED and label not in labels else 0
        )
        if budget is not None and spent + cost > budget:
            continue
        chosen.append(i)
        labels.add(label)
        spent += cost
    text = render([notes[i] for i in chosen], marks, with_context=with_context)
    tokens = count(text)
    # The estimate is a sum of parts; the text as a whole may count a little differently.
    while budget is not None and tokens > budget and chosen:
        chosen.pop()
        text = render([notes[i] for i in chosen], marks, with_context=with_context)
        tokens = count(text)
    return Context(text=text, used=chosen, tokens=tokens)


def answer_prompt_digest() -> str:
    """A digest of the answer prompt ``ask`` sends (system text and message template, the parts as
    placeholders): evaluations key stored answers by it, so that a changed prompt asks them again."""
    messages = answer_messages("{question}", "{notes}", "{rules}")
    text = json.dumps([[type(m).__name__, m.content] for m in messages])
    return hashlib.sha256(text.encode()).hexdigest()[:10]
