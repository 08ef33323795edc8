"""`graphmem llm start|stop|status`: the local Qwen2.5-Coder model behind llama.cpp's OpenAI-compatible server."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from rich.status import Status

from graphmem.config import Settings, get_settings
from graphmem.interfaces.cli.common import JsonOpt, console, print_json
from graphmem.local.llm_server import LLMStatus, LocalLLM

app = typer.Typer(
    name="llm",
    help="Run the local LLM (Qwen2.5-Coder GGUF from PyPI part packages, llama-cpp-python server).",
    no_args_is_help=True,
)


class ModelChoice(StrEnum):
    small = "0.5b"
    medium = "1.5b"


ModelOpt = Annotated[
    ModelChoice | None,
    typer.Option("--model", "-m", help="model size (default: GRAPHMEM_LOCAL_MODEL, else 1.5b)"),
]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="seconds to wait for the server", min=1)]


def _settings(model: ModelChoice | None) -> Settings:
    settings = get_settings()
    if model is None:
        return settings
    return settings.model_copy(update={"local_model": f"qwen2.5-coder-{model.value}"})


def _print_status(st: LLMStatus) -> None:
    if st.running and st.model == st.expected_model:
        owner = f"pid {st.pid}" if st.managed else "not started by this graphmem home"
        console.print(f"Local LLM: [green]running[/] ({owner}), model [cyan]{st.model}[/]")
    elif st.running:
        console.print(f"Local LLM: [yellow]port {st.port} serves {st.model}[/], not {st.expected_model}")
    else:
        console.print("Local LLM: [yellow]stopped[/]")
    console.print(f"  URL      [cyan]{st.base_url}[/]")
    ready = "" if st.model_ready else "  (not assembled yet)"
    console.print(f"  Weights  {st.model_path}{ready}", soft_wrap=True)
    console.print(f"  Log      {st.log_file}", soft_wrap=True)


@app.command()
def start(model: ModelOpt = None, timeout: TimeoutOpt = 180.0, json_out: JsonOpt = False) -> None:
    """Assemble the weights if needed, start the server in the background, wait until it answers."""
    llm = LocalLLM(_settings(model), show_progress=not json_out)
    if json_out:
        result = llm.start(timeout=timeout)
    else:
        llm.ensure_model()  # outside the spinner: assembly shows its own progress bar
        with Status(f"Starting {llm.model_name}", console=console):
            result = llm.start(timeout=timeout)
    st = llm.status()
    if json_out:
        print_json({**st.to_dict(), "reused": result.reused, "seconds": round(result.seconds, 2)})
        return
    if result.reused:
        console.print(f"[green]{llm.model_name} is already running[/]; reusing it.")
    else:
        console.print(f"[green]{llm.model_name} started[/] in {result.seconds:.1f}s (pid {result.pid}).")
    _print_status(st)


@app.command()
def stop(model: ModelOpt = None, timeout: TimeoutOpt = 15.0, json_out: JsonOpt = False) -> None:
    """Stop the server started by this graphmem home: SIGTERM, then SIGKILL after --timeout seconds."""
    llm = LocalLLM(_settings(model))
    stopped = llm.stop(timeout=timeout)
    if json_out:
        print_json({"stopped": stopped})
    else:
        console.print("Local LLM stopped." if stopped else "Local LLM is not running (nothing to stop).")


@app.command()
def status(model: ModelOpt = None, json_out: JsonOpt = False) -> None:
    """Running or stopped, model, URL, weights and log paths. Exit code 3 when not serving the model."""
    st = LocalLLM(_settings(model)).status()
    if json_out:
        print_json(st.to_dict())
    else:
        _print_status(st)
    if not (st.running and st.model == st.expected_model):
        raise typer.Exit(3)
