"""Incidents: which journeys lose content, in which runs, and which tools and agents lose
most. Every filter lives in the URL, so the view is a link to share."""

from __future__ import annotations

import math
import time
from typing import Any

import altair as alt
import streamlit as st

from ctxledger.verdicts import LOSING_VERDICTS, VERDICT_MEANINGS
from ctxledger_dashboard import charts, incident_tables, timeline_fit
from ctxledger_dashboard.docs_links import remedy_link
from ctxledger_dashboard.markdown_text import code
from ctxledger_dashboard.page_kit import TIME_RANGES, empty_state, fetch, live, when
from ctxledger_dashboard.url_state import DEFAULT_RANGE, RANGES, synced, to_url
from ctxledger_dashboard.verdict_style import (
    LAYER_LABELS,
    LAYER_OF_STAGE,
    VERDICTS,
    ordered,
)
from ctxledger_dashboard.visible_text import visible

PAGE_SIZE = 20
ANY = "any"
BUCKETS = 48
#: Each narrowing shrinks the range at least fourfold: a few are enough for 30 days → 1 s.
MAX_NARROWINGS = 6


def _window(code: str) -> tuple[float | None, float | None]:
    """[since, until) of a time range, ending at the end of the current timeline bucket, so
    the chart's bars line up and cached reads are reused within a bucket."""
    window = TIME_RANGES[RANGES[code]]
    if window is None:
        return None, None
    width = window / BUCKETS
    until = math.ceil(time.time() / width) * width
    return until - window, until


def _names(by: str, since: float | None) -> dict[str, int]:
    """Agent or tool names in the window, most losing first, with their losing counts."""
    rows = fetch("breakdown", by, limit=500, since=since)["rows"]
    return {row["name"]: row["lost_results"] for row in rows if row["name"]}


def _filters() -> dict[str, Any]:
    columns = st.columns([1.1, 1.3, 1.3, 1.6, 2.2])
    code = (
        columns[0].selectbox(
            "Time range",
            synced("range", list(RANGES), DEFAULT_RANGE, free=False),
            format_func=RANGES.__getitem__,
            key="filter_range",
        )
        or DEFAULT_RANGE
    )  # never empty: the options have a default
    since, until = _window(code)
    agents = _names("agent", since)
    tools = _names("tool", since)

    def losing_label(counts: dict[str, int]) -> Any:
        return lambda name: (
            f"{visible(name)} · {counts[name]:,} lost" if counts.get(name) else visible(name)
        )

    agent = columns[1].selectbox(
        "Agent",
        synced("agent", list(agents), None),
        index=None,
        placeholder="all agents",
        format_func=losing_label(agents),
        key="filter_agent",
    )
    tool = columns[2].selectbox(
        "Tool",
        synced("tool", list(tools), None),
        index=None,
        placeholder="all tools",
        format_func=losing_label(tools),
        key="filter_tool",
    )
    layer = columns[3].selectbox(
        "Where",
        synced("layer", list(LAYER_LABELS), None, free=False),
        index=None,
        placeholder="every layer",
        format_func=LAYER_LABELS.__getitem__,
        key="filter_layer",
        help="Only the journeys whose worst finding sits in this layer of the pipeline.",
    )
    all_verdicts = [v for v, _ in ordered(dict.fromkeys(VERDICTS, 0))]
    if "filter_verdict" not in st.session_state:
        st.session_state.filter_verdict = [
            v for v in all_verdicts if v in st.query_params.get_all("verdict")
        ]
    verdicts = columns[4].multiselect(
        "Verdict", all_verdicts, placeholder="all verdicts", key="filter_verdict"
    )
    to_url("range", code, DEFAULT_RANGE)
    to_url("agent", agent)
    to_url("tool", tool)
    to_url("layer", layer)
    to_url("verdict", verdicts)
    return {
        "range": code,
        "since": since,
        "until": until,
        "agent": agent,
        "tool": tool,
        "layer": layer,
        "verdict": verdicts,
    }


LOSING_WORDS = ", ".join(LOSING_VERDICTS)


def _headline(totals: dict[str, int], results: dict[str, int]) -> None:
    """Journeys, and the lost results among them: a tool result cut at step 2 and re-sent
    cut at step 3 is one lost result (two losing journeys); its items count once."""
    journeys = sum(totals.values())
    losing = sum(totals.get(v, 0) for v in LOSING_VERDICTS)
    columns = st.columns(4)
    columns[0].metric(
        "Journeys",
        f"{journeys:,}",
        help="Tool result × request: one tool result on its way into one model request.",
        border=True,
    )
    columns[1].metric(
        "Lost results",
        f"{results['lost_results']:,}",
        delta=f"in {losing:,} losing journeys" if losing else None,
        delta_color="inverse",
        delta_arrow="off",
        help=f"Tool results lost ({LOSING_WORDS}), each counted once: a result re-sent "
        "still missing in later requests is the same loss. "
        + "; ".join(f"{v}: {VERDICT_MEANINGS[v]}" for v in LOSING_VERDICTS),
        border=True,
    )
    columns[2].metric(
        "Lost items",
        f"{results['result_lost_items']:,}",
        help=f"Items (records, rows, documents) the lost results lost ({LOSING_WORDS}), "
        "each result counted once, where it was first lost.",
        border=True,
    )
    unknown = results["result_tokens_unknown"]
    tokens = f"{results['result_lost_tokens']:,}"
    columns[3].metric(
        "Lost tokens",
        f"{tokens} + {unknown:,} unknown" if unknown else tokens,
        help=f"Tokens the lost results lost ({LOSING_WORDS}), each result counted once. A "
        "result whose stages counted tokens with different encodings lost an unknown number: "
        "the total leaves it out and says how many.",
        border=True,
    )


