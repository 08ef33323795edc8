"""Answer metrics as A-MEM's ``utils.py`` computes them, plus LoCoMo's own F1 and category-5 modes.

Everything here runs offline: no NLTK data is downloaded.

- ``f1``: A-MEM's token-SET F1 (lower-case, ``. , ! ?`` to spaces, whitespace split, sets).
- ``locomo_f1``: LoCoMo's scorer (``task_eval/evaluation.py``): articles/punctuation removed, Porter
  stems, multiset overlap; multi-hop (category 1) answers split on commas, each gold part matched by
  its best predicted part; open-domain (3) gold cut at the first ``;``.
- ``bleu1`` (and 2-4): NLTK ``sentence_bleu`` with ``SmoothingFunction().method1`` on lower-cased
  tokens. A-MEM tokenises with ``nltk.word_tokenize``, which needs the ``punkt`` data; here sentences
  are split by a regex and each is tokenised by ``NLTKWordTokenizer`` (the tokenizer ``word_tokenize``
  uses inside), which needs no data. Identical on one-sentence answers.
- ``rouge1/2/L``: ``rouge_score`` F-measure with the Porter stemmer.
- ``meteor``: NLTK METEOR on whitespace tokens. Its synonym stage needs the WordNet corpus; when that
  is not installed locally (the default here) the stage is skipped, so only exact and stem matches
  count (``METEOR_USES_WORDNET`` says which). Scores are then equal or slightly lower than A-MEM's.
- ``sbert``: cosine of the configured embedder's vectors (MiniLM: the model A-MEM uses).
- ``exact_match``: lower-cased, stripped equality.

An empty prediction or reference scores 0 on every metric (as in A-MEM).

Category 5 (adversarial) is scored in two modes: ``amem`` (metrics against the dataset's
``adversarial_answer``, as published) and ``locomo`` (1 when the prediction says "not mentioned" or
"no information available", else 0, on every metric); a third mode, ``excluded``, is the
categories 1-4 aggregate.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np

QA_METRICS = (
    "f1",
    "locomo_f1",
    "bleu1",
    "bleu2",
    "bleu3",
    "bleu4",
    "rouge1",
    "rouge2",
    "rougeL",
    "meteor",
    "exact_match",
)
CAT5_MODES = ("amem", "locomo")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LOCOMO_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = set(string.punctuation)


# --- tokenisers (no NLTK data needed) ---------------------------------------------------------------


def simple_tokenize(text: str) -> list[str]:
    """A-MEM's tokenizer for F1."""
    text = str(text).lower()
    for ch in ".,!?":
        text = text.replace(ch, " ")
    return text.split()


@cache
def _word_tokenizer() -> Any:
    from nltk.tokenize import NLTKWordTokenizer  # type: ignore[import-untyped]

    return NLTKWordTokenizer()


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize`` without punkt: regex sentence split, then NLTK's word tokenizer."""
    tok = _word_tokenizer()
    return [w for sent in _SENTENCE_END.split(str(text)) if sent for w in tok.tokenize(sent)]


@cache
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer  # type: ignore[import-untyped]

    return PorterStemmer()


# --- A-MEM metrics -----------------------------------------------------------------------------------


def f1_set(prediction: str, reference: str) -> float:
    pred, ref = set(simple_tokenize(prediction)), set(simple_tokenize(reference))
    if not pred or not ref:
        return 0.0
    common = pred & ref
    if not common:
        return 0.0
    p, r = len(common) / len(pred), len(common) / len(ref)
    return 2 * p * r / (p + r)


def bleu(prediction: str, reference: str) -> dict[str, float]:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu  # type: ignore[import-untyped]

    pred = word_tokenize(str(prediction).lower())
    ref = [word_tokenize(str(reference).lower())]
    if not pred or not ref[0]:
        return {f"bleu{n}": 0.0 for n in range(1, 5)}
    smooth = SmoothingFunction().method1
    weights = {1: (1, 0, 0, 0), 2: (0.5, 0.5, 0, 0), 3: (1 / 3, 1 / 3, 1 / 3, 0), 4: (0.25, 0.25, 0.25, 0.25)}
    return {
        f"bleu{n}": float(sentence_bleu(ref, pred, weights=w, smoothing_function=smooth)) for n, w in weights.items()
    }


@cache
def _rouge() -> Any:
    from rouge_score import rouge_scorer  # type: ignore[import-untyped]

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)


