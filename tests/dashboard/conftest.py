"""Dashboard fixtures: a live collector (SQLite) seeded once with the demo incidents."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import ctxledger
from ctxledger_cli import demo
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector, free_port

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "dashboard" / "ctxledger_dashboard" / "streamlit_app.py"


@pytest.fixture(scope="module")
def seeded_collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCollector]:
    """A collector holding every demo incident, sent by the SDK over real OTLP."""
    database = tmp_path_factory.mktemp("dashboard") / "ctxledger.db"
    settings = Settings(
        database_url=f"sqlite:///{database}",
        auto_migrate=True,
        sweep_interval_s=3600,
        dashboard_url="http://dashboard.test",
        alert_settle_s=0,  # notify in the ingest transaction: the Alerts page has data at once
    )
    with LiveCollector(settings) as collector:
        client = ctxledger.configure(
            service_name="ctxledger-demo", endpoint=collector.url, ledger="off"
        )
        demo.run_all_incidents()
        assert ctxledger.flush()
        client.shutdown()
        yield collector


@pytest.fixture
def seed_004_trace(seeded_collector: LiveCollector) -> str:
    reports = httpx.get(
        f"{seeded_collector.url}/api/v1/reports", params={"tool_call_id": "call_search_1"}
    ).json()["reports"]
    trace_id: str = reports[0]["trace_id"]
    return trace_id


@pytest.fixture
def api_env(seeded_collector: LiveCollector, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CTXLEDGER_API_URL", seeded_collector.url)
    return seeded_collector.url


@pytest.fixture
def hung_collector(tmp_path: Path) -> Iterator[str]:
    """A real collector process (``ctxledger serve``) that is up, then stopped (SIGSTOP):
    its port takes connections and nothing answers, as when a collector hangs."""
    url = f"http://127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxledger_cli", "serve", "--port", url.rsplit(":", 1)[1]],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not _answers(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ctxledger serve did not start on {url}")
            time.sleep(0.2)
        process.send_signal(signal.SIGSTOP)
        yield url
    finally:
        process.send_signal(signal.SIGCONT)
        process.terminate()
        process.wait(timeout=30)


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
