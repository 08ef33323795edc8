"""Memory that changes over time (issue 28): supersession, conflicts, knock-on checks, and what search
and ask make of them. The LLM proposes, this module decides.

Write side (after an add, ``record``):

1. **Candidates**: earlier notes of the scope about the same person with an overlapping subject (not
   stated minutes before in the same sitting: ``within_a_sitting``): the
   nearest by cosine and the best full-text matches of the note's words, keywords and tags (words
   common in the scope, such as the speaker's name, left out), fused by score; a note by another
   speaker only when one of the two notes names the other's speaker; a note already superseded
   before the new note's time is left to the note that superseded it, unless the new note names a
   kind of fact the old note names and none of its successors does (``judged_again``).
2. **The model** answers one yes/no question per candidate (``supersede_messages``): do the two
   notes state different values of the same fact about the same person? Its P(yes) is read from
   the first token, as for the pairwise link decision. A pair above the threshold gets a second
   question (``coexist_messages``: can both be true at the same time?) and goes on only when the
   model doubts it (``supersession_coexist_max``); a refused pair is reported in ``rejected``.
3. **Deterministic code decides** (``decide``): below the threshold nothing; otherwise the order in
   time (event time, else creation) says which note supersedes which: the newer supersedes the
   older; at the same time a conflict (``CONFLICTS_WITH``); never across scopes. The store writes
   ``SUPERSEDES {at, reason}`` and the older note's ``valid_to``, nothing else; its Cypher refuses
   a pair across scopes by itself.
4. **Knock-on checks**: the notes linked to a note just superseded are judged the same way (one
   yes/no each, ``knock_on_messages``: is it out of date after the change?) against the superseding
   note and reported (``AddResult.knock_on``), never changed.

``CONFLICTS_WITH`` rather than A-MEM's ``CONTRADICTS``: CONTRADICTS is a link the LLM proposes in
the link step (guarded, expanded by search, undone with its add, scored by the link evaluation),
while a conflict here is the service's own finding from a yes/no answer and two equal times; kept
apart, neither changes the meaning of the other, and the answer context can tell a clash it
recorded from a link a model proposed.

Read side (``annotate``, ``context_marks``): a superseded hit stands aside for its current note
(with the dated history of what it superseded); ``history=True`` returns every hit marked;
``as_of`` answers with the state at a date.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Literal

from langchain_core.messages import BaseMessage

from graphmem.config import Settings
from graphmem.errors import LLMError
from graphmem.llm.calls import LLMCaller
from graphmem.llm.update_prompts import (
    BEFORE_RULE,
    NOW_RULE,
    TIMELINE_RULE,
    coexist_messages,
    knock_on_messages,
    supersede_messages,
)
from graphmem.models import (
    AddResult,
    ConstructedNote,
    EnrichmentStatus,
    IngestItem,
    IngestReport,
    IngestStatus,
    LinkType,
    Note,
    Scope,
    SearchHit,
    Usage,
)
from graphmem.models.timeline import (
    Conflict,
    ConsolidationResult,
    KnockOn,
    NoteTimeline,
    Supersession,
    Synthesis,
    TimelineEntry,
    TimelineRow,
    as_utc,
)
from graphmem.ports import NoteStore
from graphmem.service import retrieve

log = logging.getLogger(__name__)

_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s")
_EPOCH = datetime(1, 1, 1, tzinfo=UTC)
KNOCK_ON_MAX = 8  # linked notes re-checked per superseded note

# The kinds of fact SUPERSEDE_SYSTEM asks about, and words that say something changed. A new note with
# none of them gets no supersession question (``supersession_gate``): the question would be about a fact
# the prompt does not cover. Only the new note is read; an earlier note is found by the new one's words.
_CHANGE_CUES = (
    r"now|no longer|any ?more|moved?|moving|switch(?:ed|ing)?|sold|bought|left|start(?:ed|ing)?|stopp?ed|quit|"
    r"took up|instead|new|used to|chang(?:e|ed|ing)|became|gave up|joined|retired|divorced|married|broke up|"
    r"adopt(?:ed|ing)?|ex"
)
_CHANGEABLE_FACTS = (
    r"live[sd]?|living|flat(?:mate)?s?|apartment|house|home|city|work(?:s|ing|ed)?|job|employer|company|"
    r"manager|boss|play(?:s|ing|ed)?|instrument|sport|vegan|vegetarian|diet|eat(?:s|ing)?|car|bike|"
    r"drive[sn]?|driving|cycl(?:e|es|ing)|commute|scooter|partner|boyfriend|girlfriend|husband|wife|pet|dog|cat"
)
_MAY_CHANGE = re.compile(rf"\b(?:{_CHANGE_CUES}|{_CHANGEABLE_FACTS})\b", re.IGNORECASE)
# The kind of fact a note's words name. Two notes are judged against each other only when they name a
# kind in common: the 1.5B gave "Sam moved out of our flat" against "my manager there is Priya" P(yes)
# 0.76 on the updates gold, and on a whole LoCoMo conversation a thank-you line (no kind at all) was
# "superseded" by a later line naming a job, hiding the evidence behind it (issue 28, conv-30: 49
# supersessions, most wrong, budgeted recall -0.068). A statement with no kind states no value to
# replace, and a note that names none gives the model nothing to compare.
_FACT_KINDS = {
    kind: re.compile(rf"\b(?:{words})\b", re.IGNORECASE)
    for kind, words in {
        # living somewhere or with someone, not "living my dream"
        "home": r"(?:live[sd]?|living) (?:in|with|at|on|near|alone|together|abroad|there|here)|flat(?:mate)?s?|"
        r"apartment|house|home|city|moved?|moving",
        # "work" as a job, not "make it work" or "Friday works" (LoCoMo's chat is full of those)
        # and a job, not praise ("Nice job, Maria!" superseded by "I lost my job" on conv-41)
        "work": r"work(?:s|ing|ed)? (?:as|at|for)|(?:at|to|from|after|for) work|"
        r"(?<!nice )(?<!good )(?<!great )(?<!amazing )(?<!awesome )(?<!excellent )(?<!fantastic )jobs?|"
        r"employer|company|office|"
        r"colleagues?|career|hired|promoted|"
        r"developer|engineer|designer|nurse|doctor|teacher|lawyer|accountant",
        "manager": r"manager|boss",
        "instrument": r"instruments?|violin|cello|piano|guitar|drums|flute",
        "sport": r"sports?|climbing|swimming|running|football|tennis|yoga|gym",
        "diet": r"vegan|vegetarian|diet|eat(?:s|ing)?|meat",
        "vehicle": r"car|bike|drive[sn]?|driving|scooter|commute|cycl(?:e|es|ed|ing)|bus|tram|u-bahn|metro|subway",
        "partner": r"partner|boyfriend|girlfriend|husband|wife|married|divorced",
        "pet": r"pets?|dog|cat",
    }.items()
}

Order = Literal["newer", "older", "same"]
AddSynthesis = Callable[[Synthesis], Awaitable[object]]


# --- pure rules -----------------------------------------------------------------------------------


def may_change_a_fact(text: str) -> bool:
    """Whether a note names a fact the supersession question covers, or a change (the gate)."""
    return _MAY_CHANGE.search(text) is not None


def time_of(note: Note) -> datetime:
    """When a note's statement holds from: its event time, else when it was stored."""
    return as_utc(note.event_time or note.created_at)


