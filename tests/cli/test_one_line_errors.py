"""What a new user gets wrong is answered in one line, never a traceback: a taken port for
`ctxledger provider`, a ledger in a folder that does not exist for `ctxledger demo` (exit
2), and the same ledger setting in an agent, which goes on without it, told once."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.e2e.helpers import REPO_ROOT, subprocess_env


def _run(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env=subprocess_env(**env),
        check=False,
    )


def test_provider_on_a_taken_port_says_so_in_one_line() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = _run("-m", "ctxledger_cli", "provider", "--port", str(port))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"ctxledger provider: cannot listen on 127.0.0.1:{port}: the port is already in use "
        "(another provider stand-in?); stop what listens there or choose another port with "
        "--port"
    ]


def test_demo_with_a_ledger_in_a_missing_folder_says_so_in_one_line(tmp_path: Path) -> None:
    ledger = tmp_path / "no-such-folder" / "ledger.txt"
    done = _run("-m", "ctxledger_cli", "demo", "--ledger", str(ledger))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"ctxledger demo: cannot write the ledger to {ledger}: No such file or directory"
    ]
    assert not ledger.parent.exists()


AGENT = """
import ctxledger
ctxledger.configure(service_name="agent", export=False)
ctxledger.measure("original", {"rows": [1, 2, 3]}, tool_call_id="call_1")
assert ctxledger.flush(timeout_s=30)
print("measured", ctxledger.stats().measured)
"""


def test_an_agent_whose_ledger_cannot_be_opened_goes_on_and_is_told_once(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "no-such-folder" / "ledger.txt"
    done = _run("-c", AGENT, CTXLEDGER_LEDGER=str(ledger))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "measured 1"
    assert done.stderr.splitlines() == [
        f"ctxledger: cannot write the ledger to {str(ledger)!r} (No such file or directory); "
        "measuring and exporting go on without it (ledger= or CTXLEDGER_LEDGER: a file in a "
        "folder that exists, stderr, stdout or off)"
    ]
