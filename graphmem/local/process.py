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
