"""`graphmem serve` (REST API under uvicorn) and `graphmem mcp` (MCP server on stdio)."""

from __future__ import annotations

from typing import Annotated

import typer

from graphmem.interfaces.cli.common import console_err

app = typer.Typer()


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="interface to listen on (0.0.0.0 exposes it to the network)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port", min=1, max=65535)] = 8000,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> None:
    """Run the REST API (OpenAPI docs at /docs). Needs GRAPHMEM_API_KEYS or GRAPHMEM_AUTH_DISABLED=true."""
    try:
        import uvicorn  # noqa: F401 - the server extra
    except ImportError:
        console_err.print("[red]the REST API needs the server extra:[/] pip install 'graphmem[server]'")
        raise typer.Exit(2) from None
    from graphmem.config import get_settings
    from graphmem.interfaces.rest import create_app
    from graphmem.interfaces.rest.server import serve as run_server

    settings = get_settings()
    api = create_app(settings)  # raises ConfigError (exit 2, message) when no key is configured
    if settings.auth_disabled:
        console_err.print("[yellow]warning:[/] API key auth is disabled (GRAPHMEM_AUTH_DISABLED=true)")
    console_err.print(f"graphmem REST API on http://{host}:{port}  (docs: /docs)")
    # The app starts the local LLM (if that is the provider) in a worker thread while it already
    # serves /health. Client limits (timeouts, connections, sizes): GRAPHMEM_HTTP_* settings.
    run_server(api, settings, host=host, port=port, log_level=log_level)


@app.command()
def mcp() -> None:
    """Run the MCP server on stdio (scope from GRAPHMEM_MCP_USER_ID / _AGENT_ID / _RUN_ID)."""
    try:
        from graphmem.interfaces.mcp_server import run_stdio
    except ImportError as exc:
        if exc.name and exc.name.split(".")[0] == "mcp":
            console_err.print("[red]the MCP server needs the mcp extra:[/] pip install 'graphmem[mcp]'")
            raise typer.Exit(2) from None
        raise
    from graphmem.config import get_settings

    run_stdio(get_settings())
