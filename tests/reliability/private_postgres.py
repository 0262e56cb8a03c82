"""A PostgreSQL server of the test's own (initdb into a temporary folder, pg_ctl on a
free port), so that a test can stop and start it without touching the machine's shared
server. Skips when the server binaries are not installed."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.collector.live_collector import free_port


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class PrivatePostgres:
    def __init__(self, bin_dir: Path, data: Path, as_user: list[str]) -> None:
        self.bin_dir = bin_dir
        self.data = data
        self.port = free_port()
        self._as_user = as_user
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as_user, *args], check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off"
        pg_ctl = str(self.bin_dir / "pg_ctl")
        log = str(self.data / "server.log")
        self._run(pg_ctl, "-D", str(self.data / "db"), "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        self._run(
            str(self.bin_dir / "pg_ctl"), "-D", str(self.data / "db"), "-m", "fast", "-w", "stop"
        )


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    bin_dir = _binaries()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
    folder = Path(tempfile.mkdtemp(prefix="ctxledger-pg-", dir="/tmp"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start a private PostgreSQL")
        shutil.chown(folder, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    server = PrivatePostgres(bin_dir, folder, as_user)
    try:
        server._run(
            str(bin_dir / "initdb"), "-D", str(folder / "db"), "-A", "trust", "-U", "postgres"
        )
        server.start()
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
