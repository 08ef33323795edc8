"""Build llama.cpp's own ``llama-server`` and ``llama-bench`` and cache them under GRAPHMEM_HOME.

The source is the llama.cpp that the pinned ``llama-cpp-python`` sdist vendors
(``vendor/llama.cpp``), fetched with pip from the package registry, so the server runs the same
llama.cpp as the Python binding graphmem falls back to. Only the two targets are built, statically
linked (the cache folder can move), without the web UI (nothing is downloaded at build time), TLS
or curl, and on x86-64 with the same portable flags as ``scripts/install.sh``: a ``-march=native``
build crashed on its first completion on a VM whose CPU reports AMX. The code off the inference hot
path compiles at -O1 (``OFF_HOT_PATH_TARGETS``), a quarter less compile time.

Binaries live in ``<home>/llama.cpp/<key>/bin/``; the key hashes the source version, the CMake
flags, the targets and the -O1 include, so changing any of them builds anew and nothing else does. ``build.json`` next
to them records what was built and how long it took; ``failed.json`` records a failed build so
that ``graphmem llm start`` falls back at once instead of compiling again on every start
(``graphmem llm build`` always tries again).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from graphmem.errors import LocalServiceError
from graphmem.local.process import file_lock, tail

LLAMA_CPP_PYTHON_VERSION = "0.3.36"  # the same pin as the local-llm extra (pyproject.toml)
SDIST_REQUIREMENT = f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}"
TARGETS = ("llama-server", "llama-bench")
_FORMAT = 1  # bump when the cache layout changes

# Kept in step with scripts/install.sh (llama-cpp-python's CMAKE_ARGS): portable AVX2, no native.
PORTABLE_X86_FLAGS = (
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON",
)
_COMMON_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",  # self-contained binaries: no rpath into a deleted build tree
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",  # llama-bench lives under tools/
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_UI=OFF",  # no npm build ...
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # ... and no download of the prebuilt UI: an empty UI table
    "-DLLAMA_OPENSSL=OFF",  # the server listens on loopback HTTP only
)

# Off the inference hot path: the server's HTTP, JSON and chat-template code, argument parsing and the
# multimodal library llama-server links run once per request or per token beside the model, so they
# compile at -O1; ggml's kernels and the llama library (sampling, graph building) keep -O3. On 2 cores
# the build went from 284 s to 219 s with the same tokens per second (both servers side by side).
OFF_HOT_PATH_TARGETS = (
    "llama-common-base", "llama-common", "mtmd", "cpp-httplib", "server-context", "llama-server-impl",
    "llama-server", "llama-bench-impl", "llama-bench",
)  # fmt: skip
# Included after llama.cpp's project() (CMAKE_PROJECT_INCLUDE); the deferred call runs once every
# target exists. A CMake older than 3.19 (no DEFER) builds everything at -O3.
PROJECT_INCLUDE = f"""include_guard(GLOBAL)
if(CMAKE_VERSION VERSION_LESS 3.19)
  return()
endif()
function(graphmem_off_hot_path)
  foreach(target {" ".join(OFF_HOT_PATH_TARGETS)})
    if(TARGET ${{target}})
      set_property(TARGET ${{target}} APPEND PROPERTY COMPILE_OPTIONS -O1)
    endif()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY "${{CMAKE_SOURCE_DIR}}" CALL graphmem_off_hot_path)
