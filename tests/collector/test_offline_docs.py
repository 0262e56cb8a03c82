"""The collector's API docs (/docs) render in Chromium with no network but loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from ctxledger_cli.screenshots import browser, capture_api_docs
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector


@pytest.fixture
def sqlite_collector(tmp_path: Path) -> Any:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'ctxledger.db'}", auto_migrate=True)
    with LiveCollector(settings) as collector:
        yield collector


@pytest.mark.slow
def test_swagger_ui_renders_with_no_network_but_loopback(
    sqlite_collector: LiveCollector, tmp_path: Path
) -> None:
    shot = tmp_path / "api-docs.png"
    with browser() as chromium:
        drawn = capture_api_docs(chromium, sqlite_collector.url, shot)
        title = drawn.page.locator(".swagger-ui .info .title").inner_text()
        assert title.startswith("ctxledger collector")
        reports = drawn.page.locator(".opblock-summary-path", has_text="/api/v1/reports")
        assert reports.count() >= 1
        drawn.page.close()
    assert drawn.refused == []
    assert drawn.failed == []
    assert shot.stat().st_size > 20_000  # the drawn page, not a blank one
    # ReDoc's bundle always loads its vendor's logo from a CDN: the collector serves no /redoc.
    assert httpx.get(f"{sqlite_collector.url}/redoc").status_code == 404
