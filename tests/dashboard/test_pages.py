"""Incidents, Tool and Alerts pages with Streamlit's AppTest against a live collector."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from streamlit.testing.v1 import AppTest

from ctxledger import semconv as sc
from ctxledger_collector.ops.settings import Settings
from ctxledger_dashboard.docs_links import REMEDY_CHOICE, REMEDY_OF_STAGE
from ctxledger_dashboard.verdict_style import COLORS, LAYER_OF_STAGE
from tests.collector.live_collector import LiveCollector, free_port
from tests.dashboard.conftest import APP, ROOT


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
    assert metrics["Journeys"] == "32"  # every journey of the nine incidents
    # 2 silent journeys (one search result cut at step 2, re-sent cut at step 3), 3 dropped
    # (the ticket export, the orders LangGraph trimmed away, the orders the model server
    # discarded) and 2 orphaned (the customer result LangGraph kept without its call, the
    # log call seed 001's naive trim left without its result): six lost results; the 30
    # search records count once.
    assert metrics["Lost results"] == "6"
    assert [m.delta for m in app.metric if m.label == "Lost results"] == ["in 7 losing journeys"]
    lost_items = int(metrics["Lost items"].replace(",", ""))
    tools = {r["name"]: r for r in httpx.get(f"{api_env}/api/v1/stats/breakdown").json()["rows"]}
    assert lost_items == sum(r["result_lost_items"] for r in tools.values())
    assert tools["search_knowledge"]["result_lost_items"] == 30
    text = _text(app)
    # Every losing tool lost one result: the one that lost most items comes first, seed
    # 001's naive trim (its call sent without the 140-line log: all of it lost).
    assert "Look first at `grep_logs`**: 1 lost result (1 orphaned of 8 journeys)" in text
    assert "140 items lost" in text
    remedy = "guide?page=remedies.md&section=context_length_exceeded-emergency_trim"
    layer = "history trimming (a result or its call left the request)"
    assert f"look at **{layer}** ([remedy →]({remedy}))" in text
    ranking = next(d.value for d in app.dataframe if "tool" in d.value.columns)
    search = ranking[ranking["tool"] == "search_knowledge"].iloc[0]
    assert (search["lost results"], search["losing journeys"], search["lost items"]) == (1, 2, 30)


def test_incidents_layer_filter_selects_the_model_servers_losses(api_env: str) -> None:
    """The demo's one loss at the model server (the ollama window), by the URL and by the
    filter: the totals, the runs and the first place to look are that layer's alone."""
    app = _page("app_pages/incidents.py", layer="model_server")
    where = next(s for s in app.selectbox if s.label == "Where")
    assert where.value == "model_server"
    metrics = {m.label: m.value for m in app.metric}
    assert (metrics["Journeys"], metrics["Lost results"]) == ("1", "1")
    text = _text(app)
    assert "Look first at `query_orders`**: 1 lost result (1 dropped of 1 journey)" in text
    assert "look at **the model server (it read fewer tokens" in text
    runs = app.dataframe[0].value
    assert list(runs["agent"]) == ["ollama-window-agent"]
    assert app.segmented_control[0].options[0] == "any losing verdict · 1 run"

    # Chosen in the page: the URL follows, and clearing it shows every layer again.
    app = _page("app_pages/incidents.py")
    where = next(s for s in app.selectbox if s.label == "Where")
    assert "the model server (read fewer tokens than sent)" in where.options
    where.set_value("request").run()
    assert app.query_params["layer"] == "request"
    metrics = {m.label: m.value for m in app.metric}
    # The trims and the dropped export: results or calls that left the request.
    params = {"layer": "request", "limit": 500}
    at_request = httpx.get(f"{api_env}/api/v1/reports", params=params).json()["reports"]
    assert metrics["Journeys"] == str(len(at_request))
    assert metrics["Lost results"] == str(sum(r["first_lost"] for r in at_request)) != "0"
    next(s for s in app.selectbox if s.label == "Where").set_value(None).run()
    assert "layer" not in app.query_params
    assert {m.label: m.value for m in app.metric}["Journeys"] == "32"


def test_incidents_runs_default_to_every_losing_verdict_counted_in_runs(api_env: str) -> None:
    app = _page("app_pages/incidents.py")
    chips = app.segmented_control[0]
    assert chips.value == "losing"
    labels = list(chips.options)  # as shown
    # kb, ticket export, LangGraph trim, seed 001's naive trim, the ollama window
    assert labels[0] == "any losing verdict · 5 runs"
    assert labels[-1] == "any verdict · 9 runs"
    assert all(label.endswith(("run", "runs")) for label in labels)
    runs = app.dataframe[0].value
    assert len(runs) == 5
    assert set(runs["worst"]) == {"silent", "dropped", "orphaned"}
    assert sorted(runs["lost results"]) == [1, 1, 1, 1, 2]  # LangGraph's trim lost two


def test_incidents_filters_come_from_the_url(api_env: str) -> None:
    app = _page("app_pages/incidents.py", agent="ticket-agent")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Journeys"] == "2"
    assert metrics["Lost results"] == "1"  # the dropped export


