"""The browser tests use the integration fixtures (real MiniLM embedder, direct Cypher for checks)."""

from tests.integration.conftest import embedder  # noqa: F401  (a fixture, re-exported)
