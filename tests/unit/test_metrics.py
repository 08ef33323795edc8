"""Answer metrics against hand-computed values (A-MEM's set F1, LoCoMo's F1, BLEU-1, ROUGE, METEOR, cat. 5)."""

from __future__ import annotations

import math
from typing import ClassVar

import pytest

from graphmem.evaluation import metrics as m


def test_f1_is_token_set_f1_without_stemming() -> None:
    # pred {the, cat, sat}, ref {a, cat, sat, down}: P = 2/3, R = 2/4
    assert m.f1_set("The cat sat.", "a cat sat down") == pytest.approx(4 / 7)
    # sets, not multisets: duplicates do not count
    assert m.f1_set("cat cat dog", "cat dog dog") == 1.0
    # punctuation . , ! ? becomes space; no stemming
    assert m.f1_set("cats!", "cat") == 0.0
    assert m.f1_set("Pixel, obviously", "pixel") == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_locomo_f1_stems_and_counts_multisets() -> None:
    # articles and punctuation removed, Porter stems: [cat, sat] vs [cat, sit]
    assert m.locomo_f1_single("the cats sat", "cat sitting") == pytest.approx(0.5)
    # multiset overlap: cat 1 + dog 1 of 3 tokens each
    assert m.locomo_f1_single("cat cat dog", "cat dog dog") == pytest.approx(2 / 3)


def test_locomo_f1_per_category() -> None:
    # category 1: gold split on commas, each part takes its best predicted part, then the mean
    assert m.locomo_f1("running, pottery", "pottery, camping, running", 1) == pytest.approx(2 / 3)
    # category 3: the gold answer is cut at the first ';'
    assert m.locomo_f1("yes", "Yes; he trains for a marathon", 3) == 1.0
    # other categories: no comma split (LoCoMo's normaliser drops commas)
    assert m.locomo_f1("pottery, running", "running", 4) == pytest.approx(2 * 0.5 / 1.5)


def test_bleu1_with_clipping_and_brevity_penalty() -> None:
    # 5 of 6 unigrams match (the x2 clipped to 2, sat misses); same length so no brevity penalty
    assert m.bleu("the cat sat on the mat", "the cat is on the mat")["bleu1"] == pytest.approx(5 / 6)
    # precision 1, brevity penalty exp(1 - 6/2)
    assert m.bleu("the cat", "the cat sat on the mat")["bleu1"] == pytest.approx(math.exp(-2))
    # lower-cased before tokenising
    assert m.bleu("PIXEL", "pixel")["bleu1"] == 1.0


def test_rouge_uses_the_stemmer() -> None:
    r = m.rouge("the cat sat", "the cats sat down")
    assert r["rouge1"] == pytest.approx(6 / 7)  # P 3/3, R 3/4
    assert r["rouge2"] == pytest.approx(0.8)  # P 2/2, R 2/3
    assert r["rougeL"] == pytest.approx(6 / 7)


def test_meteor_exact_and_stem_matches() -> None:
    # 2 matches in one chunk: Fmean 1, penalty 0.5 * (1/2)^3
    assert m.meteor("the cat", "the cat") == pytest.approx(0.9375)
    assert m.meteor("cats running", "cat run") == pytest.approx(0.9375)
    assert m.meteor("", "cat") == 0.0


def test_exact_match_and_empty_answers() -> None:
    assert m.exact_match(" Pixel ", "pixel") == 1.0
    assert m.exact_match("Pixel the cat", "pixel") == 0.0
    assert all(v == 0.0 for v in m.text_scores("", "Pixel", 4).values())
    assert all(v == 0.0 for v in m.text_scores("Pixel", "", 4).values())


def test_word_tokenize_needs_no_nltk_data() -> None:
    assert m.word_tokenize("I went home. Then it rained!") == ["I", "went", "home", ".", "Then", "it", "rained", "!"]


def test_category_5_is_scored_in_both_modes() -> None:
    declined = m.score_answer("Not mentioned in the conversation", "self-care is important", 5)
    assert declined["locomo"]["f1"] == 1.0 and declined["locomo"]["sbert"] == 1.0
    assert declined["amem"]["f1"] == 0.0  # A-MEM scores against the distractor
    trapped = m.score_answer("self-care is important", "self-care is important", 5)
    assert trapped["locomo"]["f1"] == 0.0
    assert trapped["amem"]["f1"] == 1.0
    assert m.locomo_adversarial("No information available.") == 1.0
    assert set(m.score_answer("x", "x", 2)) == {"standard"}


def test_aggregate_by_category_and_overall_modes() -> None:
    rows = [
        {"category": 1, "scores": m.score_answer("cat", "cat", 1)},
        {"category": 1, "scores": m.score_answer("dog", "cat", 1)},
        {"category": 5, "scores": m.score_answer("not mentioned", "yellow", 5)},
    ]
    agg = m.aggregate(rows, metrics=["f1"])
    assert agg["by_category"]["1"] == {"count": 2, "f1": 0.5}
    assert agg["by_category"]["5-amem"]["f1"] == 0.0
    assert agg["by_category"]["5-locomo"]["f1"] == 1.0
    assert agg["overall"]["excluded"] == {"count": 2, "f1": 0.5}
    assert agg["overall"]["amem"]["f1"] == pytest.approx(1 / 3)
    assert agg["overall"]["locomo"]["f1"] == pytest.approx(2 / 3)


class _Vectors:
    """A tiny embedder: fixed vectors per text."""

    table: ClassVar[dict[str, list[float]]] = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]


def test_sbert_similarity_is_cosine_and_zero_for_empty() -> None:
    sims = m.sbert_similarities(["a", "a", "", "c"], ["a", "b", "a", "a"], _Vectors())
    assert sims == pytest.approx([1.0, 0.0, 0.0, 1 / math.sqrt(2)])