def order(note: Note, other: Note) -> Order:
    """Is ``note`` newer than, older than, or at the same time as ``other``?"""
    a, b = time_of(note), time_of(other)
    return "newer" if a > b else "older" if a < b else "same"


def speaker(text: str) -> str | None:
    """The speaker of a conversation line ('Ann: ...'), if the note is one."""
    m = _SPEAKER.match(text)
    return m.group(1) if m else None


def fact_kinds(text: str) -> set[str]:
    """The kinds of changeable fact a note's words name (home, work, manager, ...)."""
    return {kind for kind, pattern in _FACT_KINDS.items() if pattern.search(text)}


def may_state_the_same_fact(note: Note, other: Note) -> bool:
    """Whether the two notes name a kind of fact in common (the gate's second half)."""
    return bool(fact_kinds(note.content) & fact_kinds(other.content))


# A person's home, job or hobby changes between conversations, not between two lines of one: two notes
# less than this apart (and not at the same time, a clash) elaborate, they do not supersede ("I moved to
# Berlin for a new job", then "I work at the Charite now": the 1.5B said yes to this pair in two of
# three runs of the updates gold; no gold supersession is within a sitting).
SITTING = timedelta(hours=1)


def within_a_sitting(note: Note, other: Note) -> bool:
    """Stated minutes apart, in one sitting, but not at the same time."""
    return timedelta(0) < abs(time_of(note) - time_of(other)) < SITTING