def rouge(prediction: str, reference: str) -> dict[str, float]:
    if not str(prediction).strip() or not str(reference).strip():
        return {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    scores = _rouge().score(str(reference), str(prediction))
    return {name: float(s.fmeasure) for name, s in scores.items()}


class _NoWordNet:
    """Stands in for the WordNet reader: no synonyms, so METEOR matches exact words and stems only."""

    def synsets(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []


@cache
def _wordnet() -> Any:
    try:
        import nltk  # type: ignore[import-untyped]

        nltk.data.find("corpora/wordnet.zip")
    except LookupError:
        try:
            import nltk

            nltk.data.find("corpora/wordnet")
        except LookupError:
            return _NoWordNet()
    from nltk.corpus import wordnet  # type: ignore[import-untyped]

    return wordnet


def meteor_uses_wordnet() -> bool:
    return not isinstance(_wordnet(), _NoWordNet)


def meteor(prediction: str, reference: str) -> float:
    from nltk.translate.meteor_score import meteor_score  # type: ignore[import-untyped]

    pred, ref = str(prediction).split(), str(reference).split()
    if not pred or not ref:
        return 0.0
    return float(meteor_score([ref], pred, wordnet=_wordnet()))


def exact_match(prediction: str, reference: str) -> float:
    p, r = str(prediction).strip().lower(), str(reference).strip().lower()
    return float(bool(p) and p == r)


# --- LoCoMo's F1 -------------------------------------------------------------------------------------


def locomo_normalize(text: str) -> str:
    text = str(text).replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _LOCOMO_ARTICLES.sub(" ", text)
    return " ".join(text.split())


def locomo_f1_single(prediction: str, reference: str) -> float:
    stem = _stemmer().stem
    pred = [stem(w) for w in locomo_normalize(prediction).split()]
    ref = [stem(w) for w in locomo_normalize(reference).split()]
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    p, r = same / len(pred), same / len(ref)
    return 2 * p * r / (p + r)


def locomo_f1_multi(prediction: str, reference: str) -> float:
    preds = [p.strip() for p in str(prediction).split(",")]
    refs = [g.strip() for g in str(reference).split(",")]
    return float(np.mean([max(locomo_f1_single(p, g) for p in preds) for g in refs]))


def locomo_f1(prediction: str, reference: str, category: int) -> float:
    """LoCoMo's per-category F1 (categories 1-4)."""
    if not str(prediction).strip() or not str(reference).strip():
        return 0.0
    if category == 1:
        return locomo_f1_multi(prediction, reference)
    if category == 3:
        reference = str(reference).split(";")[0].strip()
    return locomo_f1_single(prediction, reference)


def locomo_adversarial(prediction: str) -> float:
    """LoCoMo's category-5 score: did the model decline to answer?"""
    low = str(prediction).lower()
    return float("not mentioned" in low or "no information available" in low)


# --- per question and aggregate ---------------------------------------------------------------------


def text_scores(prediction: str, reference: str, category: int) -> dict[str, float]:
    """Every lexical metric of one answer (SBERT is added in batch by ``add_sbert``)."""
    prediction, reference = str(prediction or ""), str(reference or "")
    if not prediction.strip() or not reference.strip():
        return {m: 0.0 for m in QA_METRICS}
    out = {"f1": f1_set(prediction, reference)}
    out["locomo_f1"] = locomo_f1(prediction, reference, category if category in (1, 2, 3, 4) else 4)
    out.update(bleu(prediction, reference))
    out.update(rouge(prediction, reference))
    out["meteor"] = meteor(prediction, reference)
    out["exact_match"] = exact_match(prediction, reference)
    return out


def score_answer(prediction: str, reference: str, category: int) -> dict[str, dict[str, float]]:
    """Scores keyed by mode: categories 1-4 -> {"standard": ...}; category 5 -> {"amem": ..., "locomo": ...}."""
    if category != 5:
        return {"standard": text_scores(prediction, reference, category)}
    declined = locomo_adversarial(prediction)
    return {
        "amem": text_scores(prediction, reference, 5),
        "locomo": {m: declined for m in (*QA_METRICS, "sbert")},
    }


def cosine_rows(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> list[float]:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size == 0:
        return []
    num = (x * y).sum(axis=1)
    den = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
    return [float(v) for v in np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)]


def sbert_similarities(predictions: Sequence[str], references: Sequence[str], embedder: Any) -> list[float]:
    """MiniLM cosine between each prediction and its reference (0 when either is empty)."""
    idx = [i for i, (p, r) in enumerate(zip(predictions, references, strict=True)) if str(p).strip() and str(r).strip()]
    out = [0.0] * len(predictions)
    if not idx:
        return out
    vp = embedder.embed_documents([str(predictions[i]) for i in idx])
    vr = embedder.embed_documents([str(references[i]) for i in idx])
    for i, s in zip(idx, cosine_rows(vp, vr), strict=True):
        out[i] = s
    return out


def mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return float(np.mean(vals)) if vals else None


def aggregate(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str] | None = None) -> dict[str, Any]:
    """Per-category means and overall means for each category-5 mode.

    Each row: {"category": int, "scores": {mode: {metric: value}}} as made by ``score_answer``.
    Returns {"by_category": {"1": {metric: mean, "count": n}, "5-amem": ..., "5-locomo": ...},
             "overall": {"excluded": ..., "amem": ..., "locomo": ...}} (overall = mean over questions).
    """
    names = list(metrics or (*QA_METRICS, "sbert"))
    by_cat: dict[str, list[Mapping[str, float]]] = {}
    overall: dict[str, list[Mapping[str, float]]] = {"excluded": [], "amem": [], "locomo": []}
    for row in rows:
        cat = int(row["category"])
        scores = row["scores"]
        if cat == 5:
            for mode in CAT5_MODES:
                by_cat.setdefault(f"5-{mode}", []).append(scores[mode])
                overall[mode].append(scores[mode])
        else:
            by_cat.setdefault(str(cat), []).append(scores["standard"])
            for items in overall.values():
                items.append(scores["standard"])

    def summarise(items: list[Mapping[str, float]]) -> dict[str, Any]:
        out: dict[str, Any] = {"count": len(items)}
        for m in names:
            out[m] = mean(s[m] for s in items if m in s)
        return out

    order = sorted(by_cat, key=lambda k: (int(k.split("-")[0]), k))
    return {
        "by_category": {k: summarise(by_cat[k]) for k in order},
        "overall": {mode: summarise(items) for mode, items in overall.items()},
    }
