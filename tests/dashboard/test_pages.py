"""Incidents, Tool and Alerts pages with Streamlit's AppTest against a live collector."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
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
    app = _page("app_pages/incidents.py")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Journeys"] == "30"  # every journey of the eight incidents
    # 2 silent journeys (one search result cut at step 2, re-sent cut at step 3), 2 dropped
    # (the ticket export, the orders LangGraph trimmed away) and 2 orphaned (the customer
    # result LangGraph kept without its call, the log call seed 001's naive trim left
    # without its result): five lost results; the 30 search records count once.
    assert metrics["Lost results"] == "5"
    assert [m.delta for m in app.metric if m.label == "Lost results"] == ["in 6 losing journeys"]
    lost_items = int(metrics["Lost items"].replace(",", ""))
    tools = {r["name"]: r for r in httpx.get(f"{api_env}/api/v1/stats/breakdown").json()["rows"]}
    assert lost_items == sum(r["result_lost_items"] for r in tools.values())
    assert tools["search_knowledge"]["result_lost_items"] == 30
    text = _text(app)
    # Every losing tool lost one result: the one that lost most items comes first.
    assert "Look first at `export_tickets`**: 1 lost result (1 dropped of 1 journey)" in text
    assert "120 items lost" in text
    ranking = next(d.value for d in app.dataframe if "tool" in d.value.columns)
    search = ranking[ranking["tool"] == "search_knowledge"].iloc[0]
    assert (search["lost results"], search["losing journeys"], search["lost items"]) == (1, 2, 30)


def test_incidents_runs_default_to_every_losing_verdict_counted_in_runs(api_env: str) -> None:
    app = _page("app_pages/incidents.py")
    chips = app.segmented_control[0]
    assert chips.value == "losing"
    labels = list(chips.options)  # as shown
    # kb, ticket export, LangGraph trim, seed 001's naive trim
    assert labels[0] == "any losing verdict · 4 runs"
    assert labels[-1] == "any verdict · 8 runs"
    assert all(label.endswith(("run", "runs")) for label in labels)
    runs = app.dataframe[0].value
    assert len(runs) == 4
    assert set(runs["worst"]) == {"silent", "dropped", "orphaned"}
    assert sorted(runs["lost results"]) == [1, 1, 1, 2]  # LangGraph's trim lost two


def test_incidents_filters_come_from_the_url(api_env: str) -> None:
    app = _page("app_pages/incidents.py", agent="ticket-agent")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Journeys"] == "2"
    assert metrics["Lost results"] == "1"  # the dropped export


def test_tool_page_names_the_layer_to_fix(api_env: str) -> None:
    """search_knowledge loses at context assembly."""
    app = _page("app_pages/tool.py", tool="search_knowledge")
    text = _text(app)
    assert "Fix at: the context manager" in text
    assert "Most losses (1 silent)" in text and ": 30 items" in text  # the re-send not again
    metrics = {m.label: m.value for m in app.metric}
    # Cut at step 2 and re-sent cut at step 3: one lost result, its 30 items once.
    assert (metrics["Lost results"], metrics["Lost items"]) == ("1", "30")
    recent = next(d.value for d in app.dataframe if "loss" in d.value.columns)
    assert sorted(recent["loss"]) == ["first lost at step 2, still missing", "first lost here"]
    assert all("&step=2&" in link for link in recent["journey"])  # both open step 2


def test_alerts_page_shows_groups_notifications_and_rules(api_env: str) -> None:
    # The default rules alert on silent, dropped and orphaned journeys, to the log: the
    # demo's five losing (agent, tool) pairs are five firing groups, notified once each.
    app = _page("app_pages/alerts.py")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Firing groups"] == "5"
    assert metrics["Notifications"] == "5"
    groups, notifications, rules, sinks = (d.value for d in app.dataframe)
    assert list(sinks["type"]) == ["log"]
    assert set(groups["state"]) == {"firing"}
    assert set(groups["tool"]) == {
        "search_knowledge", "export_tickets", "search_orders", "get_customer", "grep_logs"
    }  # fmt: skip
    assert set(notifications["sink"]) == {"log (log)"}
    assert notifications["worst example"].str.startswith("/run?trace_id=").all()
    assert list(rules["rule"]) == ["lost-silently"]
    text = _text(app)
    assert "5 alert groups firing" in text
    assert "Worst examples" in text and "&tool_call_id=call_" in text  # links to journeys
    assert "ctxledger_journeys_total" in text  # the Prometheus pointer


@pytest.mark.parametrize(
    "path", ["app_pages/incidents.py", "app_pages/run.py", "app_pages/tool.py"]
)
def test_every_page_has_an_empty_state(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'empty.db'}", auto_migrate=True)
    with LiveCollector(settings) as empty:
        monkeypatch.setenv("CTXLEDGER_API_URL", empty.url)
        assert "ctxledger demo --endpoint" in _text(_page(path))


def test_incidents_runs_table_pages_by_cursor(api_env: str, monkeypatch) -> None:
    """Older and newer walk the runs by the API's cursor: every run once, then back."""
    from ctxledger_dashboard import incident_tables

    monkeypatch.setattr(incident_tables, "PAGE_SIZE", 3)
    app = _page("app_pages/incidents.py")
    app.segmented_control[0].set_value(incident_tables.ANY).run()

    def shown() -> list[str]:
        return list(app.dataframe[0].value["run"])

    def button(label: str) -> Any:
        return next(b for b in app.button if b.label == label)

    pages = [shown()]
    while not button("older →").disabled:
        button("older →").click().run()
        assert not app.exception, [e.value for e in app.exception]
        pages.append(shown())
    assert [len(page) for page in pages] == [3, 3, 2]  # the eight demo runs
    assert len({run for page in pages for run in page}) == 8
    button("← newer").click().run()
    assert shown() == pages[1]