# A name right after a greeting or thanks, right before a comma, "!" or "?", or after a comma at the
# end of a sentence is the person spoken to, not the one spoken about: LoCoMo's lines greet the other
# speaker by name ("Hey Jon, ...", "Thanks, Gina!", "Sorry about your job Jon, but ...", "That's great,
# Jon."), and conv-30's supersession pass let such lines supersede the other speaker's. A name in a
# list ("Jon, Ann and I") is lost with them: a missed cross-speaker pair costs less than a wrong one.
_GREETING = re.compile(
    r"\b(?:hey|hi|hello|thanks|thank you|dear|oh|wow|yes|yeah|no|bye|congrats|congratulations|sorry)[\s,]*$",
    re.IGNORECASE,
)
_ENDS_SENTENCE = re.compile(r"\s*(?:[.;:]|$)")
_BEFORE_A_PAUSE = re.compile(r"\s*[,!?]")


def names_as_subject(text: str, name: str) -> bool:
    """Does ``text`` speak about ``name`` (a first name), not merely to them?"""
    for m in re.finditer(rf"\b{re.escape(name)}\b", text, re.IGNORECASE):
        before, after = text[: m.start()], text[m.end() :]
        addressed = (
            _GREETING.search(before)
            or _BEFORE_A_PAUSE.match(after)
            or (before.rstrip().endswith(",") and _ENDS_SENTENCE.match(after))
        )
        if not addressed:
            return True
    return False


def same_person(note: Note, other: Note) -> bool:
    """Could the two notes be about the same person? Lines of two different speakers only when one
    speaks about the other's speaker (Bo saying Ann moved out), not to them; anything else may be."""
    a, b = speaker(note.content), speaker(other.content)
    if a is None or b is None or a == b:
        return True
    first_a, first_b = a.split()[0], b.split()[0]
    return names_as_subject(note.content[len(a) + 1 :], first_b) or names_as_subject(
        other.content[len(b) + 1 :], first_a
    )


def decide(
    note: Note, other: Note, p_yes: float, threshold: float, *, reason: str = ""
) -> Supersession | Conflict | None:
    """What one judged pair becomes: nothing below the threshold (or across scopes); the newer note
    superseding the older; a conflict when both hold from the same time."""
    if note.scope != other.scope or note.id == other.id or not math.isfinite(p_yes) or p_yes < threshold:
        return None
    p = round(p_yes, 3)
    which = order(note, other)
    if which == "same":
        return Conflict(note_id=note.id, other_id=other.id, at=time_of(note), reason=reason, p_yes=p)
    newer, older = (note, other) if which == "newer" else (other, note)
    return Supersession(newer_id=newer.id, older_id=older.id, at=time_of(newer), reason=reason, p_yes=p)


def superseded_before(row: TimelineRow | None, when: datetime) -> bool:
    """A note already superseded at or before ``when``: its successor speaks for it."""
    return row is not None and row.valid_to is not None and as_utc(row.valid_to) <= when


def judged_again(note: Note, old: Note, row: TimelineRow) -> bool:
    """An already superseded note is judged again by a new note naming a kind of fact that it names and
    none of its successors does: "junior developer at Brightwave and my manager there is Priya",
    superseded by the manager's change, still has its job to lose ("I left Brightwave and started at
    Nordlight"). A chain of one fact (Lyon, Paris, Berlin) is never judged twice. A successor said in
    the new note's sitting does not speak for it: the two lines tell one change ("I moved to Berlin for
    a new job", then "I work as a nurse at the Charite now": when the first superseded "I work as a
    nurse at the Edouard Herriot", the second was never asked, and "where did Maya work before?" was
    answered with the new hospital in one run of the updates gold)."""
    kinds = fact_kinds(note.content) & fact_kinds(old.content)
    when = time_of(note)
    for successor in row.newer:
        if successor.since is None or abs(as_utc(successor.since) - when) >= SITTING:
            kinds -= fact_kinds(successor.content)
    return bool(kinds)