def _result_totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    names = ("lost_results", "result_lost_items", "result_lost_tokens", "result_tokens_unknown")
    return {name: sum(row[name] for row in rows) for name in names}


def _look_first(tool_rows: list[dict[str, Any]], f: dict[str, Any]) -> None:
    """The incident's short answer: the tool that loses most, and the layer to fix."""
    worst = next((row for row in tool_rows if row["lost_results"] and row["name"]), None)
    if worst is None:
        return
    name = worst["name"]
    profile = fetch(
        "tool",
        name,
        since=f["since"],
        until=f["until"],
        agent=f["agent"],
        layer=f["layer"],
        recent=0,
    )
    where = ""
    if profile and profile["by_stage"]:
        stage = profile["by_stage"][0]
        step = f"{stage['from_stage']} → {stage['stage']}" if stage["from_stage"] else "the request"
        layer = LAYER_OF_STAGE.get(stage["stage"], f"the code behind {code(stage['stage'])}")
        remedy = remedy_link(stage["stage"])
        where = f" Most losses happen at **{step}**: look at **{layer}** ([remedy →]({remedy}))."
    losing = ", ".join(f"{n:,} {v}" for v, n in ordered(worst["verdicts"]) if v in LOSING_VERDICTS)
    results = worst["lost_results"]
    st.error(
        f"**Look first at {code(name)}**: {results:,} lost result{'s' if results != 1 else ''} "
        f"({losing} of {worst['journeys']:,} journey{'s' if worst['journeys'] != 1 else ''}), "
        f"{worst['result_lost_items']:,} items lost.{where} "
        f"[Open the tool →]({incident_tables.tool_link(name, f['range'])})",
        icon=":material/search:",
    )


def _fitted(scope: dict[str, Any], timeline: dict[str, Any]) -> dict[str, Any]:
    """The timeline over the span of its data, narrowed while the data fills less than a
    quarter of the range (a 24-hour range of a fresh install: a few minutes)."""
    for _ in range(MAX_NARROWINGS):
        narrower = timeline_fit.narrower_range(timeline, BUCKETS)
        if narrower is None:
            break
        since, until, buckets = narrower
        timeline = fetch("timeline", buckets=buckets, **{**scope, "since": since, "until": until})
    return timeline


def _timeline(f: dict[str, Any], scope: dict[str, Any], whole: dict[str, Any]) -> None:
    st.subheader("Journeys by verdict over time")
    timeline = _fitted(scope, whole)
    width = timeline["bucket_seconds"]
    # Each bar spans its whole bucket (start → end), so the gaps in time are visible.
    points = [{**point, "end": (point["start"] + width) * 1000} for point in timeline["points"]]
    # Bars under a minute get seconds on the axis (Vega would label them in milliseconds).
    axis = alt.Axis(format="%H:%M:%S") if width and width < 60 else alt.Axis()
    x = alt.X("time:T", title=None, axis=axis)
    if timeline["since"] is not None and timeline["until"] is not None:
        domain = [timeline["since"] * 1000, timeline["until"] * 1000]
        x = alt.X("time:T", title=None, axis=axis, scale=alt.Scale(domain=domain))
    chart = (
        charts.verdict_timeline(points, width)
        .transform_calculate(end_time="toDate(datum.end)")
        .encode(x=x, x2="end_time:T")
    )
    st.altair_chart(chart, width="stretch")
    if width:
        bar = timeline_fit.duration(width)
        span = (
            f", {when(timeline['since'])} → {when(timeline['until'])}: the span of the data "
            f"({RANGES[f['range']].lower()})"
            if timeline is not whole
            else ""
        )
        st.caption(f"One bar per {bar}, by last observation{span}.")


def render() -> None:
    st.title("Incidents")
    st.caption(
        "Which tool results lost content on their way to the model, in which runs, and "
        "who loses most. The filters are in the URL: copy it to share this view."
    )
    if fetch("runs", limit=1)["total"] == 0:
        empty_state("runs")
        return
    f = _filters()
    scope = {k: f[k] for k in ("since", "until", "agent", "tool", "layer", "verdict")}
    timeline = fetch("timeline", buckets=BUCKETS, **scope)
    totals: dict[str, int] = {}
    for point in timeline["points"]:
        totals[point["verdict"]] = totals.get(point["verdict"], 0) + point["journeys"]
    if not totals:
        st.info(
            f"**No journeys match these filters** ({RANGES[f['range']].lower()}). "
            "Widen the time range or clear the agent, tool, layer and verdict filters.",
            icon=":material/filter_alt_off:",
        )
        return
    tool_rows = fetch("breakdown", "tool", limit=500, **scope)["rows"]
    agent_rows = fetch("breakdown", "agent", limit=500, **scope)["rows"]
    _headline(totals, _result_totals(agent_rows))
    _look_first(tool_rows, f)
    _timeline(f, scope, timeline)
    incident_tables.runs(f, totals)
    st.subheader("Who loses most")
    st.caption(f"Most lost results ({LOSING_WORDS}, each counted once) first, then by lost items.")
    tools, agents = st.tabs(["Tools", "Agents"])
    with tools:
        incident_tables.ranking(tool_rows, "tool", incident_tables.tool_link, f["range"])
    with agents:
        incident_tables.ranking(agent_rows, "agent", incident_tables.agent_link, f["range"])


live(render)
