"""The `graphmem` command: one typer app, a sub-module per area, each a thin layer over the service."""

from __future__ import annotations

import importlib
import sys

import typer

app = typer.Typer(
    name="graphmem",
    help="A-MEM agentic memory on Neo4j: notes, typed links, evolution, retrieval.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Each module registers its commands on `app` when imported.
_MODULES = ("neo4j", "notes", "demo", "serve", "evaluate", "bench", "llm")
for _name in _MODULES:
    try:
        importlib.import_module(f"graphmem.interfaces.cli.{_name}")
    except ModuleNotFoundError as exc:  # a module not written yet, not a missing dependency
        if exc.name != f"graphmem.interfaces.cli.{_name}":
            raise


def main() -> None:
    from graphmem.errors import GraphmemError
    from graphmem.interfaces.cli.common import console_err

    try:
        app()
    except GraphmemError as exc:
        console_err.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
