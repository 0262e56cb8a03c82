"""`ctxledger serve` and `ctxledger db upgrade` as a user runs them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ctxledger_cli.demo import EXPECTED_VERDICTS
from tests.collector.live_collector import free_port
from tests.e2e.helpers import output_until

ROOT = Path(__file__).resolve().parents[2]


def assert_verdict_lines(output: list[str]) -> None:
    """The demo's table: a line per losing call (per incident when none loses), each the
    verdict expected; every intact call counted below."""
    shown = 0
    for name, calls in EXPECTED_VERDICTS.items():
        losing = {c: v for c, v in calls.items() if v != "intact"} or dict(list(calls.items())[:1])
        for call_id, expected in losing.items():
            (line,) = [x for x in output if x.split()[:1] == [name] and f"[{call_id}]" in x]
            assert line.split()[1] == expected and line.endswith("(ok)"), line
        assert len([x for x in output if x.split()[:1] == [name]]) == len(losing), name
        shown += len(losing)
    quiet = sum(len(calls) for calls in EXPECTED_VERDICTS.values()) - shown
    assert f"  (+{quiet} intact calls alongside)" in output, output


def _env(database_url: str) -> dict[str, str]:
    return {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in ("MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_")
        },
        "CTXLEDGER_DATABASE_URL": database_url,
        "PYTHONPATH": os.pathsep.join([str(ROOT / d) for d in ("sdk", "collector", "cli")]),
    }


def _children_environment(pid: int, name: str) -> list[str]:
    """``name``'s value in the environment each child of ``pid`` started with (Linux)."""
    values: list[str] = []
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for child in children:
        entries = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
        command = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"multiprocessing" in command and b"spawn_main" in command:
            prefix = f"{name}=".encode()
            values += [e[len(prefix) :].decode() for e in entries if e.startswith(prefix)]
    return values


def _cli(*args: str, database_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxledger_cli", *args],
        env=_env(database_url),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_serve_refuses_an_unmigrated_postgres_and_says_what_to_run(postgres_url: str) -> None:
    refused = _cli("serve", "--port", "1", database_url=postgres_url)
    assert refused.returncode == 2
    assert "ctxledger db upgrade" in refused.stderr

    upgraded = _cli("db", "upgrade", database_url=postgres_url)
    assert upgraded.returncode == 0, upgraded.stderr
    assert "is at revision" in upgraded.stdout


def test_serve_demo_sends_the_incidents_once_ready_and_keeps_serving(tmp_path: Path) -> None:
    """The collector calls the command line back when ready; the demo's verdicts follow."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxledger_cli", "serve", "--demo", "--port", str(port)],
        env={**_env(f"sqlite:///{tmp_path / 'ctxledger.db'}"), "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
    )
    try:
        output = output_until(process, "The collector keeps running", 120)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        finally:
            process.kill()
    assert f"Verdicts from the collector at http://127.0.0.1:{port}:" in output, output
    assert_verdict_lines(output)


def test_serve_with_two_workers_on_postgres_judges_the_demo(postgres_url: str) -> None:
    """Two worker processes on one port share one PostgreSQL; SQLite is refused."""
    refused = _cli("serve", "--workers", "2", "--port", "1", database_url="sqlite:///x.db")
    assert refused.returncode == 2 and "PostgreSQL" in refused.stderr
    assert _cli("db", "upgrade", database_url=postgres_url).returncode == 0
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxledger_cli", "serve", "--workers", "2", "--port", str(port)],
        env=_env(postgres_url),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        import httpx

        deadline = threading.Event()
        for _ in range(150):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            deadline.wait(0.2)
        demo = _cli("demo", "--endpoint", f"http://127.0.0.1:{port}", database_url=postgres_url)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert_verdict_lines(demo.stdout.splitlines())
        # The workers started with glibc's arenas capped (CTXLEDGER_MALLOC_ARENAS, 2) and
        # its mmap threshold fixed (CTXLEDGER_MALLOC_MMAP_THRESHOLD, 1 MiB).
        assert _children_environment(process.pid, "MALLOC_ARENA_MAX") == ["2", "2"]
        threshold = _children_environment(process.pid, "MALLOC_MMAP_THRESHOLD_")
        assert threshold == [str(1 << 20)] * 2
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        finally:
            process.kill()
