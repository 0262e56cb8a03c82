"""Incidents, Tool and Alerts pages with Streamlit's AppTest against a live collector."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ctxledger_collector.settings import Settings
from tests.collector.live_collector import LiveCollector
from tests.dashboard.conftest import APP


def _page(path: str, **params: str) -> AppTest:
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.switch_page(path)
    for key, value in params.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def _text(app: AppTest) -> str:
    parts = [m.value for m in app.markdown] + [m.value for m in app.caption]
    parts += [e.value for e in app.error] + [w.value for w in app.warning]
    parts += [i.value for i in app.info]
    return " ".join(str(p) for p in parts)


def test_incidents_page_points_at_the_tool_and_stage_that_lose(api_env: str) -> None:
    app = _page("app_pages/overview.py")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Journeys"] == "24"  # every journey of the seven incidents
    assert metrics["Losing journeys"] == "4"  # 2 silent, 1 dropped, 1 orphaned
    text = _text(app)
    assert "Look first at `search_knowledge`" in text
    assert "the context manager" in text


def test_incidents_filters_come_from_the_url(api_env: str) -> None:
    app = _page("app_pages/overview.py", agent="ticket-agent")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Journeys"] == "2"
    assert metrics["Losing journeys"] == "1"  # the dropped export


def test_tool_page_names_the_layer_to_fix(api_env: str) -> None:
    app = _page("app_pages/tool.py", tool="search_knowledge")
    assert "Fix at: the context manager" in _text(app)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Lost items"] == "60"  # 30 in each of the two requests that carried it


def test_alerts_page_is_an_honest_placeholder_with_prometheus(api_env: str) -> None:
    app = _page("app_pages/alerts.py")
    text = _text(app) + " ".join(c.value for c in app.code)
    assert "not built yet" in text
    assert "ctxledger_journeys" in text


@pytest.mark.parametrize("path", ["app_pages/overview.py", "app_pages/run.py", "app_pages/tool.py"])
def test_every_page_has_an_empty_state(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'empty.db'}", auto_migrate=True)
    with LiveCollector(settings) as empty:
        monkeypatch.setenv("CTXLEDGER_API_URL", empty.url)
        assert "ctxledger demo --endpoint" in _text(_page(path))
