"""The full-context baseline's text: the whole conversation, every session under its date, in the
words ``ask`` writes notes with, cut from the oldest turn when it exceeds what a server slot holds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from graphmem.evaluation.locomo import Conversation, Session, Turn
from graphmem.tokens import count_tokens

# LLM tokens per token counted by graphmem.tokens (MiniLM WordPiece) on LoCoMo text, with a margin:
# a request of 5,171 Qwen tokens carried 4,578 counted context tokens plus ~150 of prompt (1.10).
LLM_TOKENS_PER_COUNTED = 1.15
PROMPT_RESERVE = 300  # system prompt, instructions, question and chat template, in LLM tokens


def _session_header(session: Session) -> str:
    return f"[{session.date_time}]" if session.date_time else f"[session {session.number}]"


def conversation_text(turns: Sequence[tuple[Session, Turn]]) -> str:
    """Turns under one header per session (its date), as ``ask`` writes notes under one header per date."""
    lines: list[str] = []
    current: int | None = None
    for session, turn in turns:
        if session.number != current:
            if lines:
                lines.append("")
            lines.append(_session_header(session))
            current = session.number
        lines.append(f"- {turn.content}")
    return "\n".join(lines)


def full_context(conv: Conversation, sessions: Sequence[int] | None) -> str:
    """The whole (selected part of the) conversation, every session under its date."""
    return conversation_text(conv.turns(sessions))


def full_context_limit(ctx_tokens: int, answer_tokens: int) -> int:
    """Counted tokens (graphmem.tokens) of conversation that fit a server slot of ``ctx_tokens`` LLM tokens
    beside the prompt and an answer of up to ``answer_tokens``."""
    return max(0, int((ctx_tokens - answer_tokens - PROMPT_RESERVE) / LLM_TOKENS_PER_COUNTED))


@dataclass(frozen=True)
class FullContext:
    """What the full-context arm sends for one conversation, and what was cut to fit."""

    text: str
    tokens: int  # counted tokens of ``text``
    whole_tokens: int  # of the whole selected conversation
    limit: int | None
    turns: int  # turns sent
    cut_turns: int  # oldest turns left out to fit the limit
    cut_sessions: tuple[int, ...]  # sessions left out entirely
    partial_session: int | None  # the session whose first turns were left out
    first_turn: str | None  # dia id of the first turn sent

    @property
    def fits(self) -> bool:
        return self.cut_turns == 0

    def info(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "whole_tokens": self.whole_tokens,
            "limit": self.limit,
            "fits": self.fits,
            "turns": self.turns,
            "cut_turns": self.cut_turns,
            "cut_sessions": list(self.cut_sessions),
            "partial_session": self.partial_session,
            "first_turn": self.first_turn,
        }


def fit_conversation(
    conv: Conversation,
    sessions: Sequence[int] | None,
    limit: int | None,
    *,
    count: Callable[[str], int] = count_tokens,
) -> FullContext:
    """The conversation as the full-context arm sends it: all of it when it fits ``limit`` counted tokens
    (or there is no limit), else its most recent turns that fit (the oldest are cut, as a chat window
    drops them), with what was cut."""
    turns = conv.turns(sessions)
    whole = conversation_text(turns)
    whole_tokens = count(whole)
    start = 0
    text, tokens = whole, whole_tokens
    if limit is not None and whole_tokens > limit:
        lo, hi = 1, len(turns)  # the smallest start whose suffix fits (hi: nothing sent)
        while lo < hi:
            mid = (lo + hi) // 2
            if count(conversation_text(turns[mid:])) <= limit:
                hi = mid
            else:
                lo = mid + 1
        start = lo
        text = conversation_text(turns[start:])
        tokens = count(text)
    kept = turns[start:]
    kept_sessions = {s.number for s, _ in kept}
    cut_sessions = tuple(sorted({s.number for s, _ in turns[:start]} - kept_sessions))
    partial = (
        kept[0][0].number if start and kept and kept[0][0].number in {s.number for s, _ in turns[:start]} else None
    )
    return FullContext(
        text=text,
        tokens=tokens,
        whole_tokens=whole_tokens,
        limit=limit,
        turns=len(kept),
        cut_turns=start,
        cut_sessions=cut_sessions,
        partial_session=partial,
        first_turn=kept[0][1].dia_id if kept else None,
    )
