"""The collector's API docs (/docs) render in Chromium with no network but loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from ctxledger_cli.screenshots import browser
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector

LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}


def _loopback_only(page: Any, left_loopback: list[str]) -> None:
    """Abort every request for a host other than loopback (the CDNs FastAPI's default pages
    load from among them), and record it."""

    def route(request_route: Any) -> None:
        url: str = request_route.request.url
        if urlsplit(url).hostname in LOOPBACK:
            request_route.continue_()
        else:
            left_loopback.append(url)
            request_route.abort("internetdisconnected")

    page.route("**/*", route)


@pytest.fixture
def sqlite_collector(tmp_path: Path) -> Any:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'ctxledger.db'}", auto_migrate=True)
    with LiveCollector(settings) as collector:
        yield collector


@pytest.mark.slow
def test_swagger_ui_renders_with_no_network_but_loopback(sqlite_collector: LiveCollector) -> None:
    left_loopback: list[str] = []
    failed: list[str] = []
    with browser() as chromium:
        page = chromium.new_page()
        _loopback_only(page, left_loopback)
        page.on("requestfailed", lambda request: failed.append(request.url))

        page.goto(f"{sqlite_collector.url}/docs")
        traces = page.locator(".opblock-summary-path", has_text="/v1/traces").first
        traces.wait_for(state="visible", timeout=30_000)
        title = page.locator(".swagger-ui .info .title").inner_text()
        assert title.startswith("ctxledger collector")
        assert page.locator(".opblock-summary-path", has_text="/api/v1/reports").count() >= 1
        page.close()
    assert left_loopback == []
    assert failed == []
    # ReDoc's bundle always loads its vendor's logo from a CDN: the collector serves no /redoc.
    assert httpx.get(f"{sqlite_collector.url}/redoc").status_code == 404