def reason_of(earlier: Note, later: Note) -> str:
    day = time_of(later).strftime("%Y-%m-%d")
    return f"newer statement of {day} replaces the one of {time_of(earlier).strftime('%Y-%m-%d')}"


# --- the write side -------------------------------------------------------------------------------


async def candidates(
    store: NoteStore, built: ConstructedNote, settings: Settings, skip: frozenset[str] = frozenset()
) -> list[Note]:
    """Notes of the scope the new note may supersede or clash with (nothing stored); never ``skip``."""
    note, k = built.note, settings.supersession_candidates
    words = " ".join([note.content, *note.keywords, *note.tags])
    share = settings.common_word_share if settings.common_word_share < 1.0 else None
    vector, text = await asyncio.gather(
        store.vector_search(built.embedding, note.scope, 4 * k, exclude_ids=[note.id]),
        store.fulltext_search(words, note.scope, 2 * k, embedding=built.embedding, common_share=share),
    )
    fused = retrieve.fuse(vector, [m for m in text if m.note.id != note.id], settings.fulltext_weight)
    kept = [
        h.note
        for h in fused
        if h.note.id != note.id
        and h.note.id not in skip
        and h.note.category != SYNTHESIS  # a synthesis is superseded by its successor synthesis only
        and same_person(note, h.note)
        and (
            not settings.supersession_gate
            or (may_state_the_same_fact(note, h.note) and not within_a_sitting(note, h.note))
        )
    ]
    return kept[: 2 * k]


async def record(
    store: NoteStore,
    llm: LLMCaller,
    settings: Settings,
    built: ConstructedNote,
    result: AddResult,
    *,
    skip: frozenset[str] = frozenset(),
) -> AddResult:
    """After an add: judge the candidates, write supersessions and conflicts, re-check the notes
    linked to the superseded ones; everything reported in ``result`` (refusals in ``rejected``).
    ``skip``: notes never judged from this side (the later notes of an ingest judge this one).
    The note is marked judged unless the model failed (a resumed ingest then judges it again)."""
    note, usage, threshold = built.note, built.usage, settings.supersession_threshold
    if settings.supersession_gate and not may_change_a_fact(note.content):
        await store.mark_judged(note.id, note.scope)
        return result
    try:
        found = await candidates(store, built, settings, skip)
        rows = {r.note_id: r for r in await store.timeline([n.id for n in found], note.scope)}
        when = time_of(note)
        judged = [
            n
            for n in found
            if (row := rows.get(n.id)) is None or not superseded_before(row, when) or judged_again(note, n, row)
        ][: settings.supersession_candidates]
        probs = await asyncio.gather(*(_judge(llm, note, n, usage) for n in judged))
        passed = [(n, p) for n, p in zip(judged, probs, strict=True) if p >= threshold]
        coexist = await asyncio.gather(*(_judge(llm, note, n, usage, coexist_messages) for n, _ in passed))
    except LLMError as exc:
        log.warning("supersession check failed, nothing superseded: %s", exc)
        result.rejected.append(f"supersession check skipped: {exc}")
        return result
    for (other, p), both in zip(passed, coexist, strict=True):
        if both >= settings.supersession_coexist_max:
            result.rejected.append(_BOTH_HOLD.format(id=other.id, p=both))
            continue
        earlier, later = (other, note) if order(note, other) != "older" else (note, other)
        found_change = decide(note, other, p, threshold, reason=reason_of(earlier, later))
        if isinstance(found_change, Supersession):
            s = found_change
            if await store.supersede(
                s.newer_id, s.older_id, note.scope, at=s.at, reason=s.reason, p_yes=s.p_yes, caused_by=note.id
            ):
                result.superseded.append(s)
        elif isinstance(found_change, Conflict):
            c = found_change
            if await store.conflict(
                c.note_id, c.other_id, note.scope, at=c.at, reason=c.reason, p_yes=c.p_yes, caused_by=note.id
            ):
                result.conflicts.append(c)
    await store.mark_judged(note.id, note.scope)
    try:
        result.knock_on = await knock_on(store, llm, note, result.superseded, usage, threshold)
    except LLMError as exc:
        result.rejected.append(f"knock-on check skipped: {exc}")
    return result


_BOTH_HOLD = "supersession of {id} refused: both notes can be true at once (P(yes) {p:.2f})"
_BOTH_HOLD_ID = re.compile(r"^supersession of (\S+) refused: both notes can be true at once")


