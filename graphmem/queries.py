"""Loader for the named Cypher files in ``cypher/``.

A query's name is its path without ``.cypher`` (``notes/add_group``). Its parameters are the
``$names`` in its text (comments and string literals stripped first); ``bind`` refuses
missing and unknown keys, because the server silently ignores extra parameters.

Server lines: ``name.cypher`` is the query for every server; ``name.2026.cypher`` beside it
replaces it on the 2026 line (Cypher 25: ``SEARCH`` with the scope inside the vector index).
``for_line`` resolves every name once to its file for a line, so a caller never builds a
file name or a query text from strings; ``cypher_line`` maps a server version to its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal, LiteralString, cast

_COMMENT = re.compile(r"//[^\n]*")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Query:
    name: str
    text: LiteralString
    params: frozenset[str]

    def bind(self, **values: Any) -> dict[str, Any]:
        given = set(values)
        missing = self.params - given
        extra = given - self.params
        if missing or extra:
            raise TypeError(f"query {self.name!r}: missing {sorted(missing)} / unexpected {sorted(extra)} parameters")
        return values


def cypher_dir() -> Path:
    """The installed copy (``graphmem/cypher`` in the wheel) or the repository's ``cypher/``."""
    packaged = Path(str(resources.files("graphmem"))) / "cypher"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "cypher"


# Query lines: the base files serve 5.26 (and any server older than the first line listed here).
QueryLine = Literal["5.26", "2026"]
LINE_VARIANTS: tuple[QueryLine, ...] = ("2026",)  # lines that may have a `name.<line>.cypher` file
# The 2026 files need SEARCH with in-index filters (GA in 2026.02) and `vector.quantization.type`
# with `vector.default_search_expansion_factor` (2026.06).
_FIRST_2026 = (2026, 6)
_VERSION = re.compile(r"^(\d+)\.(\d+)")


def cypher_line(version: str) -> QueryLine:
    """The query line for a server version: ``2026`` from 2026.06 on, else ``5.26`` (5.x and 2025.x run
    the base files: Cypher 5 with ``db.index.vector.queryNodes``)."""
    m = _VERSION.match(version.strip())
    if m is None:
        raise ValueError(f"not a Neo4j version: {version!r}")
    return "2026" if (int(m[1]), int(m[2])) >= _FIRST_2026 else "5.26"


def _parse_params(text: str) -> frozenset[str]:
    stripped = _STRING.sub("''", _COMMENT.sub("", text))
    return frozenset(_PARAM.findall(stripped))


def _read(name: str, path: Path) -> Query:
    # The text comes from our own files, never from user or LLM input.
    # mypy treats LiteralString as str (so the cast is "redundant" to it); other checkers need it.
    text = cast(LiteralString, path.read_text(encoding="utf-8"))  # type: ignore[redundant-cast]
    return Query(name=name, text=text, params=_parse_params(text))


@cache
def load(name: str) -> Query:
    """The base file of a query (every line's, unless the line has its own: ``load_for_line``)."""
    if "." in name:
        raise FileNotFoundError(f"no Cypher query named {name!r}: a line's file is chosen by for_line, not by name")
    path = cypher_dir() / f"{name}.cypher"
    if not path.is_file():
        raise FileNotFoundError(f"no Cypher query named {name!r} ({path})")
    return _read(name, path)


@cache
def load_for_line(name: str, line: QueryLine) -> Query:
    """``name.<line>.cypher`` when the line has one, else the base file. The Query keeps the plain
    name (errors and logs say ``search/vector``); its text is the line's."""
    base = load(name)
    if line in LINE_VARIANTS:
        path = cypher_dir() / f"{name}.{line}.cypher"
        if path.is_file():
            return _read(name, path)
    return base


def for_line(line: QueryLine) -> dict[str, Query]:
    """Every query name resolved once to its file for a server line (the store's lookup table)."""
    return {name: load_for_line(name, line) for name in all_names()}


def variants(name: str) -> list[QueryLine]:
    """The lines that have their own file for a query."""
    return [line for line in LINE_VARIANTS if (cypher_dir() / f"{name}.{line}.cypher").is_file()]


def all_names() -> list[str]:
    """The base names (``name.2026.cypher`` is a variant of ``name``, not a name of its own)."""
    root = cypher_dir()
    return sorted(
        str(p.relative_to(root).with_suffix(""))
        for p in root.rglob("*.cypher")
        if "browse" not in p.parts and "." not in p.stem
    )


def split(query: Query) -> list[Query]:
    """The statements of a multi-statement file (``schema``), split on ``;`` at line ends, each with
    the parameters it uses (so a caller binds each one through ``bind`` like any query)."""
    body = _COMMENT.sub("", query.text)
    parts = [cast(LiteralString, s.strip()) for s in re.split(r";\s*\n", body) if s.strip()]
    return [Query(name=f"{query.name}#{i}", text=t, params=_parse_params(t)) for i, t in enumerate(parts, 1)]


def statements(name: str) -> list[LiteralString]:
    """The statement texts of a multi-statement file (``split`` of ``load(name)``)."""
    return [q.text for q in split(load(name))]
