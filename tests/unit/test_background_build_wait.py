"""CI compiles llama-server in the background (``scripts/install.sh --build-in-background``); the e2e
tests wait for it through ``tests/e2e/local_build.wait_for_background_build``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.local_build import wait_for_background_build


def _files(home: Path, pid: int) -> Path:
    root = home / "llama.cpp"
    root.mkdir(parents=True)
    (root / "background-build.pid").write_text(f"{pid}\n")
    return root


def test_no_background_build_means_no_wait(tmp_path: Path) -> None:
    assert wait_for_background_build(tmp_path) == 0.0


def test_waits_while_the_build_runs_and_not_after_it_is_done(tmp_path: Path) -> None:
    build = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    try:
        root = _files(tmp_path, build.pid)
        started = time.monotonic()
        waited = wait_for_background_build(tmp_path)
        assert build.poll() is not None or (root / "background-build.done").exists()
        assert waited > 0.5 and time.monotonic() - started >= waited
    finally:
        build.wait()
    (root / "background-build.done").write_text("0\n")
    assert wait_for_background_build(tmp_path) < 0.1


def test_a_build_that_runs_too_long_is_an_error(tmp_path: Path) -> None:
    build = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        _files(tmp_path, build.pid)
        with pytest.raises(TimeoutError, match="background llama-server build"):
            wait_for_background_build(tmp_path, timeout=0.5)
    finally:
        build.kill()
        build.wait()
