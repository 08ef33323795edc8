"""MiniLM embeddings: vectors pinned to an independent reference, batching, caching, the factory.

The reference (tests/fixtures/minilm_reference.json) comes from tools/make_minilm_reference.py,
a pure-Python tokenizer + float64 NumPy forward pass sharing no code with the onnxruntime path.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_openai import OpenAIEmbeddings
from pydantic import SecretStr

from graphmem.config import Settings
from graphmem.embeddings import MiniLMEmbeddings, embedding_dimensions, make_embedder
from graphmem.embeddings.minilm import (
    MAX_SEQ_LENGTH,
    load_minilm_tokenizer,
    minilm_model_dir,
    onnx_cache_path,
)
from graphmem.errors import ConfigError

REFERENCE = json.loads((Path(__file__).parent.parent / "fixtures" / "minilm_reference.json").read_text("utf-8"))
REF_TEXTS: list[str] = [s["text"] for s in REFERENCE["sentences"]]
MIN_COSINE = 0.9999

MIXED = [
    "hi",
    "A much longer sentence about graph databases, vector indexes and agentic memory systems.",
    "",
    "Zettelkasten notes link to each other.",
    "ok then " * 40,
    "Ünïcödé and 中文 too",
    "short",
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("minilm-cache")


@pytest.fixture(scope="module")
def minilm(cache_dir: Path) -> MiniLMEmbeddings:
    return MiniLMEmbeddings(cache_dir=cache_dir, batch_size=32, threads=2)


def _cosine(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- exactness ---
def test_reference_was_made_from_these_weights() -> None:
    import hashlib

    weights = (minilm_model_dir() / "model.safetensors").read_bytes()
    assert hashlib.sha256(weights).hexdigest() == REFERENCE["weights_sha256"]


def test_vectors_match_the_independent_reference(minilm: MiniLMEmbeddings) -> None:
    vectors = minilm.embed_documents(REF_TEXTS)
    for ref, vec in zip(REFERENCE["sentences"], vectors, strict=True):
        assert _cosine(vec, ref["vector"]) >= MIN_COSINE, ref["text"][:40]


def test_query_vectors_match_the_reference(minilm: MiniLMEmbeddings) -> None:
    for ref in REFERENCE["sentences"]:
        assert _cosine(minilm.embed_query(ref["text"]), ref["vector"]) >= MIN_COSINE


def test_tokenization_matches_reference_and_truncates_at_256() -> None:
    tokenizer = load_minilm_tokenizer(minilm_model_dir(), max_length=MAX_SEQ_LENGTH)
    for ref in REFERENCE["sentences"]:
        assert tokenizer.encode(ref["text"]).ids == ref["token_ids"]
    assert max(len(s["token_ids"]) for s in REFERENCE["sentences"]) == MAX_SEQ_LENGTH  # the long one is cut


def test_text_beyond_the_token_limit_is_ignored(minilm: MiniLMEmbeddings) -> None:
    long_text = REF_TEXTS[-1]
    a, b = minilm.embed_documents([long_text, long_text + " But this tail is far past token 256."])
    assert _cosine(a, b) > 0.999999


# --- shape, order, batching ---
def test_unit_vectors_of_384_floats(minilm: MiniLMEmbeddings) -> None:
    vectors = minilm.embed_documents(MIXED)
    assert len(vectors) == len(MIXED)
    for vec in vectors:
        assert len(vec) == 384 == minilm.dimensions
        assert all(isinstance(x, float) for x in vec)
        assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5)


def test_empty_input_gives_empty_output(minilm: MiniLMEmbeddings) -> None:
    assert minilm.embed_documents([]) == []
    assert minilm.embed_array([]).shape == (0, 384)


def test_order_is_preserved(minilm: MiniLMEmbeddings) -> None:
    forward = np.array(minilm.embed_documents(MIXED))
    backward = np.array(minilm.embed_documents(MIXED[::-1]))
    np.testing.assert_allclose(backward[::-1], forward, atol=1e-5)


@pytest.mark.parametrize(("batch_size", "sort_by_length"), [(1, True), (2, True), (3, False), (64, False)])
def test_batching_gives_the_same_vectors_as_one_by_one(
    minilm: MiniLMEmbeddings, cache_dir: Path, batch_size: int, sort_by_length: bool
) -> None:
    one_by_one = np.array([minilm.embed_query(t) for t in MIXED])
    batched = MiniLMEmbeddings(cache_dir=cache_dir, batch_size=batch_size, sort_by_length=sort_by_length)
    np.testing.assert_allclose(np.array(batched.embed_documents(MIXED)), one_by_one, atol=1e-5)


def test_similar_texts_are_closer_than_unrelated_ones(minilm: MiniLMEmbeddings) -> None:
    cat, kitten, tax = minilm.embed_documents(
        ["The cat sleeps on the sofa.", "A kitten is napping on the couch.", "Quarterly tax filing deadlines."]
    )
    assert _cosine(cat, kitten) > _cosine(cat, tax) + 0.3


def test_a_bare_string_is_refused(minilm: MiniLMEmbeddings) -> None:
    with pytest.raises(TypeError):
        minilm.embed_array("not a list")


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        MiniLMEmbeddings(batch_size=0)
    with pytest.raises(ValueError):
        MiniLMEmbeddings(threads=0)


# --- LangChain interface, async, threads ---
async def test_async_methods_match_sync(minilm: MiniLMEmbeddings) -> None:
    embedder: Embeddings = minilm
    docs = await embedder.aembed_documents(MIXED[:3])
    query = await embedder.aembed_query(MIXED[1])
    np.testing.assert_allclose(docs, minilm.embed_documents(MIXED[:3]), atol=1e-6)
    np.testing.assert_allclose(query, docs[1], atol=1e-5)
    assert await embedder.aembed_documents([]) == []


def test_concurrent_first_use_from_threads(cache_dir: Path, minilm: MiniLMEmbeddings) -> None:
    fresh = MiniLMEmbeddings(cache_dir=cache_dir)  # not loaded yet: the threads race to load it
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(fresh.embed_query, MIXED))
    np.testing.assert_allclose(results, minilm.embed_documents(MIXED), atol=1e-5)


# --- laziness and the graph cache ---
def test_constructor_does_no_io(tmp_path: Path) -> None:
    cache = tmp_path / "not-yet"
    embedder = MiniLMEmbeddings(cache_dir=cache)
    assert not cache.exists()
    embedder.embed_query("now it loads")
    assert [p.suffix for p in cache.iterdir()] == [".onnx"]  # no temp file left behind


def test_cached_graph_is_reused(minilm: MiniLMEmbeddings, cache_dir: Path) -> None:
    minilm.embed_query("make sure the graph exists")
    path = onnx_cache_path(minilm_model_dir(), cache_dir)
    stamp = path.stat().st_mtime_ns
    MiniLMEmbeddings(cache_dir=cache_dir).embed_query("second instance")
    assert path.stat().st_mtime_ns == stamp


def test_damaged_cache_file_is_rebuilt(tmp_path: Path) -> None:
    path = onnx_cache_path(minilm_model_dir(), tmp_path)
    path.write_bytes(b"truncated garbage")
    vec = MiniLMEmbeddings(cache_dir=tmp_path).embed_query(REF_TEXTS[0])
    assert _cosine(vec, REFERENCE["sentences"][0]["vector"]) >= MIN_COSINE
    assert path.stat().st_size > 80_000_000


# --- the factory ---
@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("NEO4J_", "GRAPHMEM_")) or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no stray .env


@pytest.mark.usefixtures("clean_env")
def test_make_embedder_minilm(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, embed_batch_size=8, embed_threads=1)
    embedder = make_embedder(settings)
    assert isinstance(embedder, MiniLMEmbeddings)
    assert (embedder.cache_dir, embedder.batch_size, embedder.threads) == (settings.cache_dir, 8, 1)
    assert embedding_dimensions(embedder) == 384
    assert not settings.cache_dir.exists()  # built on first use, not by the factory


@pytest.mark.usefixtures("clean_env")
def test_make_embedder_openai_constructs_without_network() -> None:
    settings = Settings(
        embedder="openai",
        openai_embedding_model="text-embedding-3-large",
        embedding_dimensions=256,
        llm_api_key=SecretStr("sk-test"),
        llm_base_url="http://127.0.0.1:9/v1",
    )
    embedder = make_embedder(settings)
    assert isinstance(embedder, OpenAIEmbeddings)
    assert embedder.model == "text-embedding-3-large"
    assert embedder.dimensions == 256
    assert embedder.check_embedding_ctx_length is False  # else tiktoken downloads its tables
    assert isinstance(embedder.openai_api_key, SecretStr)
    assert embedder.openai_api_key.get_secret_value() == "sk-test"
    assert embedder.openai_api_base == "http://127.0.0.1:9/v1"
    assert embedding_dimensions(embedder) == 256


@pytest.mark.usefixtures("clean_env")
def test_make_embedder_openai_needs_a_key_or_a_base_url() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_embedder(Settings(embedder="openai"))
    local = make_embedder(Settings(embedder="openai", llm_base_url="http://127.0.0.1:9/v1"))
    assert isinstance(local, OpenAIEmbeddings)


@pytest.mark.usefixtures("clean_env")
def test_openai_native_dimensions_need_no_call() -> None:
    embedder = make_embedder(Settings(embedder="openai", llm_api_key=SecretStr("sk-test")))
    assert embedding_dimensions(embedder) == 1536  # text-embedding-3-small; base URL unset, so no call


def test_embedding_dimensions_of_other_embedders() -> None:
    class Probe(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[0.0] * 5 for _ in texts]

        def embed_query(self, text: str) -> list[float]:
            return [0.0] * 5

    assert embedding_dimensions(DeterministicFakeEmbedding(size=7)) == 7
    assert embedding_dimensions(Probe()) == 5
