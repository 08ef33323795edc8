"""llama-server: the cached build's flags and key, the server choice with its fallback, the command
line, and LocalLLM starting, reusing and stopping a stand-in ``llama-server`` (a small Python HTTP
server at the build's path, so no compiler runs here)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tarfile
from pathlib import Path

import pytest

from graphmem.config import Settings
from graphmem.errors import LocalServiceError
from graphmem.local.llama_build import (
    LLAMA_CPP_PYTHON_VERSION,
    OFF_HOT_PATH_TARGETS,
    PORTABLE_X86_FLAGS,
    PROJECT_INCLUDE,
    TARGETS,
    LlamaBuild,
    build_key,
    cmake_flags,
)
from graphmem.local.llama_server import choose_server, llama_server_command, llama_server_env
from graphmem.local.llm_server import LocalLLM
from tests.niced_start import assert_niced_with_its_group, start_niced
from tests.unit.test_llm_clients import free_port


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("NEO4J_", "GRAPHMEM_", "LLAMA_")) or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def make(tmp_path: Path, **overrides: object) -> Settings:
    return Settings(home=tmp_path / "home", **overrides)  # type: ignore[arg-type]


# ---------------------------------------------------------------- build


def test_flags_are_portable_text_only_and_offline() -> None:
    flags = cmake_flags("x86_64")
    assert set(PORTABLE_X86_FLAGS) <= set(flags) and "-DGGML_NATIVE=OFF" in flags
    assert not any("march=native" in f or f == "-DGGML_NATIVE=ON" for f in flags)
    for off in ("LLAMA_BUILD_UI", "LLAMA_USE_PREBUILT_UI", "LLAMA_OPENSSL", "LLAMA_BUILD_TESTS", "BUILD_SHARED_LIBS"):
        assert f"-D{off}=OFF" in flags
    assert not set(PORTABLE_X86_FLAGS) & set(cmake_flags("aarch64"))  # AVX flags only on x86-64


def test_key_changes_with_flags_or_version_only() -> None:
    flags = cmake_flags("x86_64")
    assert build_key(flags) == build_key(list(flags))
    assert build_key(flags) != build_key([*flags, "-DGGML_AVX512=ON"])
    assert build_key(flags) != build_key(flags, version="0.0.1")
    assert build_key(flags) != build_key(flags, targets=("llama-server",))


def test_empty_home_has_no_build(tmp_path: Path) -> None:
    build = LlamaBuild(tmp_path)
    assert not build.is_built() and build.info() is None and build.failure() is None
    assert build.dir.parent == tmp_path / "llama.cpp" and build.server_binary.name == "llama-server"


def fake_build(home: Path, server_script: str | None = None) -> LlamaBuild:
    """A cache entry as ``LlamaBuild.ensure`` leaves it; ``llama-server`` is ``server_script`` if given."""
    build = LlamaBuild(home)
    build.bin_dir.mkdir(parents=True)
    for target in TARGETS:
        path = build.binary(target)
        path.write_text(server_script if server_script and target == "llama-server" else "#!/bin/sh\nexit 0\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    record = {
        "key": build.key, "version": LLAMA_CPP_PYTHON_VERSION, "flags": build.flags, "targets": list(TARGETS),
        "sdist_sha256": "0" * 64, "seconds": 1.0, "jobs": 2, "compiler": "c++", "built_at": 0.0,
    }  # fmt: skip
    build.record_file.write_text(json.dumps(record))
    return build


def test_a_cached_build_is_used_without_building(tmp_path: Path) -> None:
    s = make(tmp_path)
    build = fake_build(s.home)
    assert build.is_built() and build.info() is not None
    choice = choose_server(s)
    assert (choice.kind, choice.binary, choice.note) == ("llama-server", build.server_binary, None)


def test_a_failed_build_falls_back_with_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no cmake, no compiler
    s = make(tmp_path)
    with pytest.raises(LocalServiceError, match="needs cmake"):
        choose_server(make(tmp_path, local_llm_server="llama-server"))
    build = LlamaBuild(s.home)
    assert build.failure() is not None and "cmake" in str(build.failure())
    choice = choose_server(s)  # auto: the recorded failure, no second attempt
    assert choice.kind == "llama-cpp-python" and choice.binary is None
    assert choice.note is not None
    assert "llama-server failed" in choice.note and "graphmem llm build" in choice.note and "cmake" in choice.note
    assert choose_server(make(tmp_path, local_llm_server="llama-cpp-python")).note is None


def test_a_successful_build_clears_the_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    build = LlamaBuild(tmp_path)
    with pytest.raises(LocalServiceError):
        build.ensure()
    monkeypatch.undo()
    fake_build(tmp_path)
    assert build.ensure().key == build.key  # cached: returns at once, compiles nothing
    assert build.failure() is None


# ---------------------------------------------------------------- command line


def test_command_line(tmp_path: Path) -> None:
    s = make(tmp_path, local_llm_port=18123, local_llm_threads=3, local_llm_ctx=2048, local_llm_parallel=4)
    cmd = llama_server_command(Path("/b/llama-server"), Path("/m/x.gguf"), "x-alias", s, host="127.0.0.1")
    assert cmd[0] == "/b/llama-server"
    switches = {"--no-kv-unified", "--cont-batching", "--jinja", "--cache-prompt", "--metrics", "--slots", "--no-webui"}
    assert switches <= set(cmd)
    rest = [x for x in cmd[1:] if x not in switches]
    flags = dict(zip(rest[::2], rest[1::2], strict=True))
    assert flags["--model"] == "/m/x.gguf" and flags["--alias"] == "x-alias"
    assert (flags["--host"], flags["--port"]) == ("127.0.0.1", "18123")
    assert flags["--ctx-size"] == str(2048 * 4) and flags["--parallel"] == "4"  # each slot gets 2048
    assert flags["--threads"] == flags["--threads-batch"] == "3"
    assert int(flags["--cache-reuse"]) > 0 and 0 < float(flags["--slot-prompt-similarity"]) < 1


def test_environment_drops_llama_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMA_ARG_N_PARALLEL", "64")  # would override --parallel behind our back
    monkeypatch.setenv("HF_TOKEN", "x")
    monkeypatch.setenv("KEEP_ME", "1")
    env = llama_server_env()
    assert "LLAMA_ARG_N_PARALLEL" not in env and "HF_TOKEN" not in env and env["KEEP_ME"] == "1"


# ---------------------------------------------------------------- LocalLLM with a stand-in server

# Answers like llama-server: /props with total_slots, /v1/models with the alias, a completion.
STAND_IN = f"""#!{sys.executable}
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
alias = args["--alias"]
ROUTES = {{"/props": {{"total_slots": int(args["--parallel"])}},
          "/v1/models": {{"object": "list", "data": [{{"id": alias}}]}}}}
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def do_GET(self):
        if self.path in ROUTES: self.reply(ROUTES[self.path])
        else: self.send_error(404)
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.reply({{"choices": [{{"index": 0, "message": {{"role": "assistant", "content": "h"}}}}]}})
ThreadingHTTPServer(("127.0.0.1", int(args["--port"])), H).serve_forever()
"""


def test_start_reuse_and_stop_llama_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = make(tmp_path, local_model="qwen2.5-coder-0.5b", local_llm_port=free_port(), local_llm_parallel=3)
    fake_build(s.home, STAND_IN)
    llm = LocalLLM(s, show_progress=False)
    monkeypatch.setattr(llm, "ensure_model", lambda: tmp_path / "model.gguf")  # no weights needed here
    try:
        started = llm.start(timeout=60)
        assert not started.reused and started.server == "llama-server" and started.note is None
        assert llm.server == "llama-server"
        record = json.loads(llm.pid_file.read_text())
        assert record["server"] == "llama-server" and "--parallel" in record["cmd"]
        st = llm.status()
        assert st.running and st.managed and st.server == "llama-server" and st.model == llm.model_name

        again = LocalLLM(s, show_progress=False)  # another process, same home and port
        result = again.start()
        assert result.reused and result.pid == started.pid and again.server == "llama-server"
    finally:
        stopped = llm.stop()
    assert stopped and not llm.status().running


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="the kernel has no autogroups")
def test_a_niced_start_gives_the_server_session_its_niceness(tmp_path: Path) -> None:
    """`nice -n 5 graphmem llm start`: the server runs in a session of its own, which the kernel's
    autogroups schedule at nice 0 beside every other session unless the group is told."""
    port = free_port()
    script = f"""
