"""A server started by a process at nice +5, for the tests of ``graphmem.local.process.keep_niceness``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_niced(script: str, timeout: float) -> int:
    """Run ``script`` (which prints a started server's pid last) at nice +5; the pid."""
    out = subprocess.run(
        [sys.executable, "-c", "import os\nos.nice(5)\n" + script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return int(out.stdout.split()[-1])


def assert_niced_with_its_group(pid: int) -> None:
    """The server and its session's autogroup both at the niceness it was started with."""
    niceness = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)  # on top of the test run's own
    assert os.getpriority(os.PRIO_PROCESS, pid) == niceness
    assert Path(f"/proc/{pid}/autogroup").read_text().split()[-1] == str(niceness)
