"""Shared CLI plumbing: consoles, scope options, JSON output."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console

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