"""


def cmake_flags(machine: str | None = None) -> list[str]:
    """The CMake configure flags for this machine (``platform.machine()`` by default)."""
    arch = (machine or platform.machine()).lower()
    flags = list(_COMMON_FLAGS)
    if arch in ("x86_64", "amd64"):
        flags += PORTABLE_X86_FLAGS
    return flags


def build_key(flags: list[str], *, version: str = LLAMA_CPP_PYTHON_VERSION, targets: tuple[str, ...] = TARGETS) -> str:
    """Cache key: changes exactly when the source version, the flags, the targets or the -O1 include change."""
    blob = json.dumps(
        {"format": _FORMAT, "version": version, "flags": flags, "targets": list(targets), "include": PROJECT_INCLUDE}
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class LlamaBuildInfo:
    """What ``build.json`` records about one cached build."""

    key: str
    version: str
    flags: list[str]
    targets: list[str]
    sdist_sha256: str
    seconds: float  # fetch + configure + compile
    jobs: int
    compiler: str
    built_at: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BackgroundBuild:
    """A llama-server build running in the background (its pid, start time and log)."""

    pid: int
    started: float  # epoch seconds
    log_file: Path
    done_file: Path  # install.sh writes the build's exit status here when it ends

    def running(self) -> bool:
        return not self.done_file.exists() and process_running(self.pid)

    def last_line(self) -> str:
        """The log's last line (cmake's "[ 42%] Building ..."), or "" before it has one."""
        try:
            lines = self.log_file.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1].strip() if lines else ""


def process_running(pid: int) -> bool:
    """The process exists and is not a zombie (a container's pid 1 may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


class LlamaBuild:
    """The cached llama.cpp build for ``home``: find it, build it, report on it. No I/O in ``__init__``."""

    def __init__(self, home: Path, *, flags: list[str] | None = None, jobs: int | None = None) -> None:
        self.flags = flags if flags is not None else cmake_flags()
        self.key = build_key(self.flags)
        self.root = home / "llama.cpp"
        self.dir = self.root / self.key
        self.bin_dir = self.dir / "bin"
        self.record_file = self.dir / "build.json"
        self.failure_file = self.dir / "failed.json"
        self.log_file = self.root / "build.log"
        self.jobs = jobs or os.cpu_count() or 1

    # -- queries (cheap: file checks only)

    def binary(self, name: str) -> Path:
        return self.bin_dir / name

    @property
    def server_binary(self) -> Path:
        return self.binary("llama-server")

    @property
    def bench_binary(self) -> Path:
        return self.binary("llama-bench")

    def is_built(self) -> bool:
        return self.record_file.is_file() and all(os.access(self.binary(t), os.X_OK) for t in TARGETS)

    def info(self) -> LlamaBuildInfo | None:
        try:
            return LlamaBuildInfo(**json.loads(self.record_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def failure(self) -> str | None:
        """The error of the last failed build with these flags, if it failed and none succeeded since."""
        try:
            return str(json.loads(self.failure_file.read_text())["error"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def background(self) -> BackgroundBuild | None:
        """The build ``scripts/install.sh --build-in-background`` started, while it runs; else None."""
        pid_file, done_file = self.root / "background-build.pid", self.root / "background-build.done"
        try:
            pid = int(pid_file.read_text().strip())
            started = pid_file.stat().st_mtime
        except (OSError, ValueError):
            return None
        build = BackgroundBuild(
            pid=pid, started=started, log_file=self.root / "background-build.log", done_file=done_file
        )
        return build if build.running() else None

    # -- the build

    def ensure(self, *, force: bool = False, progress: Callable[[str], None] | None = None) -> LlamaBuildInfo:
        """The cached build, building it first if absent (or ``force``).

        Args:
            force: rebuild even if a build with this key exists.
            progress: called with short status lines ("fetching the source", "[ 42%] ...").

        Raises:
            LocalServiceError: a tool is missing, the source cannot be fetched, or the build failed
                (the log's tail is in the message; ``failed.json`` records it).
        """
        self.root.mkdir(parents=True, exist_ok=True)
        with file_lock(self.root / "build.lock"):  # two starters never compile the same thing twice
            if self.is_built() and not force:
                info = self.info()
                if info is not None:
                    self.failure_file.unlink(missing_ok=True)  # built since (by another process)
                    return info
            try:
                info = self._build(progress or (lambda _line: None))
            except LocalServiceError as exc:
                self.dir.mkdir(parents=True, exist_ok=True)
                self.failure_file.write_text(json.dumps({"error": str(exc), "at": time.time()}))
                raise
            self.failure_file.unlink(missing_ok=True)
            return info

    def _build(self, progress: Callable[[str], None]) -> LlamaBuildInfo:
        missing = [tool for tool in ("cmake", "c++", "cc") if shutil.which(tool) is None]
        if missing:
            raise LocalServiceError(
                f"building llama-server needs {', '.join(missing)} (Debian/Ubuntu: apt-get install cmake build-essential)"
            )
        t0 = time.monotonic()
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.log_file.write_text("")
        with tempfile.TemporaryDirectory(prefix="llama-build-", dir=self.root) as tmp:
            work = Path(tmp)
            progress(f"fetching the {SDIST_REQUIREMENT} source (pip download)")
            sdist = self._download_sdist(work / "sdist")
            sdist_sha = _sha256(sdist)
            progress("unpacking vendor/llama.cpp")
            source = _extract_llama_cpp(sdist, work / "src")
            build_dir = work / "build"
            progress("configuring (cmake)")
            include = work / "graphmem-off-hot-path.cmake"
            include.write_text(PROJECT_INCLUDE)
            self._run(
                ["cmake", "-S", str(source), "-B", str(build_dir), *self.flags, f"-DCMAKE_PROJECT_INCLUDE={include}"],
                progress,
            )
            progress(f"compiling {', '.join(TARGETS)} with {self.jobs} jobs")
            self._run(
                ["cmake", "--build", str(build_dir), "--target", *TARGETS, "--parallel", str(self.jobs)],
                progress,
            )
            staged = work / "bin"
            staged.mkdir()
            for target in TARGETS:
                built = build_dir / "bin" / target
                if not built.is_file():
                    raise LocalServiceError(f"the build did not produce {target}; log {self.log_file}")
                shutil.copy2(built, staged / target)
            _smoke_test(staged / "llama-server", self.log_file)
            # Replace the cache entry whole: readers see the old binaries or the new ones.
            shutil.rmtree(self.bin_dir, ignore_errors=True)
            self.dir.mkdir(parents=True, exist_ok=True)
            os.replace(staged, self.bin_dir)
        info = LlamaBuildInfo(
            key=self.key,
            version=LLAMA_CPP_PYTHON_VERSION,
            flags=self.flags,
            targets=list(TARGETS),
            sdist_sha256=sdist_sha,
            seconds=round(time.monotonic() - t0, 1),
            jobs=self.jobs,
            compiler=_compiler_version(),
            built_at=time.time(),
        )
        tmp_record = self.record_file.with_name(".build.json.tmp")
        tmp_record.write_text(json.dumps(info.to_dict(), indent=1))
        os.replace(tmp_record, self.record_file)
        return info

    def _download_sdist(self, dest: Path) -> Path:
        # pip resolves the pinned sdist from the registry (its HTTP cache makes a second fetch quick).
        # --no-binary for this one package only: with :all: pip would build its build tools from source too.
        cmd = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", "llama-cpp-python",
            "--dest", str(dest), SDIST_REQUIREMENT,
        ]  # fmt: skip
        self._run(cmd, lambda _line: None)
        found = sorted(dest.glob("llama_cpp_python-*.tar.gz"))
        if not found:
            raise LocalServiceError(f"pip download did not produce the {SDIST_REQUIREMENT} sdist; log {self.log_file}")
        return found[0]

    def _run(self, cmd: list[str], progress: Callable[[str], None]) -> None:
        """Run a build step, appending its output to the build log and reporting progress lines."""
        env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(self.jobs)}
        with self.log_file.open("a") as log:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, env=env
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                if _PERCENT.match(line):
                    progress(line.strip())
            code = proc.wait()
        if code != 0:
            raise LocalServiceError(
                f"`{' '.join(cmd[:3])} ...` failed (exit {code}); log {self.log_file}:\n{tail(self.log_file, 25)}"
            )


_PERCENT = re.compile(r"^\[\s*\d+%\]")


def _extract_llama_cpp(sdist: Path, dest: Path) -> Path:
    """Unpack only ``<sdist>/vendor/llama.cpp/`` (``filter="data"``: no links out, no odd modes)."""
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if "/vendor/llama.cpp/" in m.name and "/.git" not in m.name]
        if not members:
            raise LocalServiceError(f"{sdist.name} holds no vendor/llama.cpp")
        for m in members:  # Python before 3.11.4 has no extraction filters: refuse what "data" would
            _check_member(m, sdist.name)
        if hasattr(tarfile, "data_filter"):
            archive.extractall(dest, members=members, filter="data")
        else:
            archive.extractall(dest, members=members)  # every member checked above
    roots = sorted(dest.glob("*/vendor/llama.cpp"))
    if not roots or not (roots[0] / "tools" / "server").is_dir():
        raise LocalServiceError(f"{sdist.name}: vendor/llama.cpp has no tools/server")
    return roots[0]


def _check_member(member: tarfile.TarInfo, archive: str) -> None:
    """A member that would land outside the destination (absolute, ``..``, a link pointing out) or that
    is no file, folder or link (a device, a fifo) is refused."""
    parts = PurePosixPath(member.name).parts
    bad = member.name.startswith("/") or ".." in parts
    if member.issym() or member.islnk():
        base = parts[:-1] if member.issym() else ()
        target = posixpath.normpath(posixpath.join(*base, member.linkname)) if member.linkname else ".."
        bad = bad or member.linkname.startswith("/") or target.startswith("..")
    elif not (member.isfile() or member.isdir()):
        bad = True
    if bad:
        raise LocalServiceError(
            f"{archive}: refusing the member {member.name!r} (it points outside the build folder, or is no file, folder or link)"
        )


def _smoke_test(server: Path, log_file: Path) -> None:
    """``llama-server --version`` must run: catches a binary this CPU cannot start."""
    try:
        result = subprocess.run([str(server), "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LocalServiceError(f"the built llama-server does not run: {exc}") from exc
    with log_file.open("a") as log:
        log.write(result.stdout + result.stderr)
    if result.returncode != 0:
        raise LocalServiceError(
            f"the built llama-server does not run (exit {result.returncode}): {result.stderr[-500:]}"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as src:
        while chunk := src.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _compiler_version() -> str:
    try:
        out = subprocess.run(["c++", "--version"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.splitlines()[0] if out else "unknown"