def test_tool_page_names_the_layer_to_fix(api_env: str) -> None:
    """search_knowledge loses at context assembly: the fix links to its remedy."""
    app = _page("app_pages/tool.py", tool="search_knowledge")
    text = _text(app)
    remedy = "guide?page=remedies.md&section=framework-settings-that-truncate-silently-seed-004"
    assert f"Fix at: [the context manager (text → messages array)]({remedy})" in text
    # The re-send is not counted again.
    assert "Most lost results (1 silent) were first lost at" in text and ": 30 items" in text
    metrics = {m.label: m.value for m in app.metric}
    # Cut at step 2 and re-sent cut at step 3: one lost result, its 30 items once.
    assert (metrics["Lost results"], metrics["Lost items"]) == ("1", "30")
    recent = next(d.value for d in app.dataframe if "loss" in d.value.columns)
    assert sorted(recent["loss"]) == ["first lost at step 2, still missing", "first lost here"]
    assert all("&step=2&" in link for link in recent["journey"])  # both open step 2


def test_tool_page_says_what_its_counts_count(api_env: str) -> None:
    """Two silent journeys (step 2 and its re-send at step 3) are one lost result: the
    verdicts chart counts journeys, the stage table and chart count each result once,
    and each says so."""
    app = _page("app_pages/tool.py", tool="search_knowledge")
    stages = next(d.value for d in app.dataframe if "layer to fix" in d.value.columns)
    assert "journeys" not in stages.columns
    assert list(stages["lost results"]) == [1]
    captions = " ".join(c.value for c in app.caption)
    assert "Journeys by verdict: a result re-sent in later requests is one journey" in captions
    assert "Lost results by where they were first lost, each counted once" in captions


def test_alerts_page_shows_groups_notifications_and_rules(api_env: str) -> None:
    # The default rules alert on silent, dropped and orphaned journeys, to the log: the
    # demo's six losing (agent, tool) pairs are six firing groups, notified once each.
    app = _page("app_pages/alerts.py")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Firing groups"] == "6"
    assert metrics["Notifications"] == "6"
    groups, notifications, rules, sinks = (d.value for d in app.dataframe)
    assert list(sinks["type"]) == ["log"]
    assert set(groups["state"]) == {"firing"}
    assert set(groups["tool"]) == {
        "search_knowledge", "export_tickets", "search_orders", "get_customer", "grep_logs",
        "query_orders",
    }  # fmt: skip
    assert set(notifications["sink"]) == {"log"}  # named as its type: said once
    assert notifications["worst example"].str.startswith("/run?trace_id=").all()
    # The built-in rule is named for the three verdicts it fires on.
    assert list(rules["rule"]) == ["silent-dropped-orphaned"]
    assert list(rules["alerts on"]) == ["silent, dropped or orphaned journeys"]
    text = _text(app)
    assert "6 alert groups firing" in text
    assert "Worst examples" in text and "&tool_call_id=call_" in text  # links to journeys
    assert "(log)" not in text
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


