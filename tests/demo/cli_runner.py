"""Run `python -m demo` as a user does: a subprocess, no API key, stdin that is not a terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def demo_env(**extra: str) -> dict[str, str]:
    """The environment of a user without an API key, who did not come through `make demo`."""
    drop = ("PICOFLOW_STORE", "DEMO_VIA_MAKE")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env | extra


def demo(*args: str, cwd: Path, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m demo ARGS` run to its end with `stdin` as the guest's input."""
    return subprocess.run(
        [sys.executable, "-m", "demo", *args], cwd=cwd, env=demo_env(**env), input=stdin,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
