"""langchain-tests' standard ``RetrieversIntegrationTests`` on GraphmemRetriever, in every search
mode, over a scope whose notes are linked (so the links and hybrid modes do reach linked notes)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from graphmem.config import Settings
from graphmem.integrations.langchain import GraphmemRetriever
from graphmem.models import Scope
from graphmem.service.sync import MemoryService
from tests.fakes import ScriptedChatModel, amem_responder

FACTS = [
    "Melanie runs a pottery studio in Portland.",
    "Melanie's pottery studio sells bowls at the Portland market.",
    "Melanie teaches a pottery class on Saturdays.",
    "Melanie's kiln broke last spring and the studio closed for a week.",
    "Jon opened a dance studio downtown.",
    "Jon's dance studio offers salsa on Fridays.",
]
_ENV: dict[str, Any] = {}


@pytest.fixture(scope="module", autouse=True)
def linked_notes(settings: Settings, embedder: Any, graph: Any) -> Iterator[None]:
    """One blocking service and one scope for the module; every note links to a neighbour."""
    scope = Scope(user_id=f"test-std-{uuid.uuid4().hex[:8]}")
    with MemoryService(settings, chat_model=ScriptedChatModel(amem_responder()), embedder=embedder) as svc:
        for fact in FACTS:
            svc.add(fact, scope)
        assert sum(len(svc.links(n.id, scope)) for n in svc.list(scope)) >= len(FACTS) - 1
        _ENV.update(service=svc, scope=scope)
        yield
    graph.q("MATCH (n) WHERE n.user_id = $u DETACH DELETE n", u=scope.user_id)


class _Standard(RetrieversIntegrationTests):
    mode = "hybrid"

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return GraphmemRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"service": _ENV["service"], "scope": _ENV["scope"], "mode": self.mode, "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return "pottery studio"


class TestHybrid(_Standard):
    mode = "hybrid"


class TestLinks(_Standard):
    mode = "links"


class TestVector(_Standard):
    mode = "vector"


@pytest.mark.parametrize("mode", ["links", "hybrid"])
def test_include_links_puts_linked_notes_on_top_of_k(mode: str) -> None:
    svc, scope = _ENV["service"], _ENV["scope"]
    counted = GraphmemRetriever(service=svc, scope=scope, k=2, mode=mode).invoke("pottery studio")
    extended = GraphmemRetriever(service=svc, scope=scope, k=2, mode=mode, include_links=True).invoke("pottery studio")
    assert len(counted) == 2
    assert len(extended) > 2 and any("link" in d.metadata["found_by"] for d in extended)
    assert [d.id for d in extended][:1] == [d.id for d in counted][:1]
