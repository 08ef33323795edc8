"""The e2e tests run the real local model. CI compiles llama-server in the background while the other
tests run (``scripts/install.sh --build-in-background``); these tests are ordered last (the root
conftest) and wait here for that build before any of them looks for it."""

from __future__ import annotations

import pytest

from tests.e2e import local_build


@pytest.fixture(scope="session", autouse=True)
def _background_build_finished() -> None:
    waited = local_build.wait_for_background_build()
    if waited > 1:
        print(f"\n(waited {waited:.0f} s for the background llama-server build)")


@pytest.fixture(scope="module")
def local_model_servable() -> None:
    """Skip the module when the 0.5B model cannot be served here (no weights, no server)."""
    if (why := local_build.missing()) is not None:
        pytest.skip(why)
