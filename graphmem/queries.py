"""Loader for the named Cypher files in ``cypher/``.

A query's name is its path without ``.cypher`` (``notes/create``). Its parameters are the
``$names`` in its text (comments and string literals stripped first); ``bind`` refuses
missing and unknown keys, because the server silently ignores extra parameters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, LiteralString, cast

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


def _parse_params(text: str) -> frozenset[str]:
    stripped = _STRING.sub("''", _COMMENT.sub("", text))
    return frozenset(_PARAM.findall(stripped))


@cache
def load(name: str) -> Query:
    path = cypher_dir() / f"{name}.cypher"
    if not path.is_file():
        raise FileNotFoundError(f"no Cypher query named {name!r} ({path})")
    # The text comes from our own files, never from user or LLM input.
    # mypy treats LiteralString as str (so the cast is "redundant" to it); other checkers need it.
    text = cast(LiteralString, path.read_text(encoding="utf-8"))  # type: ignore[redundant-cast]
    return Query(name=name, text=text, params=_parse_params(text))


def all_names() -> list[str]:
    root = cypher_dir()
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.cypher") if "browse" not in p.parts)


def split(query: Query) -> list[Query]:
    """The statements of a multi-statement file (``schema``), split on ``;`` at line ends, each with
    the parameters it uses (so a caller binds each one through ``bind`` like any query)."""
    body = _COMMENT.sub("", query.text)
    parts = [cast(LiteralString, s.strip()) for s in re.split(r";\s*\n", body) if s.strip()]
    return [Query(name=f"{query.name}#{i}", text=t, params=_parse_params(t)) for i, t in enumerate(parts, 1)]


def statements(name: str) -> list[LiteralString]:
    """The statement texts of a multi-statement file (``split`` of ``load(name)``)."""
    return [q.text for q in split(load(name))]