from pathlib import Path
from graphmem.local.llm_server import LocalLLM
from tests.unit.test_llama_server import STAND_IN, fake_build, make
tmp = Path({str(tmp_path)!r})
s = make(tmp, local_model="qwen2.5-coder-0.5b", local_llm_port={port}, local_llm_parallel=1)
fake_build(s.home, STAND_IN)
llm = LocalLLM(s, show_progress=False)
llm.ensure_model = lambda: tmp / "model.gguf"
print(llm.start(timeout=60).pid)
"""
    pid = start_niced(script, timeout=120)
    try:
        assert_niced_with_its_group(pid)
    finally:
        LocalLLM(make(tmp_path, local_model="qwen2.5-coder-0.5b", local_llm_port=port), show_progress=False).stop()


def test_a_loading_llama_server_is_recognised(tmp_path: Path) -> None:
    """While it loads the model, llama-server answers 503 "Loading model": not another program."""
    import http.server
    import threading

    class Loading(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = b'{"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}'
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Loading)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        llm = LocalLLM(make(tmp_path, local_llm_port=int(server.server_address[1])))
        assert llm._probe() == "llama-server"
        assert llm.status().running and llm.status().server == "llama-server"
    finally:
        server.shutdown()
        server.server_close()


def test_no_compiling_unless_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service starting the model on its first call falls back rather than compile for minutes."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # a build attempt would fail and be recorded
    s = make(tmp_path)
    choice = choose_server(s, allow_build=False)
    assert choice.kind == "llama-cpp-python" and choice.note is not None and "graphmem llm build" in choice.note
    assert LlamaBuild(s.home).failure() is None  # nothing was tried


FAKE_CMAKE = """cmake_minimum_required(VERSION 3.14)
project(fake_llama C)
foreach(t llama-server llama-bench other-tool)
  file(WRITE ${CMAKE_BINARY_DIR}/${t}.c "#include <stdio.h>\\nint main(void){puts(\\"version: fake\\");return 0;}\\n")
  add_executable(${t} ${CMAKE_BINARY_DIR}/${t}.c)
  set_target_properties(${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endforeach()
"""


@pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("cmake", "cc", "c++")), reason="needs cmake and a C compiler"
)
def test_the_build_pipeline_on_a_tiny_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unpack vendor/llama.cpp from an sdist, configure with the flags, build only the two targets,
    smoke-test and cache them (a stand-in source that compiles in seconds; pip is not called)."""
    import tarfile

    src = tmp_path / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"
    (src / "tools" / "server").mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(FAKE_CMAKE)
    sdist = tmp_path / "llama_cpp_python-0.3.36.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(tmp_path / "llama_cpp_python-0.3.36", arcname="llama_cpp_python-0.3.36")

    build = LlamaBuild(tmp_path / "home", jobs=1)
    monkeypatch.setattr(build, "_download_sdist", lambda dest: sdist)
    lines: list[str] = []
    info = build.ensure(progress=lines.append)
    assert build.is_built() and info == build.info() and info.key == build.key
    assert info.flags == build.flags and info.sdist_sha256 == hashlib.sha256(sdist.read_bytes()).hexdigest()
    assert sorted(p.name for p in build.bin_dir.iterdir()) == ["llama-bench", "llama-server"]  # not other-tool
    assert any("compiling" in line for line in lines)
    log = build.log_file.read_text()
    assert "-DLLAMA_BUILD_UI=OFF" in log and "version: fake" in log  # configured with the flags, smoke-tested
    assert "-DCMAKE_PROJECT_INCLUDE=" in log
    assert not list(build.root.glob("llama-build-*"))  # the source and build trees are gone
    mtime = build.server_binary.stat().st_mtime_ns
    assert build.ensure().key == info.key and build.server_binary.stat().st_mtime_ns == mtime  # cached


@pytest.mark.parametrize("filters", [True, False], ids=["with-tar-filters", "python-before-3.11.4"])
def test_unpacking_keeps_inside_the_build_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filters: bool
) -> None:
    """vendor/llama.cpp unpacks with its in-tree links on every supported Python (3.11.2 has no
    ``filter=``: CI's system Python failed the build there); a link out of the folder is refused."""
    import io
    import tarfile

    from graphmem.errors import LocalServiceError
    from graphmem.local import llama_build

    if not filters:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)

    def sdist(name: str, link: str) -> Path:
        path = tmp_path / name
        with tarfile.open(path, "w:gz") as archive:
            for folder in ("p/vendor/llama.cpp", "p/vendor/llama.cpp/tools", "p/vendor/llama.cpp/tools/server"):
                archive.addfile(_dir(folder))
            data = b"project(x)\n"
            info = tarfile.TarInfo("p/vendor/llama.cpp/CMakeLists.txt")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
            sym = tarfile.TarInfo("p/vendor/llama.cpp/tools/server/lists.txt")
            sym.type, sym.linkname = tarfile.SYMTYPE, link
            archive.addfile(sym)
        return path

    root = llama_build._extract_llama_cpp(sdist("ok.tar.gz", "../../CMakeLists.txt"), tmp_path / "ok")
    assert (root / "tools" / "server" / "lists.txt").read_text() == "project(x)\n"
    with pytest.raises(LocalServiceError):
        llama_build._extract_llama_cpp(sdist("bad.tar.gz", "../../../../../../etc/passwd"), tmp_path / "bad")
    assert not (tmp_path / "bad" / "p" / "vendor" / "llama.cpp" / "tools" / "server" / "lists.txt").exists()