def refused_as_both_hold(rejected: str) -> str | None:
    """The earlier note of a pair the second question refused, from an ``AddResult.rejected`` line."""
    m = _BOTH_HOLD_ID.match(rejected)
    return m.group(1) if m else None


async def _judge(
    llm: LLMCaller,
    note: Note,
    other: Note,
    usage: Usage,
    messages: Callable[[Note, Note], list[BaseMessage]] = supersede_messages,
) -> float:
    """P(yes) of a pair question, the earlier note first."""
    earlier, later = (other, note) if order(note, other) != "older" else (note, other)
    return await llm.yes_probability(messages(earlier, later), usage)


async def judge_supersession(llm: LLMCaller, earlier: Note, later: Note, usage: Usage) -> float:
    """P(yes) that two notes state different values of the same fact about the same person."""
    return await llm.yes_probability(supersede_messages(earlier, later), usage)


async def judge_knock_on(llm: LLMCaller, linked: Note, change: Note, usage: Usage) -> float:
    """P(yes) that ``linked`` is out of date after the change ``change`` states."""
    return await llm.yes_probability(knock_on_messages(linked, change), usage)


async def knock_on(
    store: NoteStore,
    llm: LLMCaller,
    note: Note,
    superseded: Sequence[Supersession],
    usage: Usage,
    threshold: float,
) -> list[KnockOn]:
    """The notes linked to each note the new note superseded (not by FOLLOWS, not superseded
    themselves), each judged by one yes/no question against the new note. Reported only; nothing is
    written."""
    skip = {note.id, *(s.older_id for s in superseded)}
    pairs: list[tuple[Note, str]] = []
    for s in superseded:
        if s.newer_id != note.id:  # the new note is the older fact: its own links are fresh
            continue
        for link in await store.links(s.older_id, note.scope, limit=100):
            if link.type == LinkType.FOLLOWS:
                continue
            other_id = link.target_id if link.source_id == s.older_id else link.source_id
            if other_id in skip:
                continue
            other = await store.get(other_id, note.scope)
            if other is None:
                continue
            skip.add(other_id)
            pairs.append((other, s.older_id))
            if len(pairs) >= KNOCK_ON_MAX * max(1, len(superseded)):
                break
    probs = await asyncio.gather(*(judge_knock_on(llm, o, note, usage) for o, _ in pairs))
    return [
        KnockOn(
            note_id=o.id,
            superseded_id=via,
            newer_id=note.id,
            p_yes=round(p, 3),
            outdated=math.isfinite(p) and p >= threshold,
        )
        for (o, via), p in zip(pairs, probs, strict=True)
    ]


async def to_judge(store: NoteStore, report: IngestReport) -> list[IngestItem]:
    """The items of an agentic ingest whose notes the supersession pass must judge, in the items'
    order: the notes it added enriched, and its ``EXISTING`` notes never judged (the run that stored
    them stopped before its pass, which runs last: two notes both stored then would otherwise never be
    judged against each other, and a rerun that adds nothing must still judge them)."""
    items = sorted(report.items, key=lambda x: x.index)
    by_scope: dict[Scope, list[str]] = {}
    for it in items:
        if it.status == IngestStatus.EXISTING and it.note_id:
            by_scope.setdefault(it.scope, []).append(it.note_id)
    unjudged = {i for sc, ids in by_scope.items() for i in await store.unjudged(ids, sc)}
    return [
        it
        for it in items
        if it.note_id
        and (
            (it.status == IngestStatus.ADDED and it.enrichment == EnrichmentStatus.DONE)
            or (it.status == IngestStatus.EXISTING and it.note_id in unjudged)
        )
    ]


