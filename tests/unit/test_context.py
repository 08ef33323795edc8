"""The answer context: budget, rank-order choice, time-order writing with one header per date."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.models import Note, Scope
from graphmem.service.answer_context import build_context, render
from graphmem.tokens import count_tokens

SCOPE = Scope(user_id="u")
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def note(text: str, day: int | None, *, label: str | None = None, context: str = "", minute: int = 0) -> Note:
    ev = None if day is None else T0 + timedelta(days=day)
    return Note(
        content=text,
        scope=SCOPE,
        event_time=ev,
        event_time_text=label,
        context=context,
        created_at=T0 + timedelta(minutes=minute),
    )


def test_notes_are_written_in_time_order_under_one_header_per_date() -> None:
    notes = [
        note("Ada: the vet said Pixel is healthy", 7, label="9:00 am on 15 May, 2023", minute=3),
        note("Ada: I adopted a kitten", 0, label="1:56 pm on 8 May, 2023", minute=1),
        note("Ben: what is its name?", 0, label="1:56 pm on 8 May, 2023", minute=2),
        note("an undated fact", None, context="about cats"),
    ]
    assert render(notes).splitlines() == [
        "- an undated fact (context: about cats)",
        "[1:56 pm on 8 May, 2023]",
        "- Ada: I adopted a kitten",
        "- Ben: what is its name?",
        "[9:00 am on 15 May, 2023]",
        "- Ada: the vet said Pixel is healthy",
    ]
    assert render([note("x", 3)]).splitlines()[0] == "[2023-05-11]"  # no original wording: the ISO date


def test_the_budget_takes_notes_in_rank_order_and_skips_what_does_not_fit() -> None:
    short = [note(f"fact {i}", 0, label="8 May") for i in range(3)]
    long = note("a very long note " * 40, 0, label="8 May")
    ranked = [short[0], long, short[1], short[2]]
    ctx = build_context(ranked, budget=30)
    assert ctx.used == [0, 2, 3]  # the long one is skipped, later short ones still fit
    assert ctx.tokens == count_tokens(ctx.text) <= 30
    everything = build_context(ranked)
    assert everything.used == [0, 1, 2, 3] and everything.tokens == count_tokens(everything.text)
    assert build_context(ranked, budget=1).used == [] and build_context([]).text == ""


def test_one_header_per_date_costs_less_than_a_date_per_line() -> None:
    label = "1:56 pm on 8 May, 2023"
    notes = [note(f"Ada: sentence number {i} of the session", 0, label=label, minute=i) for i in range(10)]
    per_line = sum(count_tokens(f"[{label}] {n.content}") for n in notes)
    assert build_context(notes).tokens < 0.8 * per_line


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 60), min_size=0, max_size=15),
    days=st.lists(st.integers(0, 3), min_size=15, max_size=15),
    budget=st.integers(1, 400),
)
def test_never_over_budget_and_the_choice_is_a_rank_order_subset(
    sizes: list[int], days: list[int], budget: int
) -> None:
    notes = [note("w " * n, days[i], label=f"day {days[i]}", minute=i) for i, n in enumerate(sizes)]
    ctx = build_context(notes, budget)
    assert ctx.tokens <= budget and ctx.tokens == count_tokens(ctx.text)
    assert ctx.used == sorted(set(ctx.used))
    assert ctx.text == render([notes[i] for i in ctx.used])


def test_without_context_the_notes_own_words_fill_the_budget() -> None:
    # answer_shows_context=False: the LLM-written context is left out, so more notes fit one budget.
    ranked = [note(f"Ada: fact number {i}", 0, label="8 May", context="a long context " * 6) for i in range(6)]
    with_ctx = build_context(ranked, budget=80)
    without = build_context(ranked, budget=80, with_context=False)
    assert "(context:" not in without.text and "(context:" in with_ctx.text
    assert len(without.used) > len(with_ctx.used) and without.used[: len(with_ctx.used)] == with_ctx.used
    assert without.tokens == count_tokens(without.text) <= 80
    assert render(ranked[:1], with_context=False).splitlines() == ["[8 May]", "- Ada: fact number 0"]
