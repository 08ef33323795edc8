"""`graphmem demo` says what it waits for before a slow step runs, with the time it takes (issue 29):
the step helper on a terminal and off one, and the demo's local-model start with fake slow steps."""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from graphmem.config import load_settings
from graphmem.interfaces.cli import demo
from graphmem.interfaces.cli.waiting import Waiting


def _console(*, terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=200, color_system=None), out


def test_a_step_is_announced_before_it_runs_and_timed() -> None:
    con, out = _console(terminal=False)
    seen: list[str] = []
    with Waiting(con).step("starting Neo4j", hint="waits until Bolt answers") as step:
        seen.append(out.getvalue())  # what the user reads while the step runs
        time.sleep(0.05)
        step.update("Starting Neo4j 5.26 (pid 1)")
    assert "waiting for: starting Neo4j (waits until Bolt answers) ..." in seen[0]
    assert "done starting Neo4j in" in out.getvalue() and step.seconds >= 0.05
    assert step.lines == ["Starting Neo4j 5.26 (pid 1)"]


def test_on_a_terminal_the_spinner_names_the_step_and_its_progress() -> None:
    con, out = _console(terminal=True)
    with Waiting(con).step("building llama-server", hint="once") as step:
        assert step._progress is not None
        task = step._progress.tasks[0]
        assert task.description == "building llama-server (once)" and task.elapsed is not None
        step.update("[ 42%] Building CXX object")
        description = step._progress.tasks[0].description
        assert description.startswith("building llama-server: ") and "42%] Building CXX object" in description
    assert "done building llama-server in" in out.getvalue()


def test_a_failing_step_is_not_reported_done() -> None:
    con, out = _console(terminal=False)
    with pytest.raises(RuntimeError), Waiting(con).step("starting Neo4j"):
        raise RuntimeError("no java")
    assert "waiting for: starting Neo4j" in out.getvalue() and "done" not in out.getvalue()


@dataclass
class _Status:
    running: bool = False
    model_ready: bool = False


@dataclass
class _Start:
    base_url: str
    reused: bool = False
    seconds: float = 0.1
    server: str = "llama-server"
    note: str | None = None


def test_the_demo_says_what_it_waits_for_on_a_first_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A first run: the weights are not assembled and llama-server is not built. Each step is named
    on screen before the (fake, slow) step starts."""
    con, out = _console(terminal=False)
    monkeypatch.setattr(demo, "console", con)
    on_screen: dict[str, str] = {}

    class FakeLLM:
        def __init__(self, settings: Any, *, show_progress: bool = True) -> None:
            self.spec = type("Spec", (), {"file_name": "qwen.gguf"})()
            self.model_name = "qwen"
            self.server = "llama-server"

        def status(self) -> _Status:
            return _Status()

        def model_ready(self) -> bool:
            return _Status().model_ready

        def ensure_model(self) -> Path:
            on_screen["assemble"] = out.getvalue()
            time.sleep(0.05)
            return tmp_path / "qwen.gguf"

        def start(self, *, progress: Any = None, allow_build: bool = True, timeout: float = 180.0) -> _Start:
            on_screen["start"] = out.getvalue()
            assert allow_build and progress is not None
            progress("[ 10%] compiling")
            time.sleep(0.05)
            return _Start("http://127.0.0.1:9/v1")

    import graphmem.local.llama_build as llama_build
    import graphmem.local.llm_server as llm_server

    monkeypatch.setattr(llm_server, "LocalLLM", FakeLLM)
    monkeypatch.setattr(llama_build.LlamaBuild, "is_built", lambda self: False)
    settings = load_settings().model_copy(update={"llm_provider": "local", "local_llm_server": "auto"})
    model = demo._start_local_model(settings, Waiting(con))
    assert "waiting for: assembling the model qwen.gguf" in on_screen["assemble"]
    assert "waiting for: building llama-server, then starting the LLM server (once: compiles" in on_screen["start"]
    assert "done assembling the model" in on_screen["start"]
    text = out.getvalue()
    assert "done building llama-server, then starting the LLM server in" in text
    assert "LLM qwen (llama-server, started in 0.1 s)" in text
    assert model.openai_api_base == "http://127.0.0.1:9/v1"
