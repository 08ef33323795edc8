"""Which llama.cpp server graphmem runs, and llama.cpp's own ``llama-server`` command line.

``GRAPHMEM_LOCAL_LLM_SERVER``:

- ``auto`` (default): ``llama-server`` from the cached build (``graphmem.local.llama_build``),
  building it if absent when the caller allows (``graphmem llm start`` does; a service starting
  the model on its first call does not: minutes of compiling belong to install.sh or the CLI);
  if the build fails (or failed before with the same flags) or is absent, the llama-cpp-python
  server with a message that says why and how to fix it.
- ``llama-server``: the same, but a failed build is an error.
- ``llama-cpp-python``: ``python -m llama_cpp.server``, one request at a time.

``llama-server`` serves ``GRAPHMEM_LOCAL_LLM_PARALLEL`` slots with continuous batching: requests
that arrive together share each decode step, which on a CPU costs little more than one sequence's
step. Each slot keeps its own prompt in its KV cache and a new request goes to the idle slot whose
cached prompt shares the longest prefix with it (``--slot-prompt-similarity``), so the two A-MEM
prompt kinds (enrichment, linking) each keep a slot warm instead of evicting each other as they did
in llama-cpp-python's single cache; prompts pushed out of a slot are kept in a RAM cache
(``--cache-ram``) and restored from there.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from graphmem.config import Settings
from graphmem.errors import LocalServiceError
from graphmem.local.llama_build import LlamaBuild

ServerKind = Literal["llama-server", "llama-cpp-python"]

LLAMA_SERVER_MARKER = "llama-server"  # in the command line of a llama-server process
PYTHON_SERVER_MARKER = "llama_cpp.server"

# A new request goes to the idle slot whose cached prompt shares the longest prefix with it, if
# that prefix is more than this share of the prompt. A-MEM's instructions are a fifth to most of
# its prompts, while the two kinds share only the chat template's first tokens (< 1 %), so each
# kind finds its own slot (seen in the server log: "selected slot by LCP similarity").
SLOT_PROMPT_SIMILARITY = 0.1
# Reuse cached chunks of at least this many tokens even when they moved (KV shifting).
CACHE_REUSE_TOKENS = 256
# RAM for prompts pushed out of the slots (llama-server's default is 8 GiB; the machine is shared).
CACHE_RAM_MIB = 1024


@dataclass(frozen=True)
class ServerChoice:
    """The server to start: its kind, the llama-server binary (if that kind), and why (a fallback)."""

    kind: ServerKind
    binary: Path | None = None
    note: str | None = None  # set when graphmem fell back to the llama-cpp-python server


def choose_server(
    settings: Settings,
    *,
    build: LlamaBuild | None = None,
    allow_build: bool = True,
    progress: Callable[[str], None] | None = None,
) -> ServerChoice:
    """Resolve ``GRAPHMEM_LOCAL_LLM_SERVER`` to a server, building llama-server when needed.

    Args:
        allow_build: with ``auto``, build llama-server if it is absent (else fall back).
            ``llama-server`` asked for explicitly is always built.

    Raises:
        LocalServiceError: ``llama-server`` was asked for explicitly and cannot be built.
    """
    wanted = settings.local_llm_server
    if wanted == "llama-cpp-python":
        return ServerChoice("llama-cpp-python")
    build = build or LlamaBuild(settings.home)
    if build.is_built():
        return ServerChoice("llama-server", build.server_binary)
    earlier = build.failure()
    if earlier is not None and wanted == "auto":
        return ServerChoice("llama-cpp-python", note=_fallback_note(earlier, build, earlier_failure=True))
    if not allow_build and wanted == "auto":
        return ServerChoice(
            "llama-cpp-python",
            note=(
                "llama-server is not built yet; using the llama-cpp-python server, which answers one request "
                "at a time. Build it once with `graphmem llm build` (scripts/install.sh does) or start the "
                "model with `graphmem llm start`."
            ),
        )
    try:
        build.ensure(progress=progress)
    except LocalServiceError as exc:
        if wanted == "llama-server":
            raise
        return ServerChoice("llama-cpp-python", note=_fallback_note(str(exc), build, earlier_failure=False))
    return ServerChoice("llama-server", build.server_binary)


def _fallback_note(error: str, build: LlamaBuild, *, earlier_failure: bool) -> str:
    first = error.strip().splitlines()[0] if error.strip() else "unknown error"
    when = "an earlier build of llama-server failed" if earlier_failure else "building llama-server failed"
    return (
        f"{when} ({first[:300]}); using the llama-cpp-python server instead, which answers one request at "
        f"a time. Log: {build.log_file}. Retry with `graphmem llm build`, or set "
        "GRAPHMEM_LOCAL_LLM_SERVER=llama-cpp-python to silence this."
    )


def llama_server_command(binary: Path, model: Path, alias: str, settings: Settings, *, host: str) -> list[str]:
    """The ``llama-server`` command line for ``settings`` (every value explicit, none from defaults
    that a llama.cpp update could change)."""
    parallel = settings.local_llm_parallel
    threads = str(settings.local_llm_threads)
    return [
        str(binary),
        "--model", str(model),
        "--alias", alias,
        "--host", host,
        "--port", str(settings.local_llm_port),
        # -c is the whole KV cache; without --kv-unified each slot gets an equal share of it.
        "--ctx-size", str(settings.local_llm_ctx * parallel),
        "--parallel", str(parallel),
        "--no-kv-unified",
        "--cont-batching",
        "--threads", threads,
        "--threads-batch", threads,
        "--jinja",  # the model's own chat template; tools and response_format become grammars
        "--cache-prompt",
        "--cache-reuse", str(CACHE_REUSE_TOKENS),
        "--cache-ram", str(CACHE_RAM_MIB),
        "--slot-prompt-similarity", str(SLOT_PROMPT_SIMILARITY),
        "--metrics",  # /metrics: the client's timeout follows the server's progress (llm/progress.py)
        "--slots",  # /slots: per-slot state for `graphmem llm status` and debugging
        "--no-webui",
    ]  # fmt: skip


def llama_server_env() -> dict[str, str]:
    """The environment for llama-server: without ``LLAMA_*`` variables (``LLAMA_ARG_*`` set options
    behind our command line's back) and without a proxy (the server needs none)."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith(("LLAMA_", "HF_"))}
