"""`ctxledger dashboard` and `ctxledger up` stopped with SIGTERM, as a service manager stops
them, with SIGHUP, as a closed terminal or a dropped SSH connection stops them, and `up`
with Ctrl-C, as a terminal stops it (SIGINT to its whole foreground process group):
within a bounded wait no port they served still accepts connections, and no process they
started (children or grandchildren) is left running."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.collector.live_collector import free_port
from tests.e2e.helpers import output_until, subprocess_env, wait_for


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux: each task's ``children`` file, recursively)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found |= {child, *_descendants(child)}
    return found


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"  # a zombie has stopped


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _serves(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).is_success
    except httpx.HTTPError:
        return False


def _kill_leftovers(pids: set[int]) -> None:
    for pid in pids:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


def _sigterm(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)


def _sighup(process: subprocess.Popen[str]) -> None:
    """What a closed terminal does: SIGHUP to the job's process group (the command's
    children lead sessions of their own, so it reaches only the command)."""
    os.killpg(process.pid, signal.SIGHUP)


def _ctrl_c(process: subprocess.Popen[str]) -> None:
    """What a terminal does on Ctrl-C: SIGINT to the foreground process group (the
    command leads its own group here, as a shell's job does)."""
    os.killpg(process.pid, signal.SIGINT)


def _assert_stopped(
    process: subprocess.Popen[str],
    ports: list[int],
    started: set[int],
    stop: Callable[[subprocess.Popen[str]], None] = _sigterm,
) -> None:
    assert started, "the command started no process"
    stop(process)
    process.wait(timeout=60)
    wait_for(lambda: not any(map(_accepts, ports)), 30, f"ports {ports} to close")
    wait_for(lambda: not any(map(_running, started)), 30, f"processes {started} to stop")


@pytest.mark.parametrize("stop", [_sigterm, _sighup], ids=["sigterm", "sighup"])
def test_dashboard_stopped_stops_streamlit_and_frees_its_port(
    tmp_path: Path, stop: Callable[[subprocess.Popen[str]], None]
) -> None:
    port = free_port()
    api = f"http://127.0.0.1:{free_port()}"  # no collector needed to serve the page
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxledger_cli", "dashboard", "--api", api, "--port", str(port)],
        cwd=tmp_path,
        env=subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # its own group, as a shell starts a job
    )
    started: set[int] = set()
    try:
        health = f"http://127.0.0.1:{port}/_stcore/health"
        wait_for(lambda: _serves(health) or process.poll() is not None, 120, "the dashboard")
        assert _serves(health), f"the dashboard exited with {process.returncode}"
        started = _descendants(process.pid)
        _assert_stopped(process, [port], started, stop)
        assert process.returncode == 0
    finally:
        process.kill()
        _kill_leftovers(started)


@pytest.mark.parametrize("stop", [_sigterm, _ctrl_c, _sighup], ids=["sigterm", "ctrl-c", "sighup"])
def test_up_stopped_stops_the_collector_and_the_dashboard(
    tmp_path: Path, stop: Callable[[subprocess.Popen[str]], None]
) -> None:
    ports = [free_port(), free_port()]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ctxledger_cli",
            "up",
            "--no-demo",
            "--port",
            str(ports[0]),
            "--dashboard-port",
            str(ports[1]),
        ],
        cwd=tmp_path,
        env=subprocess_env(PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own foreground group, as a shell starts a job
    )
    started: set[int] = set()
    try:
        output = output_until(process, "Press Ctrl-C", 180)
        started = _descendants(process.pid)
        _assert_stopped(process, ports, started, stop)
        assert process.stdout is not None
        output += process.stdout.read().splitlines()
        assert process.returncode == 0, "\n".join(output)
        assert "ctxledger up: stopping the dashboard and the collector…" in output
    finally:
        process.kill()
        _kill_leftovers(started)
