"""Word-level text measures shared by the decision guards and the decision-quality evaluation.

One definition of each measure, so that what the service refuses and what the evaluation counts
are the same thing:

- ``content_words``: lower-cased word stems of a text without stop words (words of 3+ letters and
  numbers), the unit of "is this supported by that text".
- ``copy_score``: the longest run of consecutive tokens that a text shares with a source, divided by
  the text's length in tokens. A link reason that names a connection in its own words shares short
  runs ("tomato seedlings", 2 tokens) with the notes; a pasted context shares most of itself.
- ``supported_share``: the share of a text's content words found in some source texts.
- ``proper_names``: capitalised words that are not sentence-initial function words: people, places
  and products a text talks about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_CAPITALISED = re.compile(r"\b([A-Z][a-zà-ÿ]+(?:-[A-Z][a-zà-ÿ]+)?)\b")

# A compact English stop-word list (no corpus download at run time): function words, auxiliaries,
# pronouns and the fillers small models put into contexts ("discusses", "mentions"). For the word
# measures of the guards and the decision evaluation; full-text queries drop another list
# (``store/fulltext.LUCENE_STOP_WORDS``).
GUARD_STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "couldn",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "ll",
        "me",
        "more",
        "most",
        "much",
        "must",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "re",
        "same",
        "shan",
        "she",
        "should",
        "shouldn",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "ve",
        "very",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "won",
        "would",
        "wouldn",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "m",
        "o",
        "y",
        "one",
        "ones",
        "thing",
        "things",
        "really",
        "get",
        "got",
        "getting",
        "go",
        "going",
        "gone",
        "went",
        "like",
        "well",
        "yes",
        "yeah",
        "oh",
        "ok",
        "okay",
        "still",
        "even",
        "ever",
        "every",
        "since",
        "yet",
        "note",
        "notes",
        "user",
        "speaker",
        "says",
        "said",
        "say",
        "mention",
        "mentions",
        "mentioned",
        "discuss",
        "discusses",
        "discussed",
        "talk",
        "talks",
        "talking",
        "about",
        "regarding",
        "related",
        "relation",
        "relates",
        "topic",
        "context",
        "conversation",
    ]
)

# Sentence-initial words that are capitalised without being names.
_NOT_NAMES = frozenset(w.capitalize() for w in GUARD_STOP_WORDS) | {
    "Both",
    "First",
    "Second",
    "Next",
    "Last",
    "Today",
    "Yesterday",
    "Tomorrow",
    "Congrats",
    "Congratulations",
    "Thanks",
    "Nice",
    "Wow",
    "Whoa",
    "Ha",
    "Honestly",
    "Plans",
    "Start",
    "My",
}


def words(text: str) -> list[str]:
    """Word tokens as written (letters and digits; apostrophes and punctuation split words)."""
    return _TOKEN.findall(text)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (``words``)."""
    return [t.lower() for t in words(text)]


# British and American spellings of one word share a stem: a context that writes "centering" for the
# note's "centred" or "practice" for "practise" says nothing new (the 1.5B writes American English).
_ONE_SPELLING = {
    "centr": "center",
    "theatr": "theater",
    "metr": "meter",
    "litr": "liter",
    "fibr": "fiber",
    "practis": "practic",
    "colour": "color",
    "favour": "favor",
    "favourit": "favorit",
    "flavour": "flavor",
    "honour": "honor",
    "humour": "humor",
    "labour": "labor",
    "neighbour": "neighbor",
    "behaviour": "behavior",
    "organis": "organiz",
    "realis": "realiz",
    "recognis": "recogniz",
    "apologis": "apologiz",
    "travell": "travel",
    "cancell": "cancel",
    "jewellery": "jewelry",
    "grey": "gray",
}


def stem(word: str) -> str:
    """A light suffix stripper: enough to match 'tomatoes'/'tomato', 'planted'/'plant', 'runs'/'run',
    and the British and American spellings of a word ('centred'/'centering')."""
    w = word.lower()
    for suffix, keep in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""), ("ly", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not (suffix == "s" and w.endswith(("ss", "us", "is"))):
            w = w[: len(w) - len(suffix)] + keep
            break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouls":  # 'planned' -> 'plann' -> 'plan'
        w = w[:-1]
    if len(w) >= 4 and w.endswith("e"):  # 'centred'/'centre', 'saved'/'save'
        w = w[:-1]
    return _ONE_SPELLING.get(w, w)


def content_words(text: str) -> set[str]:
    """Stems of the words that carry meaning: no stop words, 3+ letters, or a number."""
    return {stem(t) for t in tokens(text) if t not in GUARD_STOP_WORDS and (len(t) >= 3 or t.isdigit())}


def supported_share(text: str, sources: Iterable[str]) -> float:
    """Share of the text's content words that occur in the sources (1.0 for a text without any)."""
    words = content_words(text)
    if not words:
        return 1.0
    support: set[str] = set()
    for source in sources:
        support |= content_words(source)
    return len(words & support) / len(words)


def longest_common_run(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest run of consecutive tokens found in both sequences."""
    if not a or not b:
        return 0
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            if x == y:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def copy_score(text: str, source: str) -> tuple[float, int]:
    """(longest shared run / tokens of text, longest shared run): how much of text is pasted from source."""
    t = tokens(text)
    if not t:
        return 0.0, 0
    run = longest_common_run(t, tokens(source))
    return run / len(t), run


# A text "copies" a source when at least half of it is one run of 6+ consecutive tokens of the source
# (shorter runs are names: "the Elm Street community garden" is how a reason names a place).
COPY_SHARE = 0.5
COPY_MIN_RUN = 6


def copies(text: str, sources: Iterable[str]) -> bool:
    """True when the text pastes one of the sources (see COPY_SHARE, COPY_MIN_RUN)."""
    for source in sources:
        share, run = copy_score(text, source)
        if share >= COPY_SHARE and run >= COPY_MIN_RUN:
            return True
    return False


def proper_names(text: str) -> set[str]:
    """Capitalised words that name someone or something ('Anika', 'Lisbon', 'Pixel')."""
    return {m for m in _CAPITALISED.findall(text) if m not in _NOT_NAMES}
