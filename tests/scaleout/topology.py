"""The scale-out topology as processes: the commands of ``docker-compose.yml`` (a one-shot
migration, ``ctxledger serve`` replicas, the dashboard) run as subprocesses on loopback
ports, and HAProxy with ``deploy/haproxy.cfg`` rendered for those ports.

Shared by ``tests/scaleout/test_replicas.py`` and ``bench/replicas.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml  # type: ignore[import-untyped]  # no types-PyYAML in the dev tools

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def compose_services() -> dict[str, Any]:
    services: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    return services


def compose_command(service: str) -> list[str]:
    """The ``ctxledger`` arguments a compose service runs (the image's entry point is
    ``ctxledger``)."""
    command: list[str] = list(compose_services()[service]["command"])
    return command


def with_flag(args: Sequence[str], flag: str, value: str) -> list[str]:
    """``args`` with ``flag``'s value replaced (the compose file's ports are container
    ports; here every process needs its own loopback port)."""
    found = list(args)
    index = found.index(flag)
    found[index + 1] = value
    return found


def child_env(database_url: str, **settings: str) -> dict[str, str]:
    """A user's environment: the compose file's CTXLEDGER_* variables for the replicas
    (the database URL pointed at this machine's), nothing inherited from the developer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLEDGER_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join(str(ROOT / d) for d in ("sdk", "collector", "cli"))
    env.update(compose_services()["replica-1"].get("environment") or {})
    env["CTXLEDGER_DATABASE_URL"] = database_url
    env.update(settings)
    return env


def ctxledger(*args: str) -> list[str]:
    return [sys.executable, "-m", "ctxledger_cli", *args]


def migrate(database_url: str) -> str:
    """Run the compose file's one-shot migration service; returns its output."""
    done = subprocess.run(
        ctxledger(*compose_command("migrate")),
        env=child_env(database_url),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"ctxledger db upgrade failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


class Replica:
    """One ``ctxledger serve`` replica (the compose file's command) on its own port,
    which it keeps across restarts."""

    def __init__(self, name: str, database_url: str, logs: Path, **settings: str) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.database_url = database_url
        self.settings = settings
        self.log = logs / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        args = with_flag(compose_command("replica-1"), "--port", str(self.port))
        args = with_flag(args, "--host", "127.0.0.1")
        self.starts += 1
        with self.log.open("ab") as output:
            output.write(f"--- start {self.starts}\n".encode())
            output.flush()
            self.process = subprocess.Popen(
                ctxledger(*args),
                env=child_env(self.database_url, **self.settings),
                cwd=ROOT,
                stdout=output,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.log.read_text()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} never became ready:\n{self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown, in-flight transactions roll back."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> int:
        """SIGTERM: uvicorn stops accepting, finishes what it has, then exits."""
        if self.process is None or self.process.poll() is not None:
            return 0 if self.process is None else self.process.returncode
        self.process.terminate()
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise RuntimeError(f"{self.name} did not stop on SIGTERM") from None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


def render_haproxy(port: int, replicas: Sequence[tuple[str, int]]) -> str:
    """``deploy/haproxy.cfg`` for loopback: its frontend on ``port``, its servers
    replaced by ``replicas`` (name, port), Docker's resolver left out."""
    lines: list[str] = []
    for line in HAPROXY_CFG.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("server "):
            continue
        if stripped.startswith("bind "):
            line = f"    bind 127.0.0.1:{port}"
        line = re.sub(r"\s+resolvers docker", "", line)
        line = re.sub(r"\s+init-addr \S+", "", line)
        lines.append(line)
    text = "\n".join(lines)
    text = re.sub(r"resolvers docker\n(    .*\n)+\n", "", text + "\n")
    servers = "".join(f"    server {name} 127.0.0.1:{p}\n" for name, p in replicas)
    return text + servers


class HAProxy:
    def __init__(self, workdir: Path, replicas: Sequence[Replica]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = workdir / "haproxy.cfg"
        self.config.write_text(render_haproxy(self.port, [(r.name, r.port) for r in replicas]))
        self.log = workdir / "haproxy.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        check = subprocess.run(
            [HAPROXY, "-c", "-f", str(self.config)], capture_output=True, text=True
        )
        if check.returncode != 0:
            raise RuntimeError(f"haproxy -c failed:\n{check.stdout}{check.stderr}")
        with self.log.open("wb") as output:
            self.process = subprocess.Popen(
                [HAPROXY, "-db", "-f", str(self.config)], stdout=output, stderr=subprocess.STDOUT
            )

    def wait_ready(self, timeout_s: float = 20) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"haproxy never forwarded /readyz:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


@contextlib.contextmanager
def replicas_behind_haproxy(
    database_url: str, count: int, workdir: Path, **settings: str
) -> Iterator[tuple[HAProxy, list[Replica]]]:
    """``count`` replicas started and ready, HAProxy in front and forwarding; all
    stopped afterwards."""
    replicas = [
        Replica(f"replica-{n}", database_url, workdir, **settings) for n in range(1, count + 1)
    ]
    proxy = HAProxy(workdir, replicas)
    try:
        for replica in replicas:
            replica.start()
        for replica in replicas:
            replica.wait_ready()
        proxy.start()
        proxy.wait_ready()
        yield proxy, replicas
    finally:
        proxy.stop()
        for replica in replicas:
            with contextlib.suppress(RuntimeError):
                replica.stop()
