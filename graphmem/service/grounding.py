"""Grounding of what the LLM writes about a note: every claim of an enrichment must be supported by
the note's own text.

A small model writing a note's context invents: whose sister, who offered whom, background the
turn never gave ("He has been running for several months"). A context is embedded with the note
and shown in every answer context, so an invented claim becomes a "fact" of the memory. The checks
here are deterministic and read only the note:

- **names**: a sentence that names someone or something the note does not (the speaker counts);
- **owner**: the note says "your sister" (the listener's) and the sentence makes it the speaker's
  ("his sister", "Tom's sister");
- **actor**: the note says "Anika offered me" and the sentence says "Priya offered Anika", or the note
  says "she is the one who convinced me" and the sentence "Priya ... and convinces her";
- **invented**: a sentence whose meaning words are mostly not in the note (at least two of them,
  and a third or more of its words): background, reasons, judgements the turn never gave.

A sentence that fails a check is dropped and the reason reported; the sentences that pass stay.
Keywords must be the note's own words. Tags may name a category the note does not say ("health" for
a physiotherapist's advice), but not one taken from a refused sentence: "Tom: Eight mugs ..." got the
context "Tom has been learning to make coffee" (refused) and the tag "coffee", which then reached
search. A note is ``"Speaker: text"`` (LoCoMo, the demo, the LangChain plugin); without a speaker the
owner and actor checks have nobody to resolve and pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from graphmem.service import wording

_SPEAKER = re.compile(r"^\s*([A-Z][\w.'-]{0,40}(?: [A-Z][\w.'-]{0,40})?):\s")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
_OWNED = re.compile(r"\b(your|my|his|her|their|our)\s+([a-z][a-z-]{2,})\b", re.IGNORECASE)
_POSSESSIVE_NAME = re.compile(r"\b([A-Z][a-z]+)'s\s+([a-z][a-z-]{2,})\b")
# "Anika offered me", "Priya offered Anika": a name (or I/me), a verb, a name (or me/you).
_ACTION = re.compile(
    r"\b([A-Z][a-z]+|I|You|you)\s+([a-z]{3,}ed|gave|took|told|sent|sold|bought|made|asked)\s+([A-Z][a-z]+|me|you|him|her)\b"
)
_THIRD_PERSON = {"his", "her", "their"}
# "I sold", "Anika offered": who does what, read as (subject, verb stem); "I" is the speaker.
_SUBJECT_VERB = re.compile(r"\b(I|[A-Z][a-z]+)\s+(?:just |finally |also |already |now |then )?([a-z]{3,})\b")
# "Are you nervous", "you were tired": what the note says of the person spoken to.
_LISTENER_STATE = re.compile(
    r"\b(?:are|were) you (?:so |very |really )?([a-z]{3,})|\byou (?:are|were|feel|felt|seem|look)(?: so| very| really)? ([a-z]{3,})",
    re.IGNORECASE,
)
# "convinced me", "told me": what was done to the speaker (the verb's object is "me").
_DONE_TO_ME = re.compile(r"\b([a-z]{3,})\s+me\b")
# "Anika convinced her", "Priya ... and convinces her": the word before the verb (a name or "and"),
# the verb and its object.
_DONE_TO = re.compile(r"\b([A-Z][a-z]+|and)\s+([a-z]{3,})\s+(her|him|them|[A-Z][a-z]+)\b")
# "Priya is the one who convinced Anika": the name the relative clause is about is the verb's subject.
_ONE_WHO = re.compile(
    r"\b([A-Z][a-z]+)\s+(?:is|was)\s+the\s+(?:one|person)\s+who\s+([a-z]{3,})\s+(her|him|them|[A-Z][a-z]+)\b"
)
# A relative clause or a new subject between the first name and "and": the verb is not the name's.
_OTHER_SUBJECT = re.compile(r"\b(which|who|whom|whose|that|it|he|she|they)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(I|me|my|mine|myself|we|us|our)\b|\bI'", re.IGNORECASE)
# Words that frame what the speaker does with the turn ("Tom asks whether ..."): never a claim.
_FRAMING = frozenset(
    wording.stem(w)
    for w in [
        "asks",
        "whether",
        "says",
        "tells",
        "shares",
        "plans",
        "wants",
        "expresses",
        "mentions",
        "feels",
        "thinks",
        "finds",
        "wonders",
        "questions",
        "notes",
        "explains",
        "describes",
        "announces",
        "reports",
        "updates",
        "replies",
        "responds",
        "agrees",
        "suggests",
        "hopes",
        "recalls",
        "remembers",
        "speaker",
        "someone",
        "something",
        "person",
        "other",
        "friend",
    ]
)

# A sentence is invented when at least this many of its meaning words are missing from the note ...
INVENTED_MIN_WORDS = 2
# ... and they are at least this share of its meaning words.
INVENTED_MIN_SHARE = 1 / 3


@dataclass
class Grounding:
    """What survived the checks and why the rest was dropped."""

    context: str
    keywords: list[str]
    refused: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)


def speaker_of(content: str) -> str | None:
    """The speaker of a ``"Speaker: text"`` note, or None."""
    m = _SPEAKER.match(content)
    return m.group(1) if m else None


def said(content: str) -> str:
    """What a note says, without its "Speaker:" prefix (two turns of one speaker share only the name)."""
    speaker = speaker_of(content)
    return content[len(speaker) + 1 :] if speaker else content


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def _owned_by_listener(content: str) -> set[str]:
    """Things the note calls the listener's ("your sister") and nobody else's."""
    owners: dict[str, set[str]] = {}
    for owner, thing in _OWNED.findall(content):
        owners.setdefault(thing.lower(), set()).add(owner.lower())
    return {thing for thing, who in owners.items() if who == {"your"}}


def _actions(text: str, speaker: str | None) -> set[tuple[str, str, str]]:
    """(subject, verb stem, object) of simple "X verbed Y" clauses, "I"/"me" read as the speaker."""
    out: set[tuple[str, str, str]] = set()
    for subject, verb, obj in _ACTION.findall(text):
        s = speaker if subject == "I" and speaker else subject
        o = speaker if obj == "me" and speaker else obj
        out.add((s.lower(), wording.stem(verb), o.lower()))
    return out


def _subject_verbs(text: str, speaker: str) -> set[tuple[str, str]]:
    """(subject, verb stem) pairs of "Name verb" / "I verb" clauses, "I" read as the speaker."""
    out: set[tuple[str, str]] = set()
    for subject, verb in _SUBJECT_VERB.findall(text):
        if verb in wording.GUARD_STOP_WORDS and verb not in ("has", "had", "was", "did"):
            continue  # "Anika is", "Tom and": no action
        out.add(((speaker if subject == "I" else subject).lower(), wording.stem(verb)))
    return out


def _done_by_speaker(sentence: str, body: str, speaker: str) -> str | None:
    """A verb the note says was done *to* the speaker ("convinced me") that the sentence makes the
    speaker do to someone else: the subject is the name before the verb, or for "... and verb" the
    sentence's first name when nothing between them starts another clause ("which", "who", "she")."""
    done_to_me = {wording.stem(v) for v in _DONE_TO_ME.findall(body) if v not in wording.GUARD_STOP_WORDS}
    if not done_to_me:
        return None
    for subject, verb, obj in _deeds(sentence):
        if subject == speaker and obj != speaker and wording.stem(verb) in done_to_me:
            return f"makes {speaker} the one who {verb} someone, where the note says it was done to {speaker}"
    return None


