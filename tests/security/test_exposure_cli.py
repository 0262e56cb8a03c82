"""`ctxledger serve | up | dashboard` refuse an address other machines can reach unless
it is protected by keys (or the operator says --insecure), exit 2 with a clear reason."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from ctxledger_collector.ops.exposure import exposure_problem, is_loopback_host
from tests.collector.live_collector import free_port

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CTXLEDGER_API_KEYS", "CTXLEDGER_READ_KEYS", "CTXLEDGER_READ_KEY")
    }
    env["CTXLEDGER_DATABASE_URL"] = f"sqlite:///{tmp_path / 'exposure.db'}"
    return {**env, **settings}


def _cli(tmp_path: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxledger_cli", *args],
        env=_env(tmp_path, **settings),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )


def test_serve_refuses_a_reachable_address_without_keys(tmp_path: Path) -> None:
    refused = _cli(tmp_path, "serve", "--host", "0.0.0.0", "--port", str(free_port()))
    assert refused.returncode == 2
    assert "refusing to listen on '0.0.0.0'" in refused.stderr
    assert "CTXLEDGER_API_KEYS" in refused.stderr and "CTXLEDGER_READ_KEYS" in refused.stderr
    assert "--insecure" in refused.stderr
    assert not (tmp_path / "exposure.db").exists()  # refused before touching the database
    half = exposure_problem("0.0.0.0", has_ingest_keys=True, has_read_keys=False, insecure=False)
    assert half and "CTXLEDGER_READ_KEYS" in half and "CTXLEDGER_API_KEYS" not in half
    assert not exposure_problem("::", has_ingest_keys=True, has_read_keys=True, insecure=False)
    assert not exposure_problem("::", has_ingest_keys=False, has_read_keys=False, insecure=True)


def test_serve_with_keys_or_insecure_listens_and_keys_guard_the_api(tmp_path: Path) -> None:
    for settings in (
        {"CTXLEDGER_API_KEYS": "ingest-k", "CTXLEDGER_READ_KEYS": "read-k"},
        {},
    ):
        port = free_port()
        args = ["serve", "--host", "0.0.0.0", "--port", str(port)]
        if not settings:
            args.append("--insecure")
        process = subprocess.Popen(
            [sys.executable, "-m", "ctxledger_cli", *args],
            env=_env(tmp_path, **settings),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and process.poll() is None:
                try:
                    if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            runs = httpx.get(f"{url}/api/v1/runs", timeout=10)
            assert runs.status_code == (401 if settings else 200)
            if settings:
                read = httpx.get(
                    f"{url}/api/v1/runs", headers={"authorization": "Bearer read-k"}, timeout=10
                )
                assert read.status_code == 200
        finally:
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=30)
        if not settings:
            assert "--insecure" in stderr and "anyone" in stderr  # said loudly


def test_dashboard_and_up_refuse_a_reachable_address(tmp_path: Path) -> None:
    dashboard = _cli(tmp_path, "dashboard", "--host", "0.0.0.0", "--port", str(free_port()))
    assert dashboard.returncode == 2
    assert "no login of its own" in dashboard.stderr and "--insecure" in dashboard.stderr
    up = _cli(tmp_path, "up", "--host", "0.0.0.0", "--port", str(free_port()), "--no-demo")
    assert up.returncode == 2 and "refusing to listen on '0.0.0.0'" in up.stderr


def test_key_new_prints_a_key_and_its_digest(tmp_path: Path) -> None:
    printed = _cli(tmp_path, "key", "new")
    assert printed.returncode == 0, printed.stderr
    lines = dict(line.split(":", 1) for line in printed.stdout.splitlines())
    key, digest = lines["key"].strip(), lines["digest"].strip()
    assert digest == "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def test_which_hosts_are_loopback() -> None:
    for host in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"):
        assert is_loopback_host(host), host
    for host in ("0.0.0.0", "::", "", "10.0.0.5", "192.168.1.2", "no-such-host.invalid"):
        assert not is_loopback_host(host), host
