"""The browser tests use the integration fixtures (real MiniLM embedder, direct Cypher for checks)."""

from tests.integration.conftest import embedder, graph  # noqa: F401  (fixtures, re-exported)