def _deeds(sentence: str) -> Iterator[tuple[str | None, str, str]]:
    """(subject, verb, object) of "X is the one who verb Y", "X verb Y" and "X ... and verb Y" (the
    subject None when another clause starts between the name and "and")."""
    yield from _ONE_WHO.findall(sentence)
    names = [(m.start(), m.group(0)) for m in re.finditer(r"\b[A-Z][a-z]+\b", sentence)]
    for m in _DONE_TO.finditer(sentence):
        before, verb, obj = m.groups()
        if before != "and":
            yield before, verb, obj
            continue
        first = names[0] if names and names[0][0] < m.start() else None
        between = sentence[first[0] : m.start()] if first else ""
        yield (first[1] if first and not _OTHER_SUBJECT.search(between) else None), verb, obj


def sentence_refusal(sentence: str, content: str, speaker: str | None) -> str | None:
    """Why a context sentence is not supported by the note, or None when it is."""
    body = content[len(speaker) + 1 :] if speaker else content
    known = {w.lower() for w in wording.words(content)}
    missing = sorted(n for n in wording.proper_names(sentence) if n.lower() not in known)
    if missing:
        return f"names {', '.join(missing)}, not in the note"
    if speaker:
        listeners = _owned_by_listener(body)
        for owner, thing in _OWNED.findall(sentence):
            if thing.lower() in listeners and owner.lower() in _THIRD_PERSON:
                return f"makes '{thing}' someone's own where the note says 'your {thing}'"
        for name, thing in _POSSESSIVE_NAME.findall(sentence):
            if thing.lower() in listeners and name == speaker:
                return f"makes '{thing}' {speaker}'s where the note says 'your {thing}'"
        said = _actions(body, speaker)
        for s, v, o in _actions(sentence, speaker):
            if (s, v, o) not in said and (o, v, s) in said:
                return f"swaps who did what: the note says {o.title()} {v}… {s.title()}"
        reversed_ = _done_by_speaker(sentence, body, speaker)
        if reversed_:
            return reversed_
        done = _subject_verbs(body, speaker)
        for subject, verb in _subject_verbs(sentence, speaker):
            if verb in _FRAMING or (subject, verb) in done:
                continue
            others = sorted(s for s, v in done if v == verb and s != subject)
            if others:
                who = speaker if speaker.lower() in others else others[0].title()
                return f"makes {subject.title()} do what the note says {who} did ({verb}…)"
            if subject == speaker.lower() and not _FIRST_PERSON.search(body):
                return f"says what {speaker} did, where the note says nothing of {speaker}'s own ({verb}…)"
        for state in {w.lower() for pair in _LISTENER_STATE.findall(body) for w in pair if w}:
            if re.search(
                rf"\b(?:{re.escape(speaker)}|she|he|they)\s+(?:is|was|feels|felt|seems|looks)\s+(?:\w+\s+)?{state}\b",
                sentence,
                re.IGNORECASE,
            ):
                return f"gives {speaker} what the note says of the person spoken to ({state})"
    words = wording.content_words(sentence) - _FRAMING - {wording.stem(speaker or "")}
    unsupported = words - wording.content_words(content)
    if len(unsupported) >= INVENTED_MIN_WORDS and len(unsupported) >= INVENTED_MIN_SHARE * len(words):
        return f"says what the note does not ({', '.join(sorted(unsupported)[:5])})"
    return None


