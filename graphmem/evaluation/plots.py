"""PNG plots of evaluation and benchmark results (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

MODE_LABELS = {
    "vector": "graphmem vector",
    "links": "graphmem links",
    "hybrid": "graphmem hybrid (default)",
    "dense": "dense exact (NumPy)",
    "full": "full conversation",
}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_recall(result: dict[str, Any], path: Path) -> Path:
    """Evidence recall@k and context tokens@k per mode (retrieval evaluation)."""
    plt = _plt()
    ks = result["config"]["ks"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mode, data in result["modes"].items():
        o = data["overall"]
        rec = [o.get(f"recall@{k}") for k in ks]
        tok = [o.get(f"tokens@{k}") for k in ks]
        style = "--" if mode in ("dense", "full") else "-"
        ax1.plot(ks, rec, style, marker="o", label=MODE_LABELS.get(mode, mode))
        ax2.plot(ks, tok, style, marker="o", label=MODE_LABELS.get(mode, mode))
    ax1.set(xlabel="k", ylabel="evidence recall", title="Evidence recall@k (LoCoMo cat. 1-4)", ylim=(0, 1.02))
    ax2.set(xlabel="k", ylabel="context tokens per question", title="Context size@k", yscale="log")
    ax2.axhline(1000, color="grey", lw=0.8, ls=":")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_latency(result: dict[str, Any], path: Path) -> Path:
    """Search latency p50 vs scope size (benchmark)."""
    plt = _plt()
    sizes = [r["size"] for r in result["sizes"]]
    series = {
        "graphmem vector (embedding given)": "vector",
        "graphmem vector + 1 hop (embedding given)": "links",
        "graphmem vector (query text)": "vector_with_embedding",
        "bare HNSW query, ids only": "index_ids_only",
        "exact NumPy top-k": "numpy_exact",
        "brute-force Cypher scan": "brute_force_cypher",
    }
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, key in series.items():
        ys = [r[key]["p50_ms"] for r in result["sizes"]]
        ax.plot(sizes, ys, marker="o", label=label)
    ax.set(xscale="log", yscale="log", xlabel="notes in scope", ylabel="p50 latency (ms)", title="Search latency")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_ingest(result: dict[str, Any], path: Path) -> Path:
    """Notes/s by notes in flight, against one add after another and the ideal (sequential x N)."""
    plt = _plt()
    rows = result["stub"]["levels"]
    seq = next((r for r in rows if r["concurrency"] is None), None)
    levels = [r for r in rows if r["concurrency"] is not None]
    xs = [r["concurrency"] for r in levels]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(xs, [r["notes_per_s"] for r in levels], marker="o", label="ingest(concurrency=N)")
    if seq and seq["notes_per_s"]:
        ax.axhline(seq["notes_per_s"], color="grey", ls="--", lw=1, label="one add after another")
        ax.plot(xs, [seq["notes_per_s"] * x for x in xs], color="grey", ls=":", lw=1, label="ideal: sequential x N")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="notes in flight",
        ylabel="notes/s",
        title=f"A-MEM ingest against a stub LLM ({result['config']['latency']} s per call)",
    )
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_qa(result: dict[str, Any], path: Path, metric: str = "f1") -> Path:
    """Per-category score of each system (QA evaluation)."""
    plt = _plt()
    systems = list(result["systems"])
    cats = sorted({c for s in systems for c in result["systems"][s]["by_category"]}, key=lambda c: (int(c[0]), c))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(len(systems), 1)
    for i, s in enumerate(systems):
        vals = [(result["systems"][s]["by_category"].get(c, {}).get(metric) or 0) * 100 for c in cats]
        ax.bar([j + i * width for j in range(len(cats))], vals, width, label=s)
    ax.set_xticks([j + width * (len(systems) - 1) / 2 for j in range(len(cats))], cats)
    ax.set(ylabel=f"{metric} x100", xlabel="category", title=f"LoCoMo QA, {metric} per category")
    ax.legend()
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_decisions(result: dict[str, Any], path: Path) -> Path:
    """Link precision, recall of related pairs and its ceiling per gold conversation, with the targets."""
    plt = _plt()
    convs = result["conversations"]
    names = [s["conversation"] for s in convs]
    series = [
        ("precision", [s["links"]["precision"] or 0 for s in convs]),
        ("recall", [s["links"]["recall"] or 0 for s in convs]),
        ("related pairs shown", [s["links"]["candidate_recall"] or 0 for s in convs]),
    ]
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(series)
    for i, (label, vals) in enumerate(series):
        ax.bar([j + i * width for j in range(len(names))], vals, width, label=label)
    ax.axhline(0.8, color="C0", lw=0.8, ls=":")
    ax.axhline(0.5, color="C1", lw=0.8, ls=":")
    ax.set_xticks([j + width for j in range(len(names))], names, fontsize=8)
    c = result["config"]
    ax.set(ylim=(0, 1.05), ylabel="share", title=f"Link decisions against gold ({c['llm_model']})")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_links(result: dict[str, Any], path: Path) -> Path:
    """Evidence connectivity (LLM links vs random same-degree links vs nearest neighbours) and the
    ablation's budgeted recall per category and arm (links evaluation)."""
    plt = _plt()
    conn, ab = result.get("connectivity"), result.get("ablation")
    panels = [x for x in (conn, ab) if x]
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.2), squeeze=False)
    col = 0
    if conn:
        ax = axes[0][col]
        col += 1
        row = conn["subsets"]["all"]
        hops = ("hop1", "hop2")
        series = (
            ("LLM links", [row["llm"][h] or 0 for h in hops], None),
            (
                "random, same degrees",
                [(row["random"][h] or {}).get("mean", 0) for h in hops],
                [(row["random"][h] or {}).get("std", 0) for h in hops],
            ),
            ("nearest-neighbour links", [row["nearest"][h] or 0 for h in hops], None),
        )
        width = 0.8 / len(series)
        for i, (label, vals, err) in enumerate(series):
            ax.bar([j + i * width for j in range(len(hops))], vals, width, yerr=err, capsize=3, label=label)
        ax.set_xticks([j + width for j in range(len(hops))], ["1 hop", "within 2 hops"])
        ax.set(ylabel="share of evidence pairs joined", title=f"Evidence connectivity ({row['pairs']} pairs)")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    if ab:
        ax = axes[0][col]
        arms = list(ab["arms"])
        first = ab["arms"][arms[0]]
        cats = ["overall", *sorted(first["by_category"])]
        width = 0.8 / max(len(arms), 1)
        for i, arm in enumerate(arms):
            data = ab["arms"][arm]
            vals = [
                (data["overall"] if c == "overall" else data["by_category"].get(c, {})).get(ab["metric"]) or 0
                for c in cats
            ]
            ax.bar([j + i * width for j in range(len(cats))], vals, width, label=arm)
        ax.set_xticks([j + width * (len(arms) - 1) / 2 for j in range(len(cats))], cats)
        ax.set(ylabel=ab["metric"], xlabel="category", title="Ablation: links and evolution on/off", ylim=(0, 1.02))
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