def _dir(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    return info


HOT_AND_COLD_CMAKE = """cmake_minimum_required(VERSION 3.14)
project("llama.cpp" C)
file(WRITE ${CMAKE_BINARY_DIR}/x.c "int x(void){return 1;}\\n")
add_library(ggml-cpu STATIC ${CMAKE_BINARY_DIR}/x.c)
add_library(llama STATIC ${CMAKE_BINARY_DIR}/x.c)
add_library(llama-common STATIC ${CMAKE_BINARY_DIR}/x.c)
add_subdirectory(server)
"""


@pytest.mark.skipif(any(shutil.which(tool) is None for tool in ("cmake", "cc")), reason="needs cmake and a C compiler")
def test_only_code_off_the_hot_path_compiles_at_o1(tmp_path: Path) -> None:
    """The include lowers the optimisation of the listed targets, wherever they are defined, and of
    no other: ggml's kernels and the llama library keep the build type's -O3."""
    import subprocess

    src = tmp_path / "src"
    (src / "server").mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(HOT_AND_COLD_CMAKE)
    (src / "server" / "CMakeLists.txt").write_text("add_library(server-context STATIC ${CMAKE_BINARY_DIR}/x.c)\n")
    include = tmp_path / "include.cmake"
    include.write_text(PROJECT_INCLUDE)
    build = tmp_path / "build"
    configure = ["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"]
    subprocess.run(
        [*configure, "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", f"-DCMAKE_PROJECT_INCLUDE={include}"],
        check=True, capture_output=True,
    )  # fmt: skip
    commands = {
        re.search(r"CMakeFiles/([^/ ]+)\.dir/", entry["command"]).group(1): entry["command"]  # type: ignore[union-attr]
        for entry in json.loads((build / "compile_commands.json").read_text())
    }
    assert set(commands) == {"ggml-cpu", "llama", "llama-common", "server-context"}
    last_level = {target: re.findall(r" -O\d", command)[-1].strip() for target, command in commands.items()}
    assert last_level == {"ggml-cpu": "-O3", "llama": "-O3", "llama-common": "-O1", "server-context": "-O1"}
    assert {"llama-common", "server-context"} <= set(OFF_HOT_PATH_TARGETS)
