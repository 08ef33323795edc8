"""Comparing answer systems fairly: a seeded, stratified question sample and paired bootstrap intervals.

Both are pure functions (no I/O, no clock): the same inputs and seed give the same output on every
machine, so a sample chosen in one session is the sample a later session resumes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

# Groups of questions a difference is reported for: categories 1-4 together (Mem0's convention,
# "overall"), each category, and category 5 in both of its scoring modes.
GROUPS: tuple[str, ...] = ("overall", "1", "2", "3", "4", "5-amem", "5-locomo")


def _rank_key(seed: int, item_key: str) -> str:
    return hashlib.sha256(f"{seed}:{item_key}".encode()).hexdigest()


def stratified_sample(
    items: Sequence[T],
    n: int,
    *,
    stratum: Callable[[T], Hashable],
    key: Callable[[T], str],
    seed: int = 0,
) -> list[T]:
    """``n`` items, the strata in proportion to their sizes, chosen by a seeded hash of each item's key.

    - Each stratum gets ``n * size / total`` items, rounded by largest remainder (ties: the larger
      stratum, then the stratum's order of first appearance), so the shares match the data's.
    - Within a stratum the items with the smallest ``sha256(seed:key)`` are taken: the choice does not
      depend on the order of ``items``, nor on the other strata, and a larger ``n`` keeps what a smaller
      one chose within each stratum whose quota grew.
    - The result keeps the input order; ``n >= len(items)`` returns every item.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    if n >= len(items):
        return list(items)
    groups: dict[Hashable, list[int]] = {}
    for i, item in enumerate(items):
        groups.setdefault(stratum(item), []).append(i)
    total = len(items)
    exact = {g: n * len(idx) / total for g, idx in groups.items()}
    quota = {g: int(v) for g, v in exact.items()}
    order = list(groups)
    left = n - sum(quota.values())
    by_remainder = sorted(order, key=lambda g: (-(exact[g] - quota[g]), -len(groups[g]), order.index(g)))
    for g in by_remainder[:left]:
        quota[g] += 1
    chosen: set[int] = set()
    for g, idx in groups.items():
        ranked = sorted(idx, key=lambda i: _rank_key(seed, key(items[i])))
        chosen.update(ranked[: quota[g]])
    return [items[i] for i in sorted(chosen)]


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, reps: int = 2000, seed: int = 0
) -> dict[str, float] | None:
    """Mean of ``a - b`` over paired questions and its 95 % percentile-bootstrap interval.

    The same questions are resampled for both arms (paired), ``reps`` times, from a generator seeded
    with ``seed``. None when there is nothing to pair; raises when the lengths differ.
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length ({len(a)} vs {len(b)})")
    if not a:
        return None
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if reps > 0:
        rng = np.random.default_rng(seed)
        means = diff[rng.integers(0, len(diff), size=(reps, len(diff)))].mean(axis=1)
    else:
        means = diff[None, :].mean(axis=1)
    return {
        "mean": float(diff.mean()),
        "ci95_low": float(np.percentile(means, 2.5)),
        "ci95_high": float(np.percentile(means, 97.5)),
        "n": len(diff),
    }


def question_groups(category: int) -> list[str]:
    """The comparison groups a question of ``category`` counts in."""
    if category == 5:
        return ["5-amem", "5-locomo"]
    return ["overall", str(category)]


def score_of(record: Mapping[str, Any], group: str, metric: str) -> float | None:
    """A scored record's value of ``metric`` in ``group`` (None for a failed answer)."""
    if record.get("error") or "scores" not in record:
        return None
    scores = record["scores"]
    mode = group.split("-", 1)[1] if group.startswith("5-") else "standard"
    value = scores.get(mode, {}).get(metric)
    return None if value is None else float(value)


def compare_systems(
    records: Iterable[Mapping[str, Any]],
    systems: Sequence[str],
    *,
    metric: str = "f1",
    reps: int = 2000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Every pair of systems (in the given order, ``a`` before ``b``): the paired difference ``a - b`` of
    ``metric`` per group with its bootstrap interval, over the questions both answered (failed answers
    pair with nothing)."""
    by_system: dict[str, dict[tuple[Any, Any], Mapping[str, Any]]] = {s: {} for s in systems}
    for r in records:
        if r["system"] in by_system:
            by_system[r["system"]][(r["sample_id"], r["qa_index"])] = r
    out = []
    for a, b in combinations(systems, 2):
        groups: dict[str, Any] = {}
        for group in GROUPS:
            xs, ys = [], []
            for qkey in sorted(set(by_system[a]) & set(by_system[b]), key=str):
                ra, rb = by_system[a][qkey], by_system[b][qkey]
                if group not in question_groups(int(ra["category"])):
                    continue
                va, vb = score_of(ra, group, metric), score_of(rb, group, metric)
                if va is None or vb is None:
                    continue
                xs.append(va)
                ys.append(vb)
            result = paired_bootstrap(xs, ys, reps=reps, seed=seed)
            if result is not None:
                groups[group] = result
        out.append({"a": a, "b": b, "metric": metric, "groups": groups})
    return out
