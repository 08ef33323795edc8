"""From query text to a Lucene query for the full-text index: escaped words, stop words dropped.

Neo4j's built-in analyzers (5.26 and 2026) all stop the same 33 words (Lucene's
``ENGLISH_STOP_WORDS_SET``: "a", "the", "is", ...), which keep "I", "my", "do", "have", "what" and
"you". Those words are in most conversational notes, so a query such as "What kind of dog do I
have?" matched every first-person note and ranked them by how often they say "I". Custom analyzers
need a server plugin; instead the query side drops a fuller list (the Snowball English list and the
pieces contractions split into), so only the words that carry the question's meaning reach the
index. Words that only shape a question ("kind", "many", "type") were tried as stop words too and
cost recall on LoCoMo (docs/evaluation.md), so they stay.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Lucene special characters, escaped in user text before it reaches the full-text index.
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')
_WORD = re.compile(r"\w+", re.UNICODE)

# The Snowball English stop list (Porter), written as \w+ splits it ("don't" -> "don", "t").
_SNOWBALL = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
it its itself they them their theirs themselves what which who whom this that these those am is are was were be
been being have has had having do does did doing would should could ought a an the and but if or because as until
while of at by for with about against between into through during before after above below to from up down in
out on off over under again further then once here there when where why how all any both each few more most other
some such no nor not only own same so than too very
"""
# Contraction pieces and auxiliaries the Snowball list spells with an apostrophe, plus NLTK's additions.
_PIECES = """
s t m d ll ve re don didn doesn isn aren wasn weren hasn haven hadn won wouldn shan shouldn can couldn mustn
cannot let will just now also
"""
# The words a full-text query leaves out before it reaches the index (see above); not the guards'
# list (``service/wording.GUARD_STOP_WORDS``), which measures words of notes and reasons.
LUCENE_STOP_WORDS: frozenset[str] = frozenset((_SNOWBALL + _PIECES).split())


def query_terms(text: str, max_terms: int = 32) -> list[str]:
    """The words of ``text`` that reach the full-text index: stop words dropped, first ``max_terms``."""
    return [w for w in _WORD.findall(text) if w.lower() not in LUCENE_STOP_WORDS][:max_terms]


def lucene_of(words: Sequence[str]) -> str | None:
    """OR of escaped words: user text never reaches Lucene's query syntax unescaped. None when no
    word is given (a query of stop words only finds nothing by text; vector search still runs)."""
    if not words:
        return None
    return " OR ".join(_LUCENE_SPECIAL.sub(r"\\\1", w) for w in words)


def in_fields(lucene: str, fields: Sequence[str]) -> str:
    """``lucene`` asked of some of the index's fields only (names from ``models.TEXT_FIELDS``, never
    user text): ``content:(a OR b) OR tags:(a OR b)``."""
    return " OR ".join(f"{field}:({lucene})" for field in fields)


def lucene_query(text: str, max_terms: int = 32) -> str | None:
    """The Lucene query of ``text``'s content words (``query_terms``), or None."""
    return lucene_of(query_terms(text, max_terms))
