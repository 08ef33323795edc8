"""`graphmem neo4j start|stop|status`: the local Neo4j server (jars from Maven Central, no Docker)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.status import Status

from graphmem.config import Neo4jLine, Settings, get_settings, load_settings
from graphmem.interfaces.cli.common import JsonOpt, console, print_json
from graphmem.local.neo4j_server import LocalNeo4j, ServerStatus

app = typer.Typer(
    name="neo4j",
    help="Run a local Neo4j Community server: 5.26 LTS (Java 17/21) or 2026 (Java 21/25); mvn once.",
    no_args_is_help=True,
)

TimeoutOpt = Annotated[float, typer.Option("--timeout", help="seconds to wait for Bolt", min=1)]
LineOpt = Annotated[
    Neo4jLine | None,
    typer.Option("--line", help="server line (default: GRAPHMEM_NEO4J_LINE, else 5.26); each line has its own data"),
]


def _settings(line: Neo4jLine | None) -> Settings:
    """The settings, with --line over GRAPHMEM_NEO4J_LINE (validated: a contradicting version is an error)."""
    return get_settings() if line is None else load_settings(neo4j_line=line)


def _print_endpoints(st: ServerStatus) -> None:
    console.print(
        f"  Bolt     [cyan]{st.bolt_uri}[/]" + ("  (auth: NEO4J_USERNAME / NEO4J_PASSWORD)" if st.auth else "")
    )
    console.print(f"  HTTP     [cyan]{st.http_url}[/]")
    console.print(f"  Browser  [cyan]{st.browser_url}[/]", soft_wrap=True)


@app.command()
def start(timeout: TimeoutOpt = 120.0, line: LineOpt = None) -> None:
    """Fetch the jars if needed, start the server in the background and wait until Bolt answers."""
    settings = _settings(line)
    with Status("Checking the local Neo4j", console=console) as spinner:
        server = LocalNeo4j(settings, report=lambda msg: spinner.update(msg))
        result = server.start(timeout=timeout)
    st = result.status
    if result.already_running:
        console.print(f"[green]Neo4j is already running[/] (pid {st.pid}, version {st.version}); reusing it.")
    else:
        fetched = " (jars fetched)" if result.fetched else ""
        console.print(
            f"[green]Neo4j {st.version} started[/] in {result.seconds:.1f}s{fetched} (pid {st.pid}, {st.java})."
        )
    _print_endpoints(st)
    console.print(f"  Log      {escape(st.log)}\n  Data     {escape(st.data)}")


@app.command()
def stop(timeout: TimeoutOpt = 30.0, line: LineOpt = None) -> None:
    """Stop the local server: SIGTERM, then SIGKILL after --timeout seconds."""
    with Status("Stopping Neo4j", console=console):
        pid = LocalNeo4j(_settings(line)).stop(timeout=timeout)
    console.print("Neo4j is not running." if pid is None else f"Neo4j stopped (pid {pid}).")


@app.command()
def status(json_out: JsonOpt = False, line: LineOpt = None) -> None:
    """Running or stopped, pid, version, URLs, log and data paths. Exit code 3 when stopped."""
    st = LocalNeo4j(_settings(line)).status()
    if json_out:
        print_json(st.to_dict())
    else:
        state = f"[green]running[/] (pid {st.pid})" if st.running else "[yellow]stopped[/]"
        if st.running and not st.answering:
            state += f"\n  [yellow]Bolt does not answer:[/] {escape(st.problem or '')}"
        if not st.running and st.answering:
            state += f" (but a Neo4j not started by graphmem answers at {st.bolt_uri})"
        console.print(f"Neo4j {st.version} ({st.line} line): {state}")
        _print_endpoints(st)
        console.print(f"  Log      {escape(st.log)}\n  Data     {escape(st.data)}")
    if not st.running:
        raise typer.Exit(3)
