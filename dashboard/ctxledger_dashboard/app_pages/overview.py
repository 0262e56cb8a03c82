"""Incidents: which journeys lose content, in which runs, and which tools and agents lose
most. Every filter lives in the URL, so the view is a link to share."""

from __future__ import annotations

import math
import time
from typing import Any
from urllib.parse import urlencode

import altair as alt
import pandas as pd
import streamlit as st

from ctxledger_dashboard import charts
from ctxledger_dashboard.page_kit import TIME_RANGES, empty_state, fetch, live, run_link
from ctxledger_dashboard.verdict_style import (
    COLORS,
    LAYER_OF_STAGE,
    MEANINGS,
    VERDICTS,
    badge,
    ordered,
)

#: The verdicts that mean the model was misled or the request broke: what to fix first.
LOSING = ("silent", "dropped", "orphaned")
PAGE_SIZE = 20
#: URL-friendly codes for the time ranges: ``?range=last-24-hours``.
RANGES: dict[str, str] = {label.lower().replace(" ", "-"): label for label in TIME_RANGES}
DEFAULT_RANGE = "last-24-hours" if "last-24-hours" in RANGES else next(iter(RANGES))
ANY = "any"
BUCKETS = 48


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
    return {row["name"]: row["losing"] for row in rows if row["name"]}


def _synced(param: str, options: list[str], default: str | None, free: bool = True) -> list[str]:
    """Start the filter widget ``filter_<param>`` from ``?<param>=`` the first time; return
    its options, extended by a deep-linked value the window no longer holds (if ``free``)."""
    key = f"filter_{param}"
    if key not in st.session_state:
        wanted = st.query_params.get(param)
        st.session_state[key] = wanted if wanted in options or (wanted and free) else default
    current = st.session_state[key]
    return [*options, current] if current is not None and current not in options else options


def _to_url(param: str, value: str | list[str] | None, default: str | None = None) -> None:
    if value in (None, [], default):
        st.query_params.pop(param, None)
    else:
        st.query_params[param] = value


def _filters() -> dict[str, Any]:
    columns = st.columns([1.1, 1.4, 1.4, 2.4])
    code = (
        columns[0].selectbox(
            "Time range",
            _synced("range", list(RANGES), DEFAULT_RANGE, free=False),
            format_func=RANGES.__getitem__,
            key="filter_range",
        )
        or DEFAULT_RANGE
    )  # never empty: the options have a default
    since, until = _window(code)
    agents = _names("agent", since)
    tools = _names("tool", since)

    def losing_label(counts: dict[str, int]) -> Any:
        return lambda name: f"{name} · {counts[name]} losing" if counts.get(name) else name

    agent = columns[1].selectbox(
        "Agent",
        _synced("agent", list(agents), None),
        index=None,
        placeholder="all agents",
        format_func=losing_label(agents),
        key="filter_agent",
    )
    tool = columns[2].selectbox(
        "Tool",
        _synced("tool", list(tools), None),
        index=None,
        placeholder="all tools",
        format_func=losing_label(tools),
        key="filter_tool",
    )
    all_verdicts = [v for v, _ in ordered(dict.fromkeys(VERDICTS, 0))]
    if "filter_verdict" not in st.session_state:
        st.session_state.filter_verdict = [
            v for v in all_verdicts if v in st.query_params.get_all("verdict")
        ]
    verdicts = columns[3].multiselect(
        "Verdict", all_verdicts, placeholder="all verdicts", key="filter_verdict"
    )
    _to_url("range", code, DEFAULT_RANGE)
    _to_url("agent", agent)
    _to_url("tool", tool)
    _to_url("verdict", verdicts)
    return {
        "range": code,
        "since": since,
        "until": until,
        "agent": agent,
        "tool": tool,
        "verdict": verdicts,
    }


def _headline(totals: dict[str, int], agent_rows: list[dict[str, Any]]) -> None:
    journeys = sum(totals.values())
    losing = sum(totals.get(v, 0) for v in LOSING)
    lost_items = sum(row["lost_items"] for row in agent_rows)
    lost_tokens = sum(row["lost_tokens"] for row in agent_rows)
    columns = st.columns(4)
    columns[0].metric(
        "Journeys",
        f"{journeys:,}",
        help="Tool result × request: one tool result on its way into one model request.",
        border=True,
    )
    columns[1].metric(
        "Losing journeys",
        f"{losing:,}",
        delta=f"{losing / journeys:.0%} of journeys" if losing else None,
        delta_color="inverse",
        delta_arrow="off",
        help="; ".join(f"{v}: {MEANINGS[v]}" for v in LOSING),
        border=True,
    )
    columns[2].metric(
        "Lost items",
        f"{lost_items:,}",
        help="Items (records, rows, documents) missing between the first and the last stage, "
        "whatever the verdict (declared trims included).",
        border=True,
    )
    columns[3].metric(
        "Lost tokens",
        f"{lost_tokens:,}",
        help="Tokens missing between the first and the last stage, whatever the verdict.",
        border=True,
    )


