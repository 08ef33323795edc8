"""Settings: defaults, environment names, and ConfigError messages that name the bad setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.config import Settings, load_settings
from graphmem.errors import ConfigError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No developer or CI variables and no stray .env: each test sets what it needs."""
    import os

    for name in list(os.environ):
        if name.startswith(("NEO4J_", "GRAPHMEM_")) or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def test_defaults() -> None:
    s = load_settings()
    assert s.neo4j_uri == "bolt://127.0.0.1:7687"
    assert s.neo4j_auth is None
    assert s.neo4j_database == "neo4j"
    assert (s.neo4j_line, s.neo4j_version, s.neo4j_server_version) == ("5.26", None, "5.26.30")
    assert s.neo4j_browser_version == "5.24.0"
    assert (s.neo4j_http_port, s.neo4j_heap, s.neo4j_pagecache) == (7474, "1g", "512m")
    assert s.home == Path.home() / ".local" / "share" / "graphmem"
    assert s.vector_dimensions == 384
    assert s.resolved_llm_provider == "local"


def test_search_text_fields_are_the_index_fields_named_in_the_index_order(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphmem.service.retrieve import SEARCH_TEXT_FIELDS

    assert load_settings().search_fields == SEARCH_TEXT_FIELDS == ("content", "tags")
    monkeypatch.setenv("GRAPHMEM_SEARCH_TEXT_FIELDS", " tags, keywords ,content")
    s = load_settings()
    assert (s.search_text_fields, s.search_fields) == ("content,keywords,tags", ("content", "keywords", "tags"))


def test_decision_defaults_follow_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local model: pairwise links, no evolution (what measured best); other endpoints: A-MEM's
    joint decision with evolution; an explicit setting wins either way."""
    local = load_settings()
    assert (local.resolved_link_decision, local.evolution_enabled, local.link_threshold) == ("pairwise", False, 0.26)
    monkeypatch.setenv("GRAPHMEM_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    hosted = load_settings()
    assert (hosted.resolved_link_decision, hosted.evolution_enabled) == ("joint", True)
    monkeypatch.delenv("GRAPHMEM_LLM_BASE_URL")
    monkeypatch.setenv("GRAPHMEM_ENABLE_EVOLUTION", "true")
    monkeypatch.setenv("GRAPHMEM_LINK_DECISION", "joint")
    forced = load_settings()
    assert (forced.resolved_link_decision, forced.evolution_enabled) == ("joint", True)


def test_ingest_concurrency_follows_the_local_servers_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local model: one note in flight per server slot; other endpoints 8; an explicit setting wins."""
    assert load_settings().resolved_ingest_concurrency == 4
    monkeypatch.setenv("GRAPHMEM_LOCAL_LLM_PARALLEL", "3")
    assert load_settings().resolved_ingest_concurrency == 3
    monkeypatch.setenv("GRAPHMEM_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert load_settings().resolved_ingest_concurrency == 8
    monkeypatch.setenv("GRAPHMEM_INGEST_CONCURRENCY", "5")
    assert load_settings().resolved_ingest_concurrency == 5


@pytest.mark.parametrize(
    ("env", "line", "version"),
    [
        ({"GRAPHMEM_NEO4J_LINE": "2026"}, "2026", "2026.08.1"),
        ({"GRAPHMEM_NEO4J_VERSION": "2026.10.2"}, "2026", "2026.10.2"),  # the version names its line
        ({"GRAPHMEM_NEO4J_VERSION": "5.26.33"}, "5.26", "5.26.33"),
        ({"GRAPHMEM_NEO4J_LINE": "2026", "GRAPHMEM_NEO4J_VERSION": "2026.10.2"}, "2026", "2026.10.2"),
    ],
)
def test_neo4j_line_and_version(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], line: str, version: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    s = load_settings()
    assert (s.neo4j_line, s.neo4j_server_version) == (line, version)


def test_contradicting_line_and_version_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_NEO4J_VERSION", "5.26.30")
    with pytest.raises(ConfigError, match=r"5\.26\.30 is a 5\.26 version but GRAPHMEM_NEO4J_LINE=2026"):
        load_settings(neo4j_line="2026")  # what `graphmem neo4j start --line 2026` does


def test_langchain_neo4j_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URL", "neo4j://localhost:7688")
    monkeypatch.setenv("NEO4J_USERNAME", "alice")
    monkeypatch.setenv("NEO4J_PASSWORD", "s3cret-pass")
    s = load_settings()
    assert s.neo4j_uri == "neo4j://localhost:7688"
    assert s.neo4j_auth == ("alice", "s3cret-pass")
    assert "s3cret-pass" not in repr(s)  # SecretStr keeps it out of logs


def test_graphmem_prefix_and_dotenv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("GRAPHMEM_NEO4J_HTTP_PORT=17474\nGRAPHMEM_NEIGHBOUR_K=7\n")
    monkeypatch.setenv("GRAPHMEM_NEIGHBOUR_K", "3")  # the environment wins over .env
    monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path / "home"))
    s = load_settings()
    assert (s.neo4j_http_port, s.neighbour_k, s.home) == (17474, 3, tmp_path / "home")


