"""`graphmem serve` as a real process with the real local model (0.5B): the model starts in a worker
thread, so `/health` answers while it starts, and the first request that needs the LLM waits for it
without freezing the event loop (issue 13, deliverable 5).

Skipped without the 0.5B part packages or a local server to run them (tests/e2e/local_build.py).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphmem.models import Scope
from tests.e2e import local_build

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("local_model_servable")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_health_answers_while_serve_starts_the_local_model(settings: Any, scope: Scope, tmp_path: Path) -> None:
    exe = shutil.which("graphmem", path=str(Path(sys.executable).parent)) or shutil.which("graphmem")
    assert exe
    port, llm_port = _free_port(), _free_port()
    local_build.link_build(tmp_path / "home")  # llama-server as install.sh built it; nothing compiles here
    env = {
        **os.environ,
        "NEO4J_URI": settings.neo4j_uri,
        "GRAPHMEM_HOME": str(tmp_path / "home"),  # a fresh home: the model is assembled, then served
        "GRAPHMEM_AUTH_DISABLED": "true",
        "GRAPHMEM_LLM_PROVIDER": "local",
        "GRAPHMEM_LOCAL_MODEL": "qwen2.5-coder-0.5b",
        "GRAPHMEM_LOCAL_LLM_PORT": str(llm_port),
        "GRAPHMEM_LOCAL_LLM_THREADS": "1",
        "GRAPHMEM_LOCAL_LLM_CTX": "2048",
        "GRAPHMEM_LLM_MAX_TOKENS": "256",
        "GRAPHMEM_LLM_TIMEOUT": "600",
        "GRAPHMEM_ENABLE_LINKS": "false",  # one LLM call per note is enough here
        "GRAPHMEM_ENABLE_EVOLUTION": "false",
    }
    for key in ("GRAPHMEM_LLM_BASE_URL", "GRAPHMEM_LLM_API_KEY", "OPENAI_API_KEY"):
        env.pop(key, None)
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([exe, "serve", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    headers = {"X-User-Id": scope.user_id}
    try:
        states: list[str] = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                states.append(_llm_state(base))
                break
            except httpx.TransportError:
                assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
                time.sleep(0.2)
        if states[:1] != ["starting"]:
            pytest.skip(f"the model was {states[:1]} before /health first answered: nothing to observe")
        # The first add that needs the LLM, sent while the model still starts.
        added: dict[str, Any] = {}

        def add() -> None:
            r = httpx.post(
                base + "/v1/notes", json={"content": "Ana tunes her old violin."}, headers=headers, timeout=600
            )
            added.update(status=r.status_code, body=r.json(), at=time.monotonic())

        worker = threading.Thread(target=add)
        worker.start()
        answered_meanwhile = 0
        while worker.is_alive():
            r = httpx.get(base + "/health", timeout=30)  # served by the same event loop as the add
            assert r.status_code == 200 and r.json() == {"status": "ok"}
            states.append(_llm_state(base))
            if worker.is_alive():
                answered_meanwhile += 1
            time.sleep(0.2)
        worker.join()
        assert added["status"] == 201, added
        assert added["body"]["note"]["enrichment"] == "done"  # it waited for the model, then used it
        assert answered_meanwhile >= 1 and "starting" in states
        assert set(states) <= {"starting", "ready"}
        assert _llm_state(base) == "ready"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        _stop_local_llm(tmp_path / "home", llm_port)


def _llm_state(base: str) -> str:
    """The LLM's state from /v1/status (/health says only up or down, issue 16)."""
    r = httpx.get(base + "/v1/status", timeout=30)
    r.raise_for_status()
    return str(r.json()["llm"])


def _stop_local_llm(home: Path, port: int) -> None:
    """The model server outlives `graphmem serve` (it is shared, like `graphmem llm start`'s): stop it."""
    from graphmem.config import Settings
    from graphmem.local.llm_server import LocalLLM

    LocalLLM(Settings(home=home, local_llm_port=port, local_model="qwen2.5-coder-0.5b"), show_progress=False).stop()  # type: ignore[call-arg]
