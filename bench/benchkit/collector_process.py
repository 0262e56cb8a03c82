"""``ctxledger serve`` as a subprocess on a free loopback port: the collector as a black box."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def child_env(database_url: str, settings: Mapping[str, str] | None = None) -> dict[str, str]:
    """The bench's environment without the developer's CTXLEDGER_* and OTEL_* settings,
    plus the database and the given ``CTXLEDGER_*`` settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLEDGER_", "OTEL_"))}
    paths = [str(REPO / "sdk"), str(REPO / "collector"), str(REPO / "cli")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["CTXLEDGER_DATABASE_URL"] = database_url
    env.update(settings or {})
    return env


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "ctxledger_cli", *args]


@dataclass(frozen=True)
class RunningCollector:
    base_url: str
    pid: int
    log_path: Path

    @property
    def traces_endpoint(self) -> str:
        return f"{self.base_url}/v1/traces"


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_ready(process: subprocess.Popen[bytes], base: str, log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"ctxledger serve exited with {process.returncode}:\n{tail(log_path)}"
            )
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"ctxledger serve never got ready:\n{tail(log_path)}")
        time.sleep(0.1)


@contextmanager
def collector(
    database_url: str,
    log_path: Path,
    settings: Mapping[str, str] | None = None,
    workers: int = 1,
) -> Iterator[RunningCollector]:
    """Start ``ctxledger serve`` (with ``workers`` processes); yield once ``/readyz``
    answers 200; stop it afterwards."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            cli("serve", "--port", str(port), "--log-level", "warning", "--workers", str(workers)),
            env=child_env(database_url, settings),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_ready(process, base, log_path)
            yield RunningCollector(base, process.pid, log_path)
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
