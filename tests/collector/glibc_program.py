"""Runs a small program in a fresh Python process, with one of glibc's malloc variables
removed from (or set in) its environment, and returns the JSON it printed last: glibc
reads those variables only at start-up, so each case needs a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_program(
    program: str, argument: str, variable: str, value: str | None = None
) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != variable}
    env["PYTHONPATH"] = str(ROOT / "collector")
    if value is not None:
        env[variable] = value
    done = subprocess.run(
        [sys.executable, "-c", program, argument],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result
