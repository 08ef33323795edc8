"""The real 0.5B model behind llama.cpp's llama-server (graphmem's default local server).

Needs the cached build (`graphmem llm build`, which scripts/install.sh runs) in GRAPHMEM_HOME and the
0.5B part packages; skipped without them. A build that was tried and failed is a test failure.
Checked here: start, the first completion and reuse; json_schema structured output for graphmem's
schemas; two requests decoded together; and a cancelled call stopped on the server.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from graphmem.config import Settings, load_settings
from graphmem.llm.calls import LLMCaller
from graphmem.llm.clients import make_chat_model, structured_method
from graphmem.llm.outputs import NoteEnrichment
from graphmem.llm.progress import decode_steps
from graphmem.llm.prompts import enrich_messages
from graphmem.local.llama_build import LlamaBuild
from graphmem.local.llm_server import GGUF_MODELS, LocalLLM
from graphmem.models import Note, Scope, Usage
from graphmem.service.linking import EvolutionDecision
from graphmem.service.linking.prompts import evolve_messages

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="session"), pytest.mark.usefixtures("built")]

SPEC = GGUF_MODELS["qwen2.5-coder-0.5b"]
BUILD = LlamaBuild(load_settings().home)


@pytest.fixture(scope="module")
def built() -> None:
    """Checked when the tests run, not at collection: CI builds llama-server beside the other tests."""
    if importlib.util.find_spec(SPEC.module(1)) is None:
        pytest.skip(f"0.5B weights not installed: {SPEC.pip_command()}")
    if not BUILD.is_built():
        if BUILD.failure() is not None:
            pytest.fail(f"llama-server did not build: {BUILD.failure()}", pytrace=False)
        pytest.skip("llama-server is not built: run `graphmem llm build`")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("llama-server-home")
    (home / "llama.cpp").symlink_to(BUILD.root)  # the cached build, not a second compile
    return Settings(  # type: ignore[call-arg]
        home=home,
        llm_provider="local",
        structured_output_method="auto",
        local_model="qwen2.5-coder-0.5b",
        local_llm_server="llama-server",  # a failed start must fail here, not fall back
        local_llm_port=_free_port(),
        local_llm_ctx=2048,
        local_llm_parallel=2,
        local_llm_threads=1,  # llama.cpp threads spin-wait: 2 threads on a busy 2-core runner ran 5x slower
        llm_max_tokens=384,
        llm_timeout=600.0,  # seconds without progress: a busy CI runner is slow, not broken
    )


@pytest.fixture(scope="module")
def llm(settings: Settings) -> Iterator[LocalLLM]:
    local = LocalLLM(settings, show_progress=False)
    started = local.start()
    assert not started.reused and started.server == "llama-server" and started.note is None
    try:
        yield local
    finally:
        local.stop()
        Path(local.model_path).unlink(missing_ok=True)  # 0.5 GB: don't leave it in pytest's tmp


def _chat(settings: Settings, llm: LocalLLM) -> BaseChatModel:
    """What the edge builds (graphmem.local.chat_model) for a started server."""
    return make_chat_model(settings, base_url=llm.base_url, model=llm.model_name, local_server=llm.server)


def _get(llm: LocalLLM, path: str) -> Any:
    with urllib.request.urlopen(llm.base_url.removesuffix("/v1") + path, timeout=120) as resp:
        body = resp.read()
    return json.loads(body) if path != "/metrics" else body.decode()


SCOPE = Scope(user_id="e2e")
NEW = Note(content="Rufus, Alice's beagle, hid under the bed during last night's thunderstorm.", scope=SCOPE)
NEIGHBOURS = [
    Note(id="n-dog1", content="Alice adopted a beagle called Rufus in March.", scope=SCOPE, context="Alice's dog."),
    Note(id="n-bake", content="Bruno bakes sourdough bread on Sundays.", scope=SCOPE, context="Bruno's baking."),
]


async def test_structured_output_is_grammar_constrained(settings: Settings, llm: LocalLLM) -> None:
    assert llm.status().server == "llama-server"
    chat = _chat(settings, llm)
    method = structured_method(settings, chat_model=chat)  # as the service picks it
    assert method == "json_schema"
    caller = LLMCaller(chat, method=method, repair_attempts=1)

    usage = Usage()
    enrichment, _ = await caller.structured(NoteEnrichment, enrich_messages(NEW.content), usage)
    assert isinstance(enrichment, NoteEnrichment) and enrichment.is_usable()
    assert usage.repairs == 0, "the grammar should make the first reply valid"
    assert usage.input_tokens > 0 and usage.output_tokens > 0

    usage = Usage()
    decision, rejected = await caller.structured(EvolutionDecision, evolve_messages(NEW, NEIGHBOURS), usage)
    assert isinstance(decision, EvolutionDecision), f"no usable decision ({usage.repairs} repairs)"
    assert isinstance(rejected, list)  # ids and types are checked by the service, not here


async def test_the_prompt_cache_is_counted(settings: Settings, llm: LocalLLM) -> None:
    """The tokens the server took from its prompt cache reach ``Usage`` (llama-server's
    ``prompt_tokens_details.cached_tokens`` through langchain-openai): the same prompt asked twice is
    processed once; `eval locomo` reports input less cache as the tokens the server processed."""
    caller = LLMCaller(_chat(settings, llm), method="json_schema", repair_attempts=0)
    messages = enrich_messages("Marta repaired her grandfather's radio and it played a 1962 broadcast.")
    first, second = Usage(), Usage()
    await caller.text(messages, first, max_tokens=4)
    await caller.text(messages, second, max_tokens=4)
    assert first.input_tokens == second.input_tokens > 0
    assert second.cached_input_tokens >= second.input_tokens - 2  # all but the last token(s) reused
    assert first.cached_input_tokens < second.cached_input_tokens


async def test_two_requests_are_decoded_together(settings: Settings, llm: LocalLLM) -> None:
    chat = _chat(settings.model_copy(update={"llm_max_tokens": 48}), llm)
    prompts = [f"Write a list of {n} fruits, one per line." for n in ("twenty", "thirty")]
    replies = await asyncio.gather(*(chat.ainvoke([HumanMessage(p)]) for p in prompts))
    assert all(r.content for r in replies)
    metrics = _get(llm, "/metrics")
    line = next(x for x in metrics.splitlines() if x.startswith("llamacpp:n_busy_slots_per_decode"))
    assert float(line.split()[-1]) > 1.0, "the two requests never shared a decode step"
    assert decode_steps(metrics) is not None  # what the client's progress timeout reads


async def test_a_cancelled_call_stops_on_the_server(settings: Settings, llm: LocalLLM) -> None:
    chat = _chat(settings.model_copy(update={"llm_max_tokens": 400}), llm)
    log_before = llm.log_file.read_text(errors="replace").count("cancel task")
    call = asyncio.ensure_future(chat.ainvoke([HumanMessage("Count from 1 to 400, one number per line.")]))
    for _ in range(600):  # until it generates (polled sparsely: see graphmem/llm/progress.py)
        await asyncio.sleep(1.0)
        busy = [s for s in _get(llm, "/slots") if s["is_processing"]]
        if busy and busy[0]["next_token"][0]["n_decoded"] > 0:
            break
    else:
        pytest.fail("the call never started generating")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    deadline = time.monotonic() + 120
    while llm.log_file.read_text(errors="replace").count("cancel task") == log_before:
        assert time.monotonic() < deadline, "llama-server kept working on the abandoned call"
        await asyncio.sleep(0.5)
    while [s for s in _get(llm, "/slots") if s["is_processing"]]:  # released on its next step
        assert time.monotonic() < deadline, "the cancelled task still holds its slot"
        await asyncio.sleep(0.5)


async def test_reuse_and_stop(settings: Settings, llm: LocalLLM) -> None:
    again = LocalLLM(settings, show_progress=False).start()
    assert again.reused and again.server == "llama-server"
    assert llm.stop()
    assert not llm.status().running
    assert not llm.stop()