async def record_ingested(
    store: NoteStore,
    llm: LLMCaller,
    settings: Settings,
    report: IngestReport,
    pending: Sequence[IngestItem],
    *,
    concurrency: int,
    on_judged: Callable[[int, int], None] | None = None,
) -> None:
    """``record`` for ``pending`` (``to_judge``), once the ingest's notes are all stored: each note is
    judged against the notes before it (stored earlier, or earlier in the batch), never a later one,
    which judges it from its own side; so every pair is asked once. Results go to the items;
    ``on_judged(done, total)`` hears of each judged note (the pass takes an LLM call or more per note
    after the ingest's own bar has ended)."""
    added = list(pending)
    later = [frozenset(it.note_id for it in added[i + 1 :] if it.note_id) for i in range(len(added))]
    gate = asyncio.Semaphore(max(1, concurrency))
    judged = 0
    if on_judged is not None:
        on_judged(0, len(added))

    async def one(item: IngestItem, skip: frozenset[str]) -> None:
        nonlocal judged
        async with gate:
            assert item.note_id is not None
            note = await store.get(item.note_id, item.scope, with_embedding=True)
            if note is not None and note.embedding and note.enrichment == EnrichmentStatus.DONE:
                built = ConstructedNote(note=note, embedding=list(note.embedding))
                result = await record(store, llm, settings, built, AddResult(note=note, created=True), skip=skip)
                item.superseded, item.conflicts, item.knock_on = result.superseded, result.conflicts, result.knock_on
                item.rejected.extend(result.rejected)
                item.usage.add(built.usage)
                report.usage.add(built.usage)
        judged += 1
        if on_judged is not None:
            on_judged(judged, len(added))

    await asyncio.gather(*(one(it, skip) for it, skip in zip(added, later, strict=True)))


# --- consolidation that only adds -------------------------------------------------------------------

SYNTHESIS = "synthesis"  # the category of a synthesis note
_QUOTE_CHARS = 300


def synthesis_id(source_ids: Sequence[str]) -> str:
    """A synthesis note's id: derived from its sources, so consolidating twice writes it once."""
    return "syn-" + hashlib.sha256("\n".join(sorted(source_ids)).encode("utf-8")).hexdigest()[:40]


def synthesis_of(head: TimelineEntry, older: Sequence[TimelineEntry]) -> Synthesis:
    """The dated history of one supersession chain in its notes' own words (no model writes it)."""
    past = sorted(older, key=lambda e: (as_utc(e.since) if e.since else _EPOCH, e.note_id), reverse=True)

    def quote(e: TimelineEntry) -> str:
        return '"' + (e.content if len(e.content) <= _QUOTE_CHARS else e.content[: _QUOTE_CHARS - 3] + "...") + '"'

    parts = [f"since {_day(head.since)}: {quote(head)}"]
    parts += [f"{_day(e.since)} to {_day(e.until)}: {quote(e)}" for e in past]
    sources = [head.note_id, *(e.note_id for e in past)]
    return Synthesis(
        note_id=synthesis_id(sources),
        content=f"History, derived from {len(sources)} notes: " + "; ".join(parts) + ".",
        sources=sources,
        since=head.since or _EPOCH,
    )


async def consolidate(store: NoteStore, add: AddSynthesis, scope: Scope, *, dry_run: bool) -> ConsolidationResult:
    """One synthesis note per supersession chain of the scope (the current note and every note it
    superseded), with DERIVED_FROM links to each; a chain that grew supersedes its earlier synthesis.
    ``dry_run`` proposes and writes nothing. Sources never change; a synthesis is undone like any add."""
    proposals = [synthesis_of(head, older) for head, older in await store.chains(scope)]
    earlier = {p.note_id: synthesis_id(p.sources[1:]) for p in proposals if len(p.sources) > 2}
    stored = await store.existing_ids([*(p.note_id for p in proposals), *earlier.values()], scope)
    for p in proposals:
        if p.note_id in stored:
            p.status = "exists"
            continue
        if earlier.get(p.note_id) in stored:
            p.replaces = earlier[p.note_id]
        if dry_run:
            continue
        await add(p)
        await store.derive(p.note_id, p.sources, scope)
        if p.replaces is not None:
            await store.supersede(
                p.note_id, p.replaces, scope, at=p.since, reason="a longer history", p_yes=None, caused_by=p.note_id
            )
        p.status = "written"
    return ConsolidationResult(dry_run=dry_run, syntheses=proposals)


# --- the read side --------------------------------------------------------------------------------


def _valid_at(entry_since: datetime | None, until: datetime | None, at: datetime) -> bool:
    return (entry_since is None or as_utc(entry_since) <= at) and (until is None or as_utc(until) > at)


def status_of(row: TimelineRow, as_of: datetime | None) -> Literal["current", "superseded", "future"]:
    if as_of is not None and as_utc(row.since) > as_of:
        return "future"
    if row.valid_to is not None and (as_of is None or as_utc(row.valid_to) <= as_of):
        return "superseded"
    return "current"