def ground(content: str, context: str, keywords: list[str], tags: Sequence[str] = ()) -> Grounding:
    """The context's supported sentences, the note's own keywords and the tags no refused sentence
    invented, with a reason for each drop."""
    speaker = speaker_of(content)
    kept: list[str] = []
    refused: list[str] = []
    invented: set[str] = set()  # words of refused sentences the note does not say
    note_words = wording.content_words(content)
    for sentence in sentences(context):
        why = sentence_refusal(sentence, content, speaker)
        if why is None:
            kept.append(sentence)
        else:
            refused.append(f"context sentence {sentence!r} {why}")
            invented |= wording.content_words(sentence) - note_words - _FRAMING
    # A kept sentence's words are supported, whatever a refused one also said.
    invented -= wording.content_words(" ".join(kept))
    own: list[str] = []
    for keyword in keywords:
        words = wording.content_words(keyword)
        if words and not words <= note_words:
            refused.append(f"keyword {keyword!r} is not in the note")
        else:
            own.append(keyword)
    kept_tags: list[str] = []
    for tag in tags:
        from_refused = wording.content_words(tag) & invented
        if from_refused:
            refused.append(f"tag {tag!r} repeats a refused sentence ({', '.join(sorted(from_refused))})")
        else:
            kept_tags.append(tag)
    return Grounding(" ".join(kept), own, refused, kept_tags)
