"""Small process helpers for the managed local services (Neo4j, the local LLM server)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def pid_alive(pid: int, marker: str | None = None) -> bool:
    """Process exists, is not a zombie, and (on Linux) its command line contains ``marker``.

    The marker guards against pid reuse: a stale pid file must not make us signal a stranger.
    """
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our own exited child
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return marker is None  # someone else's process: never ours
    proc = Path(f"/proc/{pid}")
    if not proc.exists():
        return True  # no procfs (macOS): trust the pid
    try:
        if ") Z" in (proc / "stat").read_text():
            return False
        return marker is None or marker in (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def keep_niceness(pid: int) -> None:
    """Give a server started in its own session the niceness it was started with, where it counts.

    With the kernel's autogroups (most desktop and VM kernels) the scheduler shares the CPU between
    sessions first and applies a process's nice value only within its session, and a new session's
    group starts at nice 0: ``nice -n 10 graphmem llm start`` gave a server that took its full share
    beside the foreground work (seen on the 2-core machine: two model servers at 0.4 tokens/s each).
    The group's own nice value fixes that; best effort (no procfs, no autogroups: nothing to do).
    """
    try:
        nice = os.getpriority(os.PRIO_PROCESS, pid)
        if nice > 0:
            Path(f"/proc/{pid}/autogroup").write_text(f"{nice}\n")
    except OSError:
        pass


def terminate(pid: int, timeout: float, *, group: bool = False) -> bool:
    """SIGTERM, wait up to ``timeout`` s, then SIGKILL and wait a little more. Returns whether it
    stopped. ``group``: signal the process group it leads (a server started in its own session)."""
    send = os.killpg if group else os.kill
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            send(pid, sig)
        except ProcessLookupError:
            return True
        except PermissionError:
            return not pid_alive(pid)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                return True
            time.sleep(0.1)
    return not pid_alive(pid)


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Something accepts TCP connections on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock (start/stop of one service at a time, across processes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def tail(path: Path, lines: int) -> str:
    """The last lines of a log file, or a placeholder when it cannot be read."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