def test_incidents_runs_table_pages_by_cursor(
    api_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
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
    assert [len(page) for page in pages] == [3, 3, 3]  # the nine demo runs
    assert len({run for page in pages for run in page}) == 9
    button("← newer").click().run()
    assert shown() == pages[1]


def test_the_ranking_chart_says_how_many_tools_it_shows(api_env: str) -> None:
    app = _page("app_pages/incidents.py")
    tools = httpx.get(f"{api_env}/api/v1/stats/breakdown", params={"limit": 500}).json()["rows"]
    assert len(tools) == 14  # the demo's tools: more than the chart's ten
    captions = [c.value for c in app.caption]
    assert (
        "The chart shows the 10 of 14 tools that lose most; the table below lists them all."
        in captions
    )
    ranking = next(d.value for d in app.dataframe if "tool" in d.value.columns)
    assert len(ranking) == 14


def test_the_verdict_timeline_fits_the_span_of_the_data(api_env: str) -> None:
    """The demo's journeys, sent within seconds, over the default 24 hours: the chart spans
    the data in bars of seconds, not one bar of 30 minutes."""
    app = _page("app_pages/incidents.py")
    caption = next(c.value for c in app.caption if c.value.startswith("One bar per"))
    bar = caption.removeprefix("One bar per ").split(",")[0]
    assert bar.endswith(" s"), caption
    assert "the span of the data (last 24 hours)" in caption


def test_an_orphaned_result_that_vanished_lost_all_of_it(api_env: str) -> None:
    """Seed 001's naive trim deleted the 140-line log and kept its call: the result's
    whole size is lost, as for a dropped one, and the Incidents tables say so."""
    app = _page("app_pages/incidents.py")
    ranking = next(d.value for d in app.dataframe if "tool" in d.value.columns)
    grep = ranking[ranking["tool"] == "grep_logs"].iloc[0]
    assert (grep["lost results"], grep["lost items"], grep["lost tokens"]) == (1, 140, 7_700)
    # The customer result kept without its call is still in the request: nothing of it lost.
    customer = ranking[ranking["tool"] == "get_customer"].iloc[0]
    assert (customer["lost results"], customer["lost items"]) == (1, 0)


def test_trace_id_columns_are_wide_enough_for_a_whole_trace_id(api_env: str) -> None:
    from ctxledger_dashboard.page_kit import TRACE_ID_WIDTH

    app = _page("app_pages/incidents.py")
    runs = app.dataframe[0]
    shown = list(runs.proto.column_order)
    assert shown.index("run") < shown.index("verdicts (journeys)")  # seen without scrolling
    assert json.loads(runs.proto.columns)["run"]["width"] == TRACE_ID_WIDTH


def test_both_tables_of_losing_journeys_show_seen_lost_counts_and_verdicts_alike(
    api_env: str,
) -> None:
    """The Incidents page's journeys of one tool and the Tool page's recent losses: when
    seen as a distance in time, lost items and tokens with separators, verdicts coloured."""
    pages = [
        _page("app_pages/incidents.py", tool="search_knowledge"),
        _page("app_pages/tool.py", tool="search_knowledge"),
    ]
    tables = [d for app in pages for d in app.dataframe if "seen" in d.value.columns]
    assert len(tables) == 2
    for table in tables:
        columns = json.loads(table.proto.columns)
        assert columns["seen"]["type_config"] == {"type": "datetime", "format": "distance"}
        for name in ("lost items", "lost tokens"):
            assert columns[name]["type_config"] == {"type": "number", "format": "localized"}
        assert table.value.columns[0] == "verdict"
        colored = f"_col0 {{ color: {COLORS[sc.VERDICT_SILENT]}; font-weight: 600 }}"
        assert colored in table.proto.arrow_data.styler.styles


def test_remedy_links_open_a_heading_of_docs_remedies() -> None:
    text = (ROOT / "docs" / "remedies.md").read_text(encoding="utf-8")
    anchors = {_github_anchor(line) for line in text.splitlines() if line.startswith("#")}
    assert set(REMEDY_OF_STAGE.values()) | {REMEDY_CHOICE} <= anchors


def test_every_stage_a_loss_can_reach_names_its_layer_and_remedy() -> None:
    """A loss is shown at the stage it reached: each such stage, the model server's
    ``received`` too, names the layer to fix and a heading of docs/remedies.md."""
    losing_stages = {sc.STAGE_SERIALIZED, sc.STAGE_ASSEMBLED, sc.STAGE_SENT,
                     sc.STAGE_LLM_INPUT, sc.STAGE_RECEIVED, "request"}  # fmt: skip
    assert losing_stages <= set(LAYER_OF_STAGE)
    assert losing_stages <= set(REMEDY_OF_STAGE)
    assert "model server" in LAYER_OF_STAGE[sc.STAGE_RECEIVED]


def _github_anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation but - and _ left
    out, spaces as hyphens."""
    title = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", title).replace(" ", "-")


@pytest.mark.parametrize("state", ["down", "hung"])
def test_incidents_page_says_the_collector_is_unreachable_and_where(
    state: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Down (nothing listens) or hung (a stopped collector process): the page says so,
    naming the URL, instead of loading on."""
    url = (
        f"http://127.0.0.1:{free_port()}"
        if state == "down"
        else request.getfixturevalue("hung_collector")
    )
    monkeypatch.setenv("CTXLEDGER_API_URL", url)
    app = _page("app_pages/incidents.py")
    (error,) = [e.value for e in app.error]
    assert "The collector is unreachable" in error and url in error
    assert "ctxledger serve" in error
    if state == "hung":
        assert "did not answer within 3 s" in error
    assert not app.metric  # nothing else was drawn


def test_the_guide_opens_each_remedy_from_this_install() -> None:
    """Every remedy link opens its section of docs/remedies.md on the dashboard itself:
    the heading and its text, the file and section named, no link to the internet needed."""
    text = (ROOT / "docs" / "remedies.md").read_text(encoding="utf-8")
    for anchor in {*REMEDY_OF_STAGE.values(), REMEDY_CHOICE}:
        app = _page("app_pages/guide.py", page="remedies.md", section=anchor)
        shown = _text(app)
        heading = next(
            line
            for line in text.splitlines()
            if line.startswith("#") and _github_anchor(line) == anchor
        )
        assert heading.lstrip("# ").strip() in shown, anchor
        assert f"docs/remedies.md · section “{heading.lstrip('# ').replace('`', '')}”" in shown
        assert not app.warning and not app.error


def test_the_guide_shows_the_whole_page_for_an_unknown_section_and_refuses_other_files() -> None:
    app = _page("app_pages/guide.py", page="remedies.md", section="no-such-section")
    assert "has no section" in app.warning[0].value
    assert "# Remedies: keep tool results within budget" in _text(app)
    links = re.findall(r"\]\((guide\?page=[^)]+)\)", _text(app))
    assert links and all("github.com" not in link for link in links)
    for outside in ("../README.md", "no-such-page.md"):
        refused = _page("app_pages/guide.py", page=outside)
        assert f"No page `{outside}`" in refused.error[0].value
