"""The e2e tests run the real local model. CI compiles llama-server in the background while the other
tests run (``scripts/install.sh --build-in-background``); these tests are ordered last (the root
conftest) and wait here for that build before any of them looks for it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.e2e import local_build

_TIMES: dict[str, float] = {}


@pytest.fixture(scope="session", autouse=True)
def _background_build_finished() -> Iterator[None]:
    _TIMES["waited"] = local_build.wait_for_background_build()
    started = time.monotonic()
    yield
    _TIMES["ran"] = time.monotonic() - started


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Said in CI's log, where the suite's critical path shows: the build, or the e2e tests after it."""
    if "ran" in _TIMES:
        terminalreporter.write_line(
            f"e2e: waited {_TIMES['waited']:.0f} s for the background llama-server build, then ran {_TIMES['ran']:.0f} s"
        )


@pytest.fixture(scope="module")
def local_model_servable() -> None:
    """Skip the module when the 0.5B model cannot be served here (no weights, no server)."""
    if (why := local_build.missing()) is not None:
        pytest.skip(why)