def _look_first(tool_rows: list[dict[str, Any]], f: dict[str, Any]) -> None:
    """The incident's short answer: the tool that loses most, and the layer to fix."""
    worst = next((row for row in tool_rows if row["losing"] and row["name"]), None)
    if worst is None:
        return
    name = worst["name"]
    profile = fetch("tool", name, since=f["since"], until=f["until"], agent=f["agent"], recent=0)
    where = ""
    if profile and profile["by_stage"]:
        stage = profile["by_stage"][0]
        step = f"{stage['from_stage']} → {stage['stage']}" if stage["from_stage"] else "the request"
        layer = LAYER_OF_STAGE.get(stage["stage"], f"the code behind `{stage['stage']}`")
        where = f" Most losses happen at **{step}**: look at **{layer}**."
    losing = ", ".join(f"{n} {v}" for v, n in ordered(worst["verdicts"]) if v in LOSING)
    st.error(
        f"**Look first at `{name}`**: {losing} of {worst['journeys']} journeys, "
        f"{worst['lost_items']:,} items lost.{where} "
        f"[Open the tool →]({_tool_link(name, f['range'])})",
        icon=":material/search:",
    )


def _timeline(f: dict[str, Any], timeline: dict[str, Any]) -> None:
    st.subheader("Journeys by verdict over time")
    width = timeline["bucket_seconds"]
    # Each bar spans its whole bucket (start → end), so the gaps in time are visible.
    points = [{**point, "end": (point["start"] + width) * 1000} for point in timeline["points"]]
    x = alt.X("time:T", title=None)
    if f["since"] is not None:
        x = alt.X(
            "time:T", title=None, scale=alt.Scale(domain=[f["since"] * 1000, f["until"] * 1000])
        )
    chart = (
        charts.verdict_timeline(points, width)
        .transform_calculate(end_time="toDate(datum.end)")
        .encode(x=x, x2="end_time:T")
    )
    st.altair_chart(chart, width="stretch")
    if timeline["bucket_seconds"]:
        st.caption(f"One bar per {_duration(timeline['bucket_seconds'])}, by last observation.")


def _duration(seconds: float) -> str:
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n > 1 else ''}"
    return f"{seconds:g} s"


def _page_controls(key: str, total: int, shown: int, next_offset: int | None) -> None:
    page = st.session_state[key]
    first = page * PAGE_SIZE
    columns = st.columns([1, 1, 6], vertical_alignment="center")
    columns[0].button(
        "← newer",
        key=f"{key}:prev",
        disabled=page == 0,
        on_click=lambda: st.session_state.update({key: page - 1}),
        width="stretch",
    )
    columns[1].button(
        "older →",
        key=f"{key}:next",
        disabled=next_offset is None,
        on_click=lambda: st.session_state.update({key: page + 1}),
        width="stretch",
    )
    if total:
        columns[2].caption(f"{first + 1}–{first + shown} of {total:,}, newest first")


def _verdict_style(value: Any) -> str:
    color = COLORS.get(str(value))
    return f"color: {color}; font-weight: 600" if color else ""


def _styled(data: pd.DataFrame, column: str) -> Any:
    return data.style.map(_verdict_style, subset=[column])


def _runs(f: dict[str, Any], totals: dict[str, int]) -> None:
    st.subheader("Worst recent runs" if not f["tool"] else f"Recent journeys of `{f['tool']}`")
    present = [v for v, n in ordered(totals) if n]
    options = [*present, ANY]
    choice = st.segmented_control(
        "Journeys that are" if f["tool"] else "With at least one journey that is (journeys)",
        options,
        default=options[0],
        format_func=lambda v: f"{v} ({totals[v]:,})" if v in totals else "any verdict",
        required=True,
        key=f"runs_verdict:{','.join(options)}",
    )
    verdict = None if choice in (None, ANY) else choice
    if verdict:
        st.caption(f"{badge(verdict)} {MEANINGS.get(verdict, '')}")
    key = "runs_page:" + repr((f["range"], f["agent"], f["tool"], tuple(f["verdict"]), verdict))
    st.session_state.setdefault(key, 0)
    offset = st.session_state[key] * PAGE_SIZE
    if f["tool"]:
        _tool_journeys(f, verdict, offset, key)
        return
    listing = fetch(
        "runs",
        limit=PAGE_SIZE,
        offset=offset,
        agent=f["agent"],
        verdict=verdict,
        since=f["since"],
        until=f["until"],
    )
    runs = listing["runs"]
    if not runs and offset:
        st.session_state[key] = 0
        st.rerun()
    if not runs:
        st.info("No run matches these filters.", icon=":material/filter_alt_off:")
        return
    data = pd.DataFrame(
        [
            {
                "worst": run["worst_verdict"],
                "agent": run["agent_name"] or run["service_name"] or "?",
                "last seen": pd.Timestamp(run["last_seen"], unit="s", tz="UTC"),
                "journeys": run["journeys"],
                "verdicts": " · ".join(f"{v} {n}" for v, n in ordered(run["verdicts"])),
                "run": run_link(run["trace_id"]),
            }
            for run in runs
        ]
    )
    st.dataframe(
        _styled(data, "worst"),
        hide_index=True,
        width="stretch",
        column_config={
            "last seen": st.column_config.DatetimeColumn(format="distance"),
            "verdicts": st.column_config.TextColumn(width="medium"),
            "run": st.column_config.LinkColumn(
                "run (trace id)", display_text=r"trace_id=([0-9a-f]+)", width="medium"
            ),
        },
    )
    _page_controls(key, listing["total"], len(runs), listing["next_offset"])


