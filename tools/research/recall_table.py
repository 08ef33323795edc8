"""The paired table the retrieval replays print (``mmr_replay.py``, ``query_rewrite.py``): per group of
categories, each arm's mean budgeted recall, its difference from the baseline arm (95 % paired
bootstrap) and how many questions had every evidence turn in the context."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TypeVar

from graphmem.evaluation.compare import paired_bootstrap

GROUPS = {"1-4": (1, 2, 3, 4), "1 multi-hop": (1,), "2 temporal": (2,), "3 open domain": (3,), "4 single hop": (4,)}
A = TypeVar("A", bound=Hashable)


def recall_lines(
    rows: Sequence[tuple[int, Mapping[A, float]]], arms: Sequence[A], baseline: A, label: Callable[[A], str]
) -> list[str]:
    """One line per group: ``rows`` are (category, recall per arm) per question."""
    out = []
    for group, cats in GROUPS.items():
        sel = [r for c, r in rows if c in cats]
        cells = []
        for arm in arms:
            mean = sum(r[arm] for r in sel) / len(sel)
            complete = sum(r[arm] == 1.0 for r in sel)
            d = paired_bootstrap([r[arm] for r in sel], [r[baseline] for r in sel])
            diff = (
                ""
                if arm == baseline or d is None
                else f" {d['mean']:+.3f} [{d['ci95_low']:+.3f}, {d['ci95_high']:+.3f}]"
            )
            cells.append(f"{label(arm)} {mean:.3f}{diff}, complete {complete}")
        out.append(f"{group:13s} n={len(sel):3d} | " + " | ".join(cells))
    return out