def stand_in(row: TimelineRow, as_of: datetime | None) -> TimelineEntry | None:
    """The note that holds instead of a superseded (or, at ``as_of``, not yet true) one."""
    if as_of is None:
        pool = [e for e in row.newer if e.until is None]
    else:
        pool = [e for e in [*row.newer, *row.older] if _valid_at(e.since, e.until, as_of)]
    pool.sort(key=lambda e: (as_utc(e.since) if e.since else _EPOCH, e.note_id), reverse=True)
    return pool[0] if pool else None


def timeline_of(row: TimelineRow, as_of: datetime | None) -> NoteTimeline:
    def known(e: TimelineEntry) -> bool:
        return as_of is None or e.since is None or as_utc(e.since) <= as_of

    history = sorted(
        (e for e in row.older if known(e)), key=lambda e: as_utc(e.since) if e.since else _EPOCH, reverse=True
    )
    return NoteTimeline(
        status=status_of(row, as_of),
        valid_to=row.valid_to,
        superseded_by=row.superseded_by,
        history=history,
        conflicts=[e for e in row.conflicts if known(e)],
    )


async def annotate(
    store: NoteStore,
    hits: Sequence[SearchHit],
    scope: Scope,
    *,
    history: bool = False,
    as_of: datetime | None = None,
) -> list[SearchHit]:
    """Hits marked with where they stand in time. Default: a superseded hit gives its place to its
    current note (once); ``as_of``: the state at that time (notes not yet true stand aside too);
    ``history``: every hit kept, marked."""
    at = as_utc(as_of) if as_of is not None else None
    rows = {r.note_id: r for r in await store.timeline([h.note.id for h in hits], scope)}
    out: list[SearchHit] = []
    seen: set[str] = set()
    pending: list[tuple[int, TimelineEntry, SearchHit]] = []
    for h in hits:
        row = rows.get(h.note.id)
        if row is None:
            if h.note.id not in seen:
                seen.add(h.note.id)
                out.append(h)
            continue
        status = status_of(row, at)
        if history or status == "current":
            if h.note.id in seen:
                continue
            seen.add(h.note.id)
            out.append(h.model_copy(update={"timeline": timeline_of(row, at)}))
            continue
        instead = stand_in(row, at)
        if instead is None or instead.note_id in seen:
            if instead is None and status == "superseded":  # no current note known: keep it, marked
                seen.add(h.note.id)
                out.append(h.model_copy(update={"timeline": timeline_of(row, at)}))
            continue
        seen.add(instead.note_id)
        pending.append((len(out), instead, h))
        out.append(h)  # placeholder, replaced below
    if pending:
        ids = [e.note_id for _, e, _ in pending]
        extra = {r.note_id: r for r in await store.timeline(ids, scope)}
        drop: list[int] = []
        for i, entry, hit in pending:
            current = await store.get(entry.note_id, scope)
            row = extra.get(entry.note_id)
            if current is None or row is None:
                drop.append(i)
                continue
            mark = timeline_of(row, at).model_copy(update={"replaces_hit": hit.note.id})
            out[i] = SearchHit(note=current, score=hit.score, found_by=hit.found_by, timeline=mark)
        out = [h for i, h in enumerate(out) if i not in set(drop)]
    return out


async def with_current(store: NoteStore, hits: Sequence[SearchHit], scope: Scope) -> list[SearchHit]:
    """Hits of ``history`` mode (every hit, marked) with each superseded hit followed by its current
    note, marked, unless that note is a hit already: what ``ask`` shows by default, so the model
    reads both statements, each marked, in time order."""
    present = {h.note.id for h in hits}
    superseded = [h for h in hits if h.timeline is not None and h.timeline.status == "superseded"]
    rows = {r.note_id: r for r in await store.timeline([h.note.id for h in superseded], scope)}
    wanted: dict[str, TimelineEntry] = {}
    for h in superseded:
        row = rows.get(h.note.id)
        entry = stand_in(row, None) if row is not None else None
        if entry is not None and entry.note_id not in present:
            wanted.setdefault(h.note.id, entry)
    if not wanted:
        return list(hits)
    extra = {r.note_id: r for r in await store.timeline([e.note_id for e in wanted.values()], scope)}
    out: list[SearchHit] = []
    for h in hits:
        out.append(h)
        entry = wanted.get(h.note.id)
        if entry is None or entry.note_id in present:
            continue
        current, row = await store.get(entry.note_id, scope), extra.get(entry.note_id)
        if current is None or row is None:
            continue
        present.add(current.id)
        mark = timeline_of(row, None).model_copy(update={"replaces_hit": h.note.id})
        out.append(SearchHit(note=current, score=h.score, found_by=h.found_by, timeline=mark))
    return out


