"""Kill a worker process with SIGKILL at the exact line it prints, for the kill -9 scenarios."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def kill_when_printed(worker: Path, args: list[str], lines: list[str]) -> None:
    """Start `worker` with `args`, wait until it printed `lines` in order, then SIGKILL it.

    The worker waits for a line on stdin after its last printed line, so it is killed exactly
    there: no clean-up, no flush, no rollback by the process.
    """
    process = subprocess.Popen(
        [sys.executable, str(worker), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert process.stdout is not None
        for line in lines:
            assert process.stdout.readline() == f"{line}\n"
        process.kill()
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