def test_api_key_selects_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert load_settings().resolved_llm_provider == "openai"


@pytest.mark.parametrize(
    ("name", "value", "named"),
    [
        ("NEO4J_URI", "http://x", "NEO4J_URI"),
        ("GRAPHMEM_NEIGHBOUR_K", "-1", "GRAPHMEM_NEIGHBOUR_K"),
        ("GRAPHMEM_NEO4J_HTTP_PORT", "70000", "GRAPHMEM_NEO4J_HTTP_PORT"),
        ("GRAPHMEM_NEO4J_HEAP", "lots", "GRAPHMEM_NEO4J_HEAP"),
        ("GRAPHMEM_SEARCH_MODE", "psychic", "GRAPHMEM_SEARCH_MODE"),
        ("NEO4J_DATABASE", "", "NEO4J_DATABASE"),
        ("GRAPHMEM_NEO4J_LINE", "4.4", "GRAPHMEM_NEO4J_LINE"),
        ("GRAPHMEM_NEO4J_VERSION", "latest", "GRAPHMEM_NEO4J_VERSION"),
        ("GRAPHMEM_SEARCH_TEXT_FIELDS", "content,summary", "GRAPHMEM_SEARCH_TEXT_FIELDS"),
        ("GRAPHMEM_SEARCH_TEXT_FIELDS", " , ", "GRAPHMEM_SEARCH_TEXT_FIELDS"),
    ],
)
def test_invalid_setting_is_named(monkeypatch: pytest.MonkeyPatch, name: str, value: str, named: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(err.value).startswith("invalid settings: ")
    assert named in str(err.value)


def test_all_problems_are_reported_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "http://x")
    monkeypatch.setenv("GRAPHMEM_NEIGHBOUR_K", "-1")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "NEO4J_URI" in str(err.value) and "GRAPHMEM_NEIGHBOUR_K" in str(err.value)


def test_provider_needs_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_LLM_PROVIDER", "compatible")
    with pytest.raises(ConfigError, match="GRAPHMEM_LLM_BASE_URL"):
        load_settings()


def test_overrides_are_validated() -> None:
    with pytest.raises(ConfigError, match="GRAPHMEM_NEIGHBOUR_K"):
        load_settings(neighbour_k=-1)
    assert isinstance(load_settings(neighbour_k=0), Settings)


def test_credentials_in_neo4j_uri_are_refused_without_echoing_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16 item 11: the driver's error quoted the URI, password included."""
    for uri in ("bolt://neo4j:pw-in-uri-77@127.0.0.1:7687", "neo4j+s://u:pw-in-uri-77@db.example:7687?x=1"):
        monkeypatch.setenv("NEO4J_URI", uri)
        with pytest.raises(ConfigError) as err:
            load_settings()
        assert "pw-in-uri-77" not in str(err.value) and "NEO4J_PASSWORD" in str(err.value)
        assert err.value.__cause__ is None and err.value.__suppress_context__


def test_settings_register_their_secrets_for_redaction(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphmem.redaction import redact

    monkeypatch.setenv("NEO4J_PASSWORD", "neo4j-pw-registered-1")
    monkeypatch.setenv("OPENAI_API_KEY", "plain-llm-key-registered-2")
    monkeypatch.setenv("GRAPHMEM_API_KEYS", "rest-key-registered-000003=alice,rest-key-registered-000004")
    load_settings()
    text = "neo4j-pw-registered-1 plain-llm-key-registered-2 rest-key-registered-000003 rest-key-registered-000004"
    assert redact(text) == "*** *** *** ***"