def _day(value: datetime | None, text: str | None = None) -> str:
    if text:
        return text
    return value.strftime("%-d %B %Y") if value is not None else "an unknown date"


Asked = Literal["now", "before"]

# The words a question uses to ask about the past or the present (checked in that order: "what did she
# play before she switched, and what now" wants the history shown). A question that names a year or a
# month asks about then ("currently doing in August 2023", "the week before April 10"): neither.
_ASKS_BEFORE = re.compile(
    r"\b(before|previous(ly)?|used to|former(ly)?|original(ly)?|at first|earlier|"
    r"in the past|prior to)\b",
    re.IGNORECASE,
)
_ASKS_NOW = re.compile(
    r"\b(now|current(ly)?|these days|nowadays|at the moment|at present|still|today|latest|any ?more|no longer)\b",
    re.IGNORECASE,
)
_DATED = re.compile(
    r"\b(1[89]\d\d|20\d\d|January|February|March|April|May|June|July|August|September|October|November|"
    r"December)\b"
)


def asks_about(question: str) -> Asked | None:
    """Whether a question asks about the past or the present, from its words (no LLM)."""
    if _DATED.search(question):
        return None
    if _ASKS_BEFORE.search(question):
        return "before"
    if _ASKS_NOW.search(question):
        return "now"
    return None


def mark_of(tl: NoteTimeline | None, *, with_history: bool = True) -> str | None:
    """The line under a note in the answer context, if its place in time is worth saying;
    ``with_history=False`` leaves out the "before" lines (a question about now)."""
    if tl is None:
        return None
    parts: list[str] = []
    if tl.status == "superseded":
        parts.append(f"SUPERSEDED since {_day(tl.valid_to)}")
    elif tl.history:
        parts.append("CURRENT")
    if tl.history and with_history:
        before = "; ".join(
            f'until {_day(e.until)}: "{e.content}" (since {_day(e.since, e.since_text)})' for e in tl.history[:3]
        )
        parts.append(f"before: {before}")
    if tl.conflicts:
        clash = "; ".join(f'"{e.content}" ({_day(e.since, e.since_text)})' for e in tl.conflicts[:3])
        parts.append(f"CLASH with: {clash}")
    return " | ".join(parts) if parts else None


def context_marks(hits: Sequence[SearchHit], *, with_history: bool = True) -> dict[str, str]:
    """Note id -> its mark, for the notes that have one (a synthesis note says it is derived)."""
    marks: dict[str, str] = {}
    for h in hits:
        parts = [m for m in (mark_of(h.timeline, with_history=with_history),) if m]
        if h.note.category == SYNTHESIS:
            parts.insert(0, "DERIVED: a summary of other notes")
        if parts:
            marks[h.note.id] = " | ".join(parts)
    return marks


def clash_of(used: Sequence[SearchHit]) -> str | None:
    """When the best note of an answer's context clashes with another (a recorded conflict: no order
    in time), both statements with their dates, said by the service whatever the model answered."""
    if not used or used[0].timeline is None or not used[0].timeline.conflicts:
        return None
    best = used[0]
    stated = [(best.note.content, _day(best.note.event_time or best.note.created_at, best.note.event_time_text))]
    stated += [(e.content, _day(e.since, e.since_text)) for e in best.timeline.conflicts[:2]]  # type: ignore[union-attr]
    return "The memory holds conflicting statements: " + "; ".join(f'"{c}" ({d})' for c, d in stated) + "."


def with_rule(instructions: str | None, marks: Mapping[str, str], asked: Asked | None = None) -> str | None:
    """The answer instructions plus the rule for marked notes (only when a note is marked), and what
    the question asks about when it asks about now or before."""
    if not marks:
        return instructions
    rules = [TIMELINE_RULE, *([{"now": NOW_RULE, "before": BEFORE_RULE}[asked]] if asked else []), instructions]
    return "\n".join(r for r in rules if r)
