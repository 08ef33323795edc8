"""Realistic vectors for the Neo4j 2026 research (docs/neo4j-2026.md): MiniLM embeddings of LoCoMo text.

Sentences come from the LoCoMo turns, observations, event and session summaries (9,424 distinct
sentences in 20 streams); a note is every sentence once, then windows of one to three consecutive
sentences of one stream, often joined by a nearby sentence of the same stream, so notes read like
memory notes of one conversation and are distinct texts. Queries are the
LoCoMo questions. Everything is embedded with graphmem's own MiniLM embedder and cached:

    .venv/bin/python tools/research/corpus.py --data ../shared/data/locomo/locomo-dev.json \
        --notes 100000 --out $GRAPHMEM_HOME/research

writes notes.npy (float32, n x 384, unit length), notes.json (texts), queries.npy, queries.json.

`--mix` embeds only the sentences (about 9,400: a minute or two) and makes each note's vector the
normalised sum of its sentences' vectors: an approximation of embedding the joined text, good for
index latency at sizes up to millions (the 1M experiments), not for recall claims about MiniLM.
LoCoMo is CC BY-NC: these files stay in the data folder, never in the repository.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

from graphmem.config import load_settings
from graphmem.embeddings import make_embedder

_SPLIT = re.compile(r"(?<=[.!?])\s+")


def streams(data: list[dict]) -> list[list[str]]:
    """One list of sentences per source text stream (a conversation's turns, its observations, ...)."""
    out: list[list[str]] = []
    for sample in data:
        conv = sample["conversation"]
        turns = []
        for key, value in conv.items():
            if key.startswith("session_") and isinstance(value, list):
                for turn in value:
                    text = turn.get("text", "").strip()
                    if text:
                        turns.append(f"{turn['speaker']}: {text}")
        out.append([s for t in turns for s in _SPLIT.split(t) if len(s) > 12])
        obs = [o[0] for sess in sample["observation"].values() for per in sess.values() for o in per]
        out.append(obs)
        events = [e for sess in sample["event_summary"].values() for k, v in sess.items() if k != "date" for e in v]
        out.append(events)
        summ = [s for text in sample["session_summary"].values() for s in _SPLIT.split(text) if len(s) > 12]
        out.append(summ)
    return [s for s in out if s]


def make_note_parts(data: list[dict], n: int, seed: int = 7) -> tuple[list[str], list[tuple[int, ...]]]:
    """The distinct sentences, and each note as the indices of its sentences."""
    rng = random.Random(seed)
    sources = streams(data)
    weights = [len(s) for s in sources]
    sentences = sorted({s for src in sources for s in src})
    index = {s: i for i, s in enumerate(sentences)}
    notes: set[tuple[int, ...]] = {(i,) for i in range(min(n, len(sentences)))}  # every sentence once
    while len(notes) < n:
        # A window of 1-3 consecutive sentences, often joined by a nearby one (same stream, within 40):
        # distinct texts that still read like a memory note of one conversation.
        src = rng.choices(sources, weights)[0]
        width = rng.choice((1, 2, 2, 3))
        start = rng.randrange(max(1, len(src) - width + 1))
        parts = src[start : start + width]
        if rng.random() < 0.7:
            parts = [*parts, src[min(len(src) - 1, max(0, start + rng.randint(-40, 40)))]]
        notes.add(tuple(index[s] for s in parts))
    out = sorted(notes)
    rng.shuffle(out)
    return sentences, out[:n]


def make_notes(data: list[dict], n: int, seed: int = 7) -> list[str]:
    sentences, notes = make_note_parts(data, n, seed)
    return [" ".join(sentences[i] for i in parts) for parts in notes]


def mix(data: list[dict], n: int, embedder: object, out: Path) -> None:
    """--mix: note vectors as normalised sums of their sentences' vectors (see the module text)."""
    sentences, notes = make_note_parts(data, n)
    sent = np.asarray(embedder.embed_documents(sentences), dtype=np.float32)  # type: ignore[attr-defined]
    vecs = np.zeros((len(notes), 384), dtype=np.float32)
    for j, parts in enumerate(notes):
        vecs[j] = sent[list(parts)].sum(axis=0)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    (out / "notes.json").write_text(json.dumps(["" for _ in notes]))  # texts are not needed for latency
    np.save(out / "notes.npy", vecs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--notes", type=int, default=100_000)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--mix", action="store_true", help="note vectors from sentence vectors (fast; see above)")
    args = ap.parse_args()
    data = json.loads(args.data.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    embedder = make_embedder(load_settings())
    queries = sorted({qa["question"] for s in data for qa in s["qa"]})
    outputs = [("queries", queries)]
    if args.mix:
        mix(data, args.notes, embedder, args.out)
    else:
        outputs.append(("notes", make_notes(data, args.notes)))
    for name, texts in outputs:
        (args.out / f"{name}.json").write_text(json.dumps(texts))
        done = args.out / f"{name}.npy"
        partial = args.out / f"{name}.partial.npy"
        vecs = np.zeros((len(texts), 384), dtype=np.float32)
        start = 0
        if partial.exists():  # resume: embedding 100k notes takes most of an hour on 2 busy cores
            old = np.load(partial)
            start = len(old)
            vecs[:start] = old
        t0 = time.monotonic()
        step = 512
        for i in range(start, len(texts), step):
            vecs[i : i + step] = np.asarray(embedder.embed_documents(texts[i : i + step]), dtype=np.float32)
            end = min(i + step, len(texts))
            print(f"{name}: {end}/{len(texts)} ({time.monotonic() - t0:.0f}s)", file=sys.stderr)
            if (end // step) % 16 == 0:
                np.save(partial, vecs[:end])
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        np.save(done, vecs)
        partial.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
