"""count_tokens: offline WordPiece counts for context budgets, and the len/4 fallback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem import tokens
from graphmem.tokens import count_tokens

REFERENCE = json.loads((Path(__file__).parent.parent / "fixtures" / "minilm_reference.json").read_text("utf-8"))


def test_empty_is_zero() -> None:
    assert count_tokens("") == 0


def test_words_and_punctuation() -> None:
    assert count_tokens("hello") == 1
    assert count_tokens("Hello, world!") == 4  # hello , world !


def test_counts_without_special_tokens_match_the_independent_tokenizer() -> None:
    # The fixture's ids come from a pure-Python WordPiece and include [CLS] and [SEP].
    for ref in REFERENCE["sentences"]:
        if len(ref["token_ids"]) < 256:  # the long one was truncated for the embedder
            assert count_tokens(ref["text"]) == len(ref["token_ids"]) - 2


def test_no_truncation() -> None:
    text = "memory " * 1000
    assert count_tokens(text) == 1000  # the shipped tokenizer.json truncates at 128: not here


def test_monotone_in_appended_text() -> None:
    words = ["Alice", "met", "Bob", "in", "Paris", "to", "discuss", "the", "graph", "database", "plan"]
    counts = [count_tokens(" ".join(words[:i])) for i in range(len(words) + 1)]
    assert counts == sorted(counts)
    assert counts[-1] > counts[1] > 0


def test_unicode() -> None:
    assert count_tokens("日本語") == 3  # one token per CJK character
    assert count_tokens("naïve café") == count_tokens("naive cafe")  # accents are stripped
    assert count_tokens("🍜") == 1  # unknown symbols still count
    assert count_tokens("Größe ändern") >= 2


def test_whitespace_only_is_zero() -> None:
    assert count_tokens("   \n\t ") == 0


def test_long_texts_bypass_the_memo_and_still_count() -> None:
    text = "graph " * 2000  # over the memo's size limit
    assert count_tokens(text) == 2000
    assert count_tokens(text) == 2000


def test_fallback_estimate_without_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_tokenizer", lambda: None)
    tokens._count_memo.cache_clear()
    try:
        assert count_tokens("") == 0
        assert count_tokens("abcd") == 1
        assert count_tokens("abcde") == 2
        assert count_tokens("x" * 400) == 100
    finally:
        tokens._count_memo.cache_clear()  # later tests must see real counts again
