"""`ctxledger up`, `serve --demo` and `dashboard` on a port another program holds, run as
a user runs them: refused in one line naming the port and the flag that changes it, before
anything starts (no database file), and nothing is sent to the program on the port."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector, free_port
from tests.e2e.helpers import run_python, serve_until_ready, subprocess_env


def _cli(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_python("-m", "ctxledger_cli", *args, cwd=workdir, timeout_s=180)


@contextmanager
def occupying_collector(tmp_path: Path) -> Iterator[LiveCollector]:
    """Another collector (its own SQLite file) already serving on a port."""
    database = tmp_path / "occupant" / "other.db"
    database.parent.mkdir()
    settings = Settings(
        database_url=f"sqlite:///{database}", auto_migrate=True, sweep_interval_s=3600
    )
    with LiveCollector(settings) as collector:
        yield collector


def _runs(collector: LiveCollector) -> int:
    answer = httpx.get(f"{collector.url}/api/v1/runs", params={"limit": 1000}, timeout=30)
    return len(answer.json()["runs"])


class RawOccupant:
    """A plain listening socket on a free port that records every connection it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port: int = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self.sock.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    self.received.append(connection.recv(65536))
                except OSError:
                    self.received.append(b"")

    def __enter__(self) -> RawOccupant:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)
        self.sock.close()


def _assert_refused(done: subprocess.CompletedProcess[str], port: int, flag: str) -> None:
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()  # one line, nothing started, no traceback
    assert f"127.0.0.1:{port}" in line and "already in use" in line, line
    assert line.endswith(f"choose another port with {flag}"), line


def test_up_refuses_a_port_another_collector_holds_and_sends_it_nothing(
    tmp_path: Path,
) -> None:
    with occupying_collector(tmp_path) as other:
        before = _runs(other)
        done = _cli(tmp_path, "up", "--port", str(other.port), "--dashboard-port", str(free_port()))
        after = _runs(other)
    _assert_refused(done, other.port, "--port")
    assert after == before, "up sent its demo incidents to a collector it did not start"
    assert "(ok)" not in done.stdout + done.stderr and "Press Ctrl-C" not in done.stderr
    assert not (tmp_path / "ctxledger.db").exists()  # no collector of its own started


def test_up_refuses_a_taken_dashboard_port_before_starting_anything(tmp_path: Path) -> None:
    collector_port = free_port()
    with RawOccupant() as occupant:
        done = _cli(
            tmp_path, "up", "--port", str(collector_port), "--dashboard-port", str(occupant.port)
        )
    _assert_refused(done, occupant.port, "--dashboard-port")
    assert occupant.received == []  # not even a health check
    assert not (tmp_path / "ctxledger.db").exists()
    socket.create_server(("127.0.0.1", collector_port)).close()  # and the collector's is free


def test_up_refuses_one_port_for_both(tmp_path: Path) -> None:
    port = free_port()
    done = _cli(tmp_path, "up", "--port", str(port), "--dashboard-port", str(port))
    _assert_refused(done, port, "--dashboard-port")


def test_serve_demo_refuses_a_port_another_collector_holds_and_sends_it_nothing(
    tmp_path: Path,
) -> None:
    with occupying_collector(tmp_path) as other:
        before = _runs(other)
        done = _cli(tmp_path, "serve", "--demo", "--port", str(other.port))
        after = _runs(other)
    _assert_refused(done, other.port, "--port")
    assert after == before
    assert not (tmp_path / "ctxledger.db").exists()  # refused before migrating a database


def test_dashboard_refuses_a_taken_port(tmp_path: Path) -> None:
    with RawOccupant() as occupant:
        done = _cli(tmp_path, "dashboard", "--port", str(occupant.port))
    _assert_refused(done, occupant.port, "--port")
    assert occupant.received == []


def test_serve_serves_on_the_socket_it_is_handed(tmp_path: Path) -> None:
    """`serve --fd`, as `up` starts it: the collector answers on the inherited socket."""
    with socket.create_server(("127.0.0.1", 0)) as handed:
        port = handed.getsockname()[1]
        ready, stderr = serve_until_ready(
            port,
            "--fd",
            str(handed.fileno()),
            cwd=tmp_path,
            env=subprocess_env(),
            pass_fds=[handed.fileno()],
        )
    assert ready, stderr  # only the collector holding the handed socket could answer
