"""The benchmark's pure parts: the tenant layout, recall for small tenants, embeddings reused across servers."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from graphmem.evaluation.bench import ReusedEmbeddings, recall_at, tenant_sizes


def test_the_tenant_layout_gives_half_to_one_and_one_percent_to_the_searched_tenant() -> None:
    sizes = tenant_sizes(100_000, 100)
    assert sizes[:2] == [50_000, 1_000] and sum(sizes) == 100_000 and len(sizes) == 100
    assert set(sizes[2:]) == {500}
    odd = tenant_sizes(2_003, 100)
    assert sum(odd) == 2_003 and odd[1] == 20 and max(odd[2:]) - min(odd[2:]) <= 1
    with pytest.raises(ValueError):
        tenant_sizes(100, 100)


def test_recall_counts_a_tenant_smaller_than_k_as_complete_when_all_are_found() -> None:
    assert recall_at([["a", "b", "c"]], [["c", "b", "a"]], 10) == 1.0
    assert recall_at([["a", "x"]], [["a", "b"]], 10) == 0.5
    assert recall_at([[f"n{i}" for i in range(10)]], [[f"n{i}" for i in range(5, 15)]], 10) == 0.5
    assert recall_at([], [["a"]], 10) is None


class Counting(DeterministicFakeEmbedding):
    calls: int = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += len(texts)
        return super().embed_documents(texts)


def test_reused_embeddings_embed_each_text_once_and_never_cache_queries() -> None:
    inner = Counting(size=8)
    reused = ReusedEmbeddings(inner)
    assert reused.dimensions == 8
    first = reused.embed_documents(["a", "b", "a"])
    again = reused.embed_documents(["b", "c"])
    assert inner.calls == 3  # a, b, then c
    assert first[1] == pytest.approx(again[0]) and first[0] == pytest.approx(first[2])
    assert first[0] == pytest.approx(inner.embed_query("a"))
