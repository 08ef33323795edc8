"""docs/architecture.md cannot drift from the tree: every module its Files block names under
``graphmem/`` exists, and every module of ``graphmem/`` is named there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_ENTRY = re.compile(r"^( *)(\S+)")
_MAX_ENTRY_INDENT = 8  # deeper lines continue a description; entries sit at most 8 spaces in


def named_modules() -> set[str]:
    """Paths (from the repo root) of the ``.py`` files and folders the Files block lists under
    ``graphmem/``: one entry per line, nested by two spaces."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("## Files", 1)[1].split("```", 2)[1]
    stack: list[tuple[int, str]] = []  # (indent, folder)
    named: set[str] = set()
    for line in block.splitlines():
        m = _ENTRY.match(line)
        if m is None or len(m.group(1)) > _MAX_ENTRY_INDENT:
            continue
        indent, name = len(m.group(1)), m.group(2)
        if not (name.endswith("/") or name.endswith(".py")):
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "".join(folder for _, folder in stack) + name
        if path.startswith("graphmem/"):
            named.add(path.rstrip("/"))
        if name.endswith("/"):
            stack.append((indent, name))
    return named


def tree_modules() -> set[str]:
    out: set[str] = set()
    for path in (ROOT / "graphmem").rglob("*.py"):
        rel = path.relative_to(ROOT)
        out.add(str(rel))
        out.update(str(parent) for parent in rel.parents if str(parent) not in (".", ""))
    return out


def test_every_module_the_doc_names_exists() -> None:
    assert named_modules() - tree_modules() == set()


def test_every_module_is_named_in_the_doc() -> None:
    assert tree_modules() - named_modules() == set()


def test_the_parser_reads_nested_entries() -> None:
    named = named_modules()
    assert {"graphmem/service/linking/decider.py", "graphmem/interfaces/rest/routers/meta.py"} <= named
