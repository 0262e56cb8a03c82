"""Dashboard fixtures: a live collector (SQLite) seeded once with the demo incidents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import ctxledger
from ctxledger_cli import demo
from ctxledger_collector.settings import Settings
from tests.collector.live_collector import LiveCollector

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