def _tool_journeys(f: dict[str, Any], verdict: str | None, offset: int, key: str) -> None:
    """/runs has no tool filter: with a tool chosen, list that tool's journeys instead."""
    verdicts = [verdict] if verdict else f["verdict"]
    listing = fetch(
        "reports",
        limit=PAGE_SIZE,
        offset=offset,
        tool=f["tool"],
        agent=f["agent"],
        verdict=verdicts,
        since=f["since"],
        until=f["until"],
    )
    reports = listing["reports"]
    if not reports:
        st.info("No journey matches these filters.", icon=":material/filter_alt_off:")
        return
    data = pd.DataFrame(
        [
            {
                "verdict": r["verdict"],
                "agent": r["agent_name"] or "?",
                "seen": pd.Timestamp(r["last_observed_at"], unit="s", tz="UTC"),
                "step": r["step"],
                "lost items": r["lost_items"],
                "lost tokens": r["lost_tokens"],
                "journey": run_link(r["trace_id"], r["step"], r["tool_call_id"]),
                "run (trace id)": run_link(r["trace_id"]),
            }
            for r in reports
        ]
    )
    st.dataframe(
        _styled(data, "verdict"),
        hide_index=True,
        width="stretch",
        column_config={
            "seen": st.column_config.DatetimeColumn(format="distance"),
            "journey": st.column_config.LinkColumn(display_text=r"tool_call_id=(.+)$"),
            "run (trace id)": st.column_config.LinkColumn(display_text=r"trace_id=([0-9a-f]+)"),
        },
    )
    _page_controls(key, listing["total"], len(reports), listing["next_offset"])


def _tool_link(name: str, range_code: str) -> str:
    return "/tool?" + urlencode({"tool": name, "range": range_code})


def _agent_link(name: str, range_code: str) -> str:
    # Incidents is the app's default page: Streamlit serves it at the root URL.
    return "/?" + urlencode({"agent": name, "range": range_code})


def _ranking(rows: list[dict[str, Any]], label: str, link: Any, range_code: str) -> None:
    if not rows:
        st.caption("Nothing in this window.")
        return
    chart = charts.loss_ranking(rows, label)
    if chart is not None:
        st.altair_chart(chart, width="stretch")
    data = pd.DataFrame(
        [
            {
                label: row["name"] or "?",
                "losing": row["losing"],
                "journeys": row["journeys"],
                "lost items": row["lost_items"],
                "lost tokens": row["lost_tokens"],
                "open": link(row["name"], range_code) if row["name"] else None,
            }
            for row in rows
        ]
    )
    st.dataframe(
        data,
        hide_index=True,
        width="stretch",
        height=min(38 + 35 * len(data), 400),
        column_order=[label, "open", "losing", "journeys", "lost items", "lost tokens"],
        column_config={
            "losing": st.column_config.NumberColumn(help="silent + dropped + orphaned journeys"),
            "open": st.column_config.LinkColumn(
                "",
                display_text="open →" if label == "tool" else "filter →",
                help="the tool's page" if label == "tool" else "these incidents, for this agent",
            ),
        },
    )


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
    scope = {k: f[k] for k in ("since", "until", "agent", "tool", "verdict")}
    timeline = fetch("timeline", buckets=BUCKETS, **scope)
    totals: dict[str, int] = {}
    for point in timeline["points"]:
        totals[point["verdict"]] = totals.get(point["verdict"], 0) + point["journeys"]
    if not totals:
        st.info(
            f"**No journeys match these filters** ({RANGES[f['range']].lower()}). "
            "Widen the time range or clear the agent, tool and verdict filters.",
            icon=":material/filter_alt_off:",
        )
        return
    tool_rows = fetch("breakdown", "tool", limit=500, **scope)["rows"]
    agent_rows = fetch("breakdown", "agent", limit=500, **scope)["rows"]
    _headline(totals, agent_rows)
    _look_first(tool_rows, f)
    _timeline(f, timeline)
    _runs(f, totals)
    st.subheader("Who loses most")
    st.caption("Silent, dropped and orphaned journeys first, then by lost items.")
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**Tools**")
        _ranking(tool_rows, "tool", _tool_link, f["range"])
    with right:
        st.markdown("**Agents**")
        _ranking(agent_rows, "agent", _agent_link, f["range"])


live(render)
