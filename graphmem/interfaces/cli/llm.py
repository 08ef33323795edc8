"""`graphmem llm build|start|stop|status`: the local Qwen2.5-Coder model behind llama.cpp's OpenAI-compatible server."""

from __future__ import annotations

import json
import signal
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.status import Status

from graphmem.config import Settings, get_settings
from graphmem.interfaces.cli.common import JsonOpt, console, print_json
from graphmem.local.llama_build import LlamaBuild
from graphmem.local.llm_server import LLMStatus, LocalLLM

app = typer.Typer(
    name="llm",
    help="Run the local LLM (Qwen2.5-Coder GGUF from PyPI part packages, llama.cpp's llama-server).",
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
        console.print(f"Local LLM: [green]running[/] ({owner}), model [cyan]{st.model}[/], server {st.server}")
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
        with Status(f"Starting {llm.model_name}", console=console) as spinner:

            def progress(line: str) -> None:  # the first start builds llama-server (minutes)
                spinner.update(f"Building llama-server (once): {line}")

            result = llm.start(timeout=timeout, progress=progress)
    st = llm.status()
    if json_out:
        print_json({**st.to_dict(), "reused": result.reused, "seconds": round(result.seconds, 2), "note": result.note})
        return
    if result.note:
        console.print(f"[yellow]{result.note}[/]")
    if result.reused:
        console.print(f"[green]{llm.model_name} is already running[/]; reusing it.")
    else:
        console.print(
            f"[green]{llm.model_name} started[/] in {result.seconds:.1f}s (pid {result.pid}, {result.server})."
        )
    _print_status(st)


@app.command()
def build(
    force: Annotated[bool, typer.Option("--force", help="build again even if a build with these flags exists")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Build llama-server and llama-bench from llama-cpp-python's vendored llama.cpp (cached; minutes)."""
    llama = LlamaBuild(get_settings().home)
    asked = time.time()
    if json_out:
        info = llama.ensure(force=force)
    else:
        with Status("Building llama-server", console=console) as spinner:
            info = llama.ensure(force=force, progress=lambda line: spinner.update(f"Building llama-server: {line}"))
    if json_out:
        print_json({**info.to_dict(), "bin_dir": str(llama.bin_dir)})
        return
    console.print(f"[green]llama-server[/] (llama.cpp of llama-cpp-python {info.version}) in {llama.bin_dir}")
    when = "built now" if info.built_at >= asked else "cached; built"
    console.print(
        f"  {when} in {info.seconds:.0f}s with {info.jobs} jobs; flags {' '.join(info.flags)}", soft_wrap=True
    )


@app.command()
def stop(
    model: ModelOpt = None,
    timeout: TimeoutOpt = 15.0,
    name: Annotated[
        str,
        typer.Option(
            "--name", help="which server of this home: server (the default) or server-full-context (eval locomo's)"
        ),
    ] = "server",
    json_out: JsonOpt = False,
) -> None:
    """Stop the server started by this graphmem home: SIGTERM, then SIGKILL after --timeout seconds."""
    if name not in ("server", "server-full-context"):
        raise typer.BadParameter("--name must be server or server-full-context")
    llm = LocalLLM(_settings(model), name=name)
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


@app.command("bench")
def bench(
    model: ModelOpt = None,
    levels: Annotated[str, typer.Option("--levels", help="concurrent requests per level, comma-separated")] = "1,2,4",
    requests: Annotated[int, typer.Option("--requests", min=1, help="requests per level and server")] = 4,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="output tokens per request")] = 100,
    servers: Annotated[
        str, typer.Option("--servers", help="llama-server, llama-cpp-python or both, comma-separated")
    ] = "llama-server,llama-cpp-python",
    ports: Annotated[str, typer.Option("--ports", help="ports of the bench's own servers")] = "8024,8025",
    bench_reps: Annotated[int, typer.Option("--bench-reps", min=0, help="llama-bench repetitions (0: skip)")] = 3,
    out: Annotated[Path, typer.Option("--out", help="output folder (llm_bench.json, llm_bench.md)")] = Path(
        "eval-out/llm-bench"
    ),
    json_out: JsonOpt = False,
) -> None:
    """The floor (llama-bench pp/tg) and the throughput of concurrent A-MEM-sized requests, llama-server
    vs the llama-cpp-python server, side by side (own servers on --ports; slow: minutes)."""
    from graphmem.evaluation.llm_floor import LlmBenchResult, run_llm_bench

    settings = _settings(model)
    level_list = [int(x) for x in levels.split(",") if x.strip()]
    server_list = [x.strip() for x in servers.split(",") if x.strip()]
    if any(x not in ("llama-server", "llama-cpp-python") for x in server_list):
        raise typer.BadParameter("servers are llama-server and/or llama-cpp-python", param_hint="--servers")
    port_list = [int(x) for x in ports.split(",") if x.strip()]
    if len(port_list) < len(server_list):
        raise typer.BadParameter("one port per server", param_hint="--ports")
    # A `timeout` or `kill` must still stop the bench's servers (the finally blocks run on SystemExit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out.mkdir(parents=True, exist_ok=True)

    def save(result: LlmBenchResult) -> None:  # after every step: an interrupted run keeps its numbers
        (out / "llm_bench.json").write_text(json.dumps(result.to_dict(), indent=1))
        (out / "llm_bench.md").write_text(result.markdown())

    with Status("LLM bench", console=console) as spinner:
        result = run_llm_bench(
            settings,
            levels=level_list,
            requests=requests,
            servers=server_list,  # type: ignore[arg-type]
            ports=port_list,
            max_tokens=max_tokens,
            bench_repetitions=bench_reps,
            report=lambda m: spinner.update(f"LLM bench: {m}"),
            on_update=save,
        )
    save(result)
    if json_out:
        print_json(result.to_dict())
    else:
        console.print(result.markdown(), markup=False, highlight=False, soft_wrap=True)
        console.print(f"written: {out / 'llm_bench.json'}, {out / 'llm_bench.md'}")
