"""The e2e tests run the real local model. CI compiles llama-server in the background while the other
tests run (``scripts/install.sh --build-in-background``); these tests are ordered last (the root
conftest) and wait here for that build before any of them looks for it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.e2e import local_build


@pytest.fixture(scope="session", autouse=True)
def _background_build_finished(request: pytest.FixtureRequest) -> Iterator[None]:
    waited = local_build.wait_for_background_build()
    started = time.monotonic()
    yield
    # Said in CI's log, where the suite's critical path shows: the build, or the e2e tests after it.
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"e2e: waited {waited:.0f} s for the background llama-server build, then ran "
            f"{time.monotonic() - started:.0f} s"
        )


@pytest.fixture(scope="module")
def local_model_servable() -> None:
    """Skip the module when the 0.5B model cannot be served here (no weights, no server)."""
    if (why := local_build.missing()) is not None:
        pytest.skip(why)
