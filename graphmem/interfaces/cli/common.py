"""Shared CLI plumbing: consoles, scope options, JSON output."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from graphmem.models import Scope

console = Console()
console_err = Console(stderr=True)

UserOpt = Annotated[str, typer.Option("--user", "-u", envvar="GRAPHMEM_USER_ID", help="scope: user id")]
AgentOpt = Annotated[str, typer.Option("--agent", "-a", envvar="GRAPHMEM_AGENT_ID", help="scope: agent id")]
RunOpt = Annotated[str, typer.Option("--run", "-r", envvar="GRAPHMEM_RUN_ID", help="scope: run id")]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable JSON on stdout")]


def make_scope(user: str, agent: str, run: str) -> Scope:
    from pydantic import ValidationError

    from graphmem.errors import InvalidInputError

    try:
        return Scope(user_id=user, agent_id=agent, run_id=run)
    except ValidationError as exc:
        raise InvalidInputError("; ".join(e["msg"] for e in exc.errors())) from None


def print_json(data: Any) -> None:
    """JSON to stdout, unstyled, so scripts can parse it."""
    typer.echo(json.dumps(data, ensure_ascii=False, default=str, indent=2))


class RateColumn(ProgressColumn):
    """Items per second of a task (rich's own speed column counts bytes)."""

    def __init__(self, unit: str = "notes") -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text(f"- {self.unit}/s", style="progress.data.speed")
        return Text(f"{speed:.2f} {self.unit}/s", style="progress.data.speed")


def progress_bar(*, transient: bool = False, to: Console | None = None) -> Progress:
    """A bar with count, rate, elapsed time and ETA (on ``to``, default standard output)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=to or console,
        transient=transient,
    )
