"""A new machine's first `graphmem demo`: while llama-server compiles in the background, the demo's
turns are stored raw and its questions answered by search, with no LLM call (issue 29)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graphmem.config import Settings
from graphmem.demo.sample import CONVERSATION, QUESTIONS
from graphmem.interfaces.cli.demo import background_build, raw_first
from graphmem.models import EnrichmentStatus, Scope
from graphmem.service import AsyncMemoryService
from graphmem.service.chat_model import ChatModelSlot


async def test_the_turns_are_stored_and_searched_without_the_model(
    settings: Settings, scope: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_model(self: Any) -> Any:
        raise AssertionError("the raw phase asked for the LLM")

    monkeypatch.setattr(ChatModelSlot, "caller", no_model)
    local = settings.model_copy(update={"llm_provider": "local"})
    summary = await raw_first(local, scope, minutes_building=2.0)

    assert summary["notes"] == len(CONVERSATION) and summary["first_note_seconds"] > 0
    assert set(summary["found"]) == set(QUESTIONS) and all(summary["found"].values())
    service = await AsyncMemoryService.create(local)
    async with service as svc:
        notes = await svc.list(scope, limit=50)
        assert len(notes) == len(CONVERSATION)
        assert {n.enrichment for n in notes} == {EnrichmentStatus.RAW}
        # each turn after the first of its session follows the one before it
        follows = [lk for n in notes for lk in await svc.links(n.id, scope) if lk.source_id == n.id]
        sessions = {t.session for t in CONVERSATION}
        assert len(follows) == len(CONVERSATION) - len(sessions)


def test_a_running_background_build_is_found_and_a_finished_one_is_not(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, llm_provider="local")
    assert background_build(settings) is None  # none started
    root = tmp_path / "llama.cpp"
    root.mkdir()
    build = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (root / "background-build.pid").write_text(f"{build.pid}\n")
        (root / "background-build.log").write_text("configuring\n[ 42%] Building CXX object server.cpp.o\n")
        found = background_build(settings)
        assert found is not None and found.pid == build.pid
        assert found.last_line() == "[ 42%] Building CXX object server.cpp.o"
        assert background_build(settings.model_copy(update={"local_llm_server": "llama-cpp-python"})) is None
        (root / "background-build.done").write_text("0\n")
        assert background_build(settings) is None
    finally:
        build.kill()
        build.wait()
