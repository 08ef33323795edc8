"""The closed set of link types is LinkType: every list of them spelt in a Cypher file, the Browser
style sheet or the package's code must be exactly that set (no type missing, none extra)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from graphmem.models import LinkType
from graphmem.queries import cypher_dir

ROOT = Path(__file__).resolve().parents[2]
TYPES = {t.value for t in LinkType}
OTHER_RELATIONSHIPS = {"PREVIOUS_VERSION", "HAS_MESSAGE", "SUPERSEDES", "CONFLICTS_WITH", "DERIVED_FROM"}  # not links
TIME_RELATIONSHIPS = {"SUPERSEDES", "CONFLICTS_WITH", "DERIVED_FROM"}
CYPHER = sorted(cypher_dir().rglob("*.cypher"))

_ALTERNATION = re.compile(r"\[\s*\w*\s*:\s*([A-Z_]+(?:\s*\|\s*[A-Z_]+)*)")  # [r:A|B], [:A], [:A|B*1..2]
_QUOTED_LIST = re.compile(r"\[\s*('[A-Z_]+'(?:\s*,\s*'[A-Z_]+')+)\s*\]")
_COMPARED = re.compile(r"\.type\s*=\s*'([A-Z_]+)'")
_MERGED = re.compile(r"MERGE\s*\(\w+\)-\[\w*:([A-Z_]+)\]->")


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


def relationship_lists(text: str) -> list[set[str]]:
    """Every relationship-type pattern and every quoted list of type names in a query."""
    body = _strip_comments(text)
    found = [{t.strip() for t in m.group(1).split("|")} for m in _ALTERNATION.finditer(body)]
    found += [{t.strip(" '") for t in m.group(1).split(",")} for m in _QUOTED_LIST.finditer(body)]
    return found


@pytest.mark.parametrize("path", CYPHER, ids=[str(p.relative_to(cypher_dir())) for p in CYPHER])
def test_cypher_type_lists_are_the_closed_set(path: Path) -> None:
    for types in relationship_lists(path.read_text(encoding="utf-8")):
        if len(types) == 1:  # one named relationship: a link type or a structural one
            assert types <= TYPES | OTHER_RELATIONSHIPS, (path.name, types)
        elif types <= TIME_RELATIONSHIPS:  # issue 28's relationships together (their export), no link
            continue
        else:
            assert types == TYPES, (path.name, sorted(types ^ TYPES))


def test_links_create_writes_every_type_and_no_other() -> None:
    body = _strip_comments((cypher_dir() / "links" / "create.cypher").read_text(encoding="utf-8"))
    assert set(_COMPARED.findall(body)) == TYPES
    assert set(_MERGED.findall(body)) == TYPES
    for block in re.findall(
        r"FOREACH \(_ IN CASE WHEN l\.type = '([A-Z_]+)'.*?MERGE \(s\)-\[r:([A-Z_]+)\]", body, re.S
    ):
        assert block[0] == block[1]  # each branch merges the type it tested


def test_the_browser_style_sheet_styles_every_type() -> None:
    grass = (cypher_dir() / "browse" / "graphmem.grass").read_text(encoding="utf-8")
    assert set(re.findall(r"relationship\.([A-Z_]+)\s*\{", grass)) - OTHER_RELATIONSHIPS == TYPES


def _spelt_lists(tree: ast.AST) -> list[tuple[int, set[str]]]:
    """String constants naming two or more link types, and literal collections of their names."""
    out: list[tuple[int, set[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = {w for w in re.findall(r"\b[A-Z][A-Z_]+\b", node.value) if w in TYPES}
            if len(names) >= 2:
                out.append((node.lineno, names))
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):  # also the Tuple inside Literal[...]
            names = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in TYPES}
            if len(names) >= 2:
                out.append((node.lineno, names))
    return out


def test_the_code_spells_no_partial_list_of_types() -> None:
    offenders = []
    for path in sorted((ROOT / "graphmem").rglob("*.py")):
        for line, names in _spelt_lists(ast.parse(path.read_text(encoding="utf-8"))):
            if names != TYPES:
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {sorted(names)}")
    assert offenders == []


def test_the_check_sees_a_partial_list() -> None:
    """The scanners above find what they are meant to find."""
    assert relationship_lists("MATCH (a)-[r:SUPPORTS|FOLLOWS]->(b) WHERE x IN ['A_B', 'SUPPORTS']") == [
        {"SUPPORTS", "FOLLOWS"},
        {"A_B", "SUPPORTS"},
    ]
    tree = ast.parse('x: Literal["SUPPORTS", "FOLLOWS"] = "SUPPORTS"\ny = ("RELATED_TO", "SAME_TOPIC")')
    assert sorted(sorted(n) for _, n in _spelt_lists(tree)) == [["FOLLOWS", "SUPPORTS"], ["RELATED_TO", "SAME_TOPIC"]]
