"""Deterministic guards on what the LLM proposes: each returns why a proposal is refused, or None.

The LLM proposes, the service decides. These checks need no model, so they hold whatever model is
configured, and the decision-quality evaluation counts the same things with the same measures
(``service/wording.py``):

- a link reason must name the connection in its own words: it may not paste a note's text or
  context, and it must name something of both notes;
- a CONTRADICTS link must name the two statements that conflict, each found in its note;
- an evolved context must stay about its own note (drift): closer to its own note's text than to
  any other note shown, no names the note and its cause never mention, mostly its own words, and no
  paste of another note;
- keywords and tags only grow: a model cannot silently remove what a note was filed under.

(The enrichment's guard, keywords that echo the instructions, is beside enrichment: ``construct.py``.)
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.models import Note
from graphmem.service.grounding import said
from graphmem.service.wording import (
    GUARD_STOP_WORDS,
    content_words,
    copies,
    proper_names,
    stem,
    supported_share,
    words,
)

# An evolved context must have at least this share of its content words from its own note (content
# and previous context) or from the note that caused the evolution.
EVOLUTION_SUPPORT = 0.6
# A quoted conflicting statement must have at least this share of its content words in its note.
QUOTE_SUPPORT = 0.8
MAX_WORDS = 12  # keywords or tags kept per note after evolution


def _note_words(note: Note) -> set[str]:
    return content_words(" ".join([note.content, note.context, *note.keywords]))


def reason_refusal(reason: str, source: Note, target: Note) -> str | None:
    """Why a link reason is unusable: it pastes a note, or does not name something of both notes."""
    texts = [t for t in (source.content, target.content, source.context, target.context) if t]
    if copies(reason, texts):
        return "its reason copies a note's text or context"
    words = content_words(reason)
    if not (words & _note_words(source) and words & _note_words(target)):
        return "its reason does not name something of both notes"
    return None


def shared_words_reason(source: Note, target: Note, limit: int = 4) -> str:
    """A pairwise link's reason (or the one used when the model's was refused): the words both notes
    say, as the new note writes them ('Riverside', not the stem 'riversid')."""
    source_said = said(source.content)
    shared = content_words(source_said) & content_words(said(target.content))
    seen: dict[str, str] = {}  # stem -> the first surface form
    for word in words(source_said):
        low = word.lower()
        if low in GUARD_STOP_WORDS or not (len(low) >= 3 or low.isdigit()):
            continue
        key = stem(low)
        if key in shared and key not in seen:
            seen[key] = word
    named = list(seen.values())[:limit]
    if named:
        return "both mention " + ", ".join(named)
    # nothing said in common ("Are you nervous about leaving?" and "I got the offer"): the categories
    # the enrichment gave both, if any, say more than nothing
    target_tags = {t.lower() for t in target.tags}
    tags = [t for t in dict.fromkeys(source.tags) if t.lower() in target_tags][:limit]
    return "both tagged " + ", ".join(tags) if tags else "related notes"


def contradiction_refusal(new_statement: str | None, old_statement: str | None, new: Note, old: Note) -> str | None:
    """Why a CONTRADICTS proposal is unsupported: the two conflicting statements must be named, differ,
    and each be found in its own note (most of its content words)."""
    if not new_statement or not old_statement:
        return "CONTRADICTS without the two conflicting statements"
    if content_words(new_statement) == content_words(old_statement):
        return "CONTRADICTS names the same statement twice"
    if supported_share(new_statement, [new.content]) < QUOTE_SUPPORT:
        return "CONTRADICTS quotes a statement the new note does not make"
    if supported_share(old_statement, [old.content]) < QUOTE_SUPPORT:
        return "CONTRADICTS quotes a statement the neighbour does not make"
    return None


def evolution_refusal(
    context: str,
    note: Note,
    cause: Note,
    others: Sequence[Note],
    similarity_own: float,
    similarity_others: Sequence[float],
) -> str | None:
    """Why an evolved context for ``note`` (caused by adding ``cause``) is refused.

    ``similarity_own`` is the cosine between the new context and the note's own text,
    ``similarity_others`` the cosines to the other notes shown (``cause`` first, then ``others``).
    """
    if copies(context, [t for n in (cause, *others) for t in (n.content, n.context) if t]):
        return "the new context copies another note"
    if similarity_others and max(similarity_others) > similarity_own:
        return "the new context is closer to another note than to its own (drift)"
    names = proper_names(context) - proper_names(" ".join([note.content, note.context, cause.content]))
    if names:
        return f"the new context brings in {', '.join(sorted(names))}, whom the note never mentions"
    if supported_share(context, [note.content, note.context, cause.content]) < EVOLUTION_SUPPORT:
        return "the new context says things neither the note nor the new note says"
    return None


def grown(old: Sequence[str], proposed: Sequence[str] | None) -> list[str]:
    """Keywords or tags after evolution: the old ones first, then new ones, never fewer."""
    out = list(old)
    lowered = {w.lower() for w in out}
    for w in proposed or []:
        if w.lower() not in lowered and len(out) < MAX_WORDS:
            out.append(w)
            lowered.add(w.lower())
    return out
