"""Scripts that use the service with the local model exit without a word on stderr (issue 29).

Each test runs a short script in a fresh interpreter (the README's Python example first), against the stub of the local llama-server
(``graphmem.evaluation.llm_stub``: OpenAI-compatible chat completions and llama-server's
``/metrics``, so the local model's client polls it as it polls the real server), and asserts an
empty stderr: ``close()`` (``with`` / ``async with``) stops what the service and the local model's
client started (the ``/metrics`` poll task, the HTTP connections, the sync facade's loop thread),
so nothing is left for the interpreter's shutdown to destroy ("Task was destroyed but it is
pending!", anyio's ``NoEventLoopError``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.evaluation.llm_stub import StubServer
from graphmem.models import Scope

ROOT = Path(__file__).resolve().parents[2]


def _readme_example() -> str:
    """README.md's "Using it from Python" example, as written, in the test's scope."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Using it from Python", 1)[1]
    found = re.search(r"```python\n(.*?)\n```", section, re.S)
    assert found is not None and 'Scope(user_id="alice")' in found.group(1)
    return "import sys\n" + found.group(1).replace('Scope(user_id="alice")', "Scope(user_id=sys.argv[1])")


ASYNC_SCRIPT = """
import asyncio
import sys
from graphmem import AsyncMemoryService, Scope

async def main() -> None:
    async with await AsyncMemoryService.create() as memory:
        me = Scope(user_id=sys.argv[1])
        await memory.add("Alice adopted a beagle called Rufus.", me)
        answer = await memory.ask("What is the name of Alice's dog?", me)
        print(answer.usage.total_tokens > 0)

asyncio.run(main())
"""

CLOSE_ONLY_SCRIPT = """
import sys
from graphmem import MemoryService, Scope
from graphmem.config import load_settings
from graphmem.llm import make_chat_model

settings = load_settings()
model = make_chat_model(settings)  # handed in, as graphmem.local.chat_model(settings) makes it
me = Scope(user_id=sys.argv[1])
memory = MemoryService(settings, chat_model=model)  # no `with`: close() by hand
memory.add("Alice adopted a beagle called Rufus.", me)
memory.close()
memory.close()  # twice is harmless
with MemoryService(settings, chat_model=model) as again:  # the model outlives the first service
    again.add("Rufus, Alice's beagle, hates thunderstorms.", me)
print("closed")
"""


@pytest.fixture
def llama_stub() -> Iterator[StubServer]:
    """The local llama-server's stand-in, with /metrics, on a free port."""
    server = StubServer(0, 0.05, r"\\b[0-9a-f]{32}\\b")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _run(script: str, stub: StubServer, scope: Scope) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "GRAPHMEM_LLM_PROVIDER": "local",
        "GRAPHMEM_LOCAL_LLM_PORT": str(stub.server_address[1]),
        "GRAPHMEM_LLM_TIMEOUT": "30",
    }
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run(
        [sys.executable, "-c", script, scope.user_id],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.parametrize("script", ["readme", ASYNC_SCRIPT, CLOSE_ONLY_SCRIPT], ids=["readme-sync", "async", "close"])
def test_a_script_on_the_local_model_exits_cleanly(script: str, llama_stub: StubServer, scope: Scope) -> None:
    done = _run(_readme_example() if script == "readme" else script, llama_stub, scope)
    assert done.returncode == 0, done.stderr
    assert llama_stub.served >= 1 and llama_stub.metric_polls >= 1  # the calls ran, and were watched
    assert done.stderr == ""
    assert done.stdout.strip()
