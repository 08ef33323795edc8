"""Domain words defined once: search modes, filters, the note's brief form; the query loader."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from graphmem import queries
from graphmem.errors import InvalidInputError
from graphmem.models import ID_PATTERN, LinkType, Note, Scope, SearchFilters, SearchMode, check_id
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
    # the vector index (with $dimensions) has a file per line; the full-text index takes its analyzer
    assert [p.params for p in parts if p.params] == [frozenset({"analyzer"})]
    assert all(p.text.strip() and not p.text.rstrip().endswith(";") for p in parts)


@pytest.mark.parametrize(
    ("version", "line"),
    [
        ("5.26.30", "5.26"),
        ("5.26.0", "5.26"),
        ("2025.10.1", "5.26"),
        ("2026.02.0", "5.26"),
        ("2026.08.1", "2026"),
        ("2027.01.0", "2026"),
        (" 2026.06.0-aura ", "2026"),
    ],
)
def test_a_server_version_maps_to_its_query_line(version: str, line: str) -> None:
    assert queries.cypher_line(version) == line


def test_cypher_line_refuses_what_is_not_a_version() -> None:
    with pytest.raises(ValueError, match="not a Neo4j version"):
        queries.cypher_line("latest")


def test_each_line_resolves_every_name_once_to_its_file() -> None:
    """``name.2026.cypher`` replaces ``name.cypher`` on the 2026 line only; the table keeps the plain
    names, a line file is never a name of its own, and every line file has a base file beside it."""
    names = queries.all_names()
    assert not [n for n in names if "." in n]
    base, l26 = queries.for_line("5.26"), queries.for_line("2026")
    assert set(base) == set(l26) == set(names)
    assert all(base[n].text == queries.load(n).text for n in names)
    replaced = {n for n in names if l26[n].text != base[n].text}
    assert {"search/vector", "search/vector_links", "schema/vector_index_create"} <= replaced
    assert replaced == {n for n in names if queries.variants(n) == ["2026"]}
    for name in replaced:  # Cypher 25 files: 5.26 rejects the prefix, so they never run there
        assert "CYPHER 25" in l26[name].text
        assert l26[name].name == name
    orphans = [
        p for p in queries.cypher_dir().rglob("*.2026.cypher") if not p.with_name(p.name.replace(".2026", "")).is_file()
    ]
    assert orphans == []
    with pytest.raises(FileNotFoundError, match="for_line"):
        queries.load("search/vector.2026")


def test_the_2026_searches_keep_the_scope_inside_the_index_and_on_the_rows() -> None:
    """The house rule (every query states its scope where it reads) holds for the line files too."""
    scope_in_index = "WHERE node.user_id = $user_id AND node.agent_id = $agent_id AND node.run_id = $run_id"
    for name in ("search/vector", "search/vector_links"):
        q = queries.load_for_line(name, "2026")
        assert scope_in_index in q.text
        assert "r.node.user_id = $user_id AND r.node.agent_id = $agent_id AND r.node.run_id = $run_id" in q.text
        assert q.params == queries.load(name).params  # the store binds one set of parameters per name


def test_note_keys_are_the_note_model_as_stored() -> None:
    """The projection every note query returns (tests/integration/test_store.py) is the Note model."""
    stored = set(Note.model_fields) - {"scope", "embedding", "metadata"} | {"user_id", "agent_id", "run_id"}
    assert stored | {"metadata_json"} == NOTE_KEYS


def test_ids_and_scope_parts_refuse_a_trailing_newline() -> None:
    """Issue 16 item 2: ``$`` under ``re.match`` matched before a final newline, so "zz\\n" passed as an
    id and as a scope part that looks like "zz" but is another scope."""
    for bad in ("zz\n", "x\n", "note-1\r\n", "\nzz"):
        with pytest.raises(InvalidInputError):
            check_id(bad, "note id")
        with pytest.raises(ValidationError):
            Scope(user_id=bad)
        with pytest.raises(ValidationError):
            Scope(user_id="u", agent_id="a", run_id=bad)
        with pytest.raises(ValidationError):
            Note(id=bad, content="c", scope=Scope(user_id="u"))
    assert re.match(ID_PATTERN, "zz\n") is None  # the pattern itself, for every user of it
    assert check_id("zz", "note id") == "zz"
