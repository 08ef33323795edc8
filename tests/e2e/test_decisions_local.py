"""The link/evolution decision with the real 0.5B model on a short gold conversation: whatever the
model proposes, no evolution may drift (every evolved context stays closest to its own note).

Needs the 0.5B part packages and llama-server as install.sh builds it (or the llama-cpp-python
fallback): tests/e2e/local_build.py.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem.config import Settings
from graphmem.evaluation.decisions import DecisionsConfig, GoldFile, load_gold, run_decisions_eval
from graphmem.llm.clients import make_chat_model
from graphmem.local.llm_server import LocalLLM
from graphmem.models import Scope
from graphmem.service import AsyncMemoryService, sentence_refusal, sentences, speaker_of
from tests.e2e import local_build

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("local_model_servable")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def local_settings(neo4j_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("llm-home")
    local_build.link_build(home)  # llama-server as install.sh built it; nothing compiles here
    return neo4j_server.settings.model_copy(  # type: ignore[no-any-return]
        update={
            "home": home,
            "llm_provider": "local",
            "local_model": "qwen2.5-coder-0.5b",
            "local_llm_port": _free_port(),
            "local_llm_ctx": 2048,
            "local_llm_threads": 2,  # run last, after the build, on an idle runner: 169 s against 265 s with 1 thread
            "llm_timeout": 600.0,
            "link_decision": "auto",  # the local default: pairwise
            "enable_links": True,
            "enable_evolution": True,
        }
    )


@pytest.fixture(scope="module")
def local_llm(local_settings: Settings) -> Iterator[LocalLLM]:
    local = LocalLLM(local_settings, show_progress=False)
    try:
        yield local
    finally:
        local.stop()
        Path(local.model_path).unlink(missing_ok=True)


async def test_no_evolution_drifts_on_a_short_conversation(
    local_settings: Settings, local_llm: LocalLLM, tmp_path: Path
) -> None:
    conv = load_gold(None, ["pottery-marathon"])[0]
    short = conv.model_copy(
        update={
            "turns": conv.turns[:6],
            "related": {p for p in conv.related if p[0] <= 6},
            "acceptable": {p for p in conv.acceptable if p[0] <= 6},
            "contradicts": set(),
        }
    )
    gold = tmp_path / "gold.json"
    gold.write_text(GoldFile(format="graphmem.decisions-gold/1", conversations=[short]).model_dump_json())
    model = make_chat_model(local_settings, base_url=local_llm.ensure_running(), model=local_llm.model_name)
    async with await AsyncMemoryService.create(local_settings, chat_model=model) as svc:
        result = await run_decisions_eval(svc, DecisionsConfig(gold=gold))
    o = result["overall"]
    assert o["turns"] == 6 and o["llm_calls_per_note"] > 0
    assert o["drift"] == 0, result["conversations"][0]["evolution_list"]
    assert o["false_contradicts_total"] == 0  # the pairwise decision never proposes CONTRADICTS


async def test_the_demo_conversation_gets_no_unsupported_statement(
    local_settings: Settings, local_llm: LocalLLM
) -> None:
    """Issue 27: whatever the real model writes, no note of the demo conversation says what its turn
    does not (the gold's must_not statements: whose sister, who offered whom, invented facts)."""
    conv = load_gold(None, ["pottery-marathon"])[0]
    settings = local_settings.model_copy(update={"enable_links": False, "enable_evolution": False})
    model = make_chat_model(settings, base_url=local_llm.ensure_running(), model=local_llm.model_name)
    scope = Scope(user_id="e2e-grounding", run_id=uuid.uuid4().hex[:12])
    async with await AsyncMemoryService.create(settings, chat_model=model) as svc:
        try:
            for turn in conv.turns:
                note = (await svc.add(turn.content, scope, event_time=turn.time)).note
                assert not turn.statements_made(note.context), (turn.n, note.context)
                for sentence in sentences(note.context):
                    assert sentence_refusal(sentence, turn.content, speaker_of(turn.content)) is None
        finally:
            for n in await svc.list(scope, limit=100):
                await svc.delete(n.id, scope)
