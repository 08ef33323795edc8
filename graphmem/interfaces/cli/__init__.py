"""The `graphmem` command: one typer app assembled from a sub-app per area, each a thin layer over
the service (or, for `neo4j` and `llm`, over graphmem.local)."""

from __future__ import annotations

import sys

import typer

from graphmem.interfaces.cli import bench, demo, evaluate, llm, neo4j, notes, schema, serve, versions

app = typer.Typer(
    name="graphmem",
    help="A-MEM agentic memory on Neo4j: notes, typed links, evolution, retrieval.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
for sub in (neo4j.app, notes.app, versions.app, schema.app, demo.app, serve.app, evaluate.app, bench.app, llm.app):
    app.add_typer(sub)  # unnamed sub-apps add their commands here; named ones become groups


def main() -> None:
    from graphmem.errors import GraphmemError
    from graphmem.interfaces.cli.common import console_err
    from graphmem.redaction import redact

    try:
        app()
    except GraphmemError as exc:
        console_err.print(f"[bold red]error:[/] {redact(str(exc))}", markup=True, highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
