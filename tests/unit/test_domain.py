"""Domain words defined once: search modes, filters, the note's brief form; the query loader."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from graphmem import queries
from graphmem.errors import InvalidInputError
from graphmem.models import LinkType, Note, Scope, SearchFilters, SearchMode
from graphmem.store.neo4j_store import lucene_query
from graphmem.store.records import NOTE_KEYS


def test_search_mode_parses_its_values_and_refuses_others() -> None:
    assert [m.value for m in SearchMode] == ["vector", "links", "hybrid"]
    assert SearchMode.parse("links") is SearchMode.LINKS
    assert SearchMode.parse(SearchMode.HYBRID) is SearchMode.HYBRID
    for bad in ("LINKS", "", "sql"):
        with pytest.raises(InvalidInputError, match="unknown search mode"):
            SearchMode.parse(bad)


def test_filters_take_naive_bounds_as_utc_and_refuse_bad_text() -> None:
    f = SearchFilters.model_validate({"tags_any": [" music "], "since": "2023-05-01T10:00:00", "until": None})
    assert f.tags_any == ["music"] and f.since == datetime(2023, 5, 1, 10, tzinfo=UTC)
    for bad in ({"tags_any": ["bell\x07"]}, {"category": "\ud800"}, {"tags_any": "music"}, {"color": "red"}):
        with pytest.raises(ValidationError):
            SearchFilters.model_validate(bad)
    with pytest.raises(ValidationError):
        SearchFilters(tags_any=[f"t{i}" for i in range(51)])


def test_filters_are_immutable() -> None:
    f = SearchFilters(category="work")
    with pytest.raises(ValidationError):
        f.category = "\x00"  # type: ignore[misc]


def test_brief_is_what_agents_see() -> None:
    note = Note(id="n1", content="Rufus hates thunderstorms.", scope=Scope(user_id="u"), event_time_text="last May")
    brief = note.brief()
    assert list(brief) == ["id", "content", "context", "keywords", "tags", "event_time", "created_at"]
    assert brief["event_time"] == "last May"
    assert "embedding" not in note.public() and note.public()["scope"] == {
        "user_id": "u",
        "agent_id": "default",
        "run_id": "default",
    }


def test_link_type_meanings_cover_the_closed_set() -> None:
    assert all(t.meaning for t in LinkType)


def test_lucene_query_escapes_user_text() -> None:
    assert lucene_query("") is None and lucene_query("!!! ???") is None
    assert lucene_query("Alice's dog") == "Alice OR dog"  # "s": a contraction piece, stopped
    assert lucene_query("a" * 3 + " b" * 40, max_terms=3) == "aaa OR b OR b"


def test_parameters_are_read_outside_comments_and_strings() -> None:
    q = queries.Query(
        name="t",
        text="// $ignored\nMATCH (n {id: $id}) WHERE n.x = '$not_a_param' RETURN $k",  # type: ignore[arg-type]
        params=queries._parse_params("// $ignored\nMATCH (n {id: $id}) WHERE n.x = '$not_a_param' RETURN $k"),
    )
    assert q.params == {"id", "k"}
    with pytest.raises(TypeError, match=r"missing \['k'\] / unexpected \['x'\]"):
        q.bind(id=1, x=2)


def test_multi_statement_files_split_with_their_own_parameters() -> None:
    parts = queries.split(queries.load("schema"))
    assert len(parts) >= 3
    with_dims = [p for p in parts if p.params]
    assert [p.params for p in with_dims] == [frozenset({"dimensions"}), frozenset({"analyzer"})]
    assert all(p.text.strip() and not p.text.rstrip().endswith(";") for p in parts)


def test_note_keys_are_the_note_model_as_stored() -> None:
    """The projection every note query returns (tests/integration/test_store.py) is the Note model."""
    stored = set(Note.model_fields) - {"scope", "embedding", "metadata"} | {"user_id", "agent_id", "run_id"}
    assert stored | {"metadata_json"} == NOTE_KEYS
