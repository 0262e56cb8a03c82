"""`ctxledger serve` and `ctxledger db upgrade` as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, database_url: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CTXLEDGER_DATABASE_URL": database_url,
        "PYTHONPATH": os.pathsep.join([str(ROOT / d) for d in ("sdk", "collector", "cli")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "ctxledger_cli", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def test_serve_refuses_an_unmigrated_postgres_and_says_what_to_run(postgres_url: str) -> None:
    refused = _cli("serve", "--port", "1", database_url=postgres_url)
    assert refused.returncode == 2
    assert "ctxledger db upgrade" in refused.stderr

    upgraded = _cli("db", "upgrade", database_url=postgres_url)
    assert upgraded.returncode == 0, upgraded.stderr
    assert "is at revision" in upgraded.stdout
