"""Tool: one tool across runs — how often and how much it loses, at which stage (so the
fix goes to the right layer), which agents use it, and its recent losses."""

from __future__ import annotations

import math
import time
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from ctxledger.verdicts import LOSING_VERDICTS, VERDICT_MEANINGS
from ctxledger_dashboard import charts
from ctxledger_dashboard.docs_links import remedy_link
from ctxledger_dashboard.markdown_text import code as inline_code
from ctxledger_dashboard.page_kit import (
    TIME_RANGES,
    empty_state,
    fetch,
    live,
)
from ctxledger_dashboard.tool_losses import recent_losses
from ctxledger_dashboard.url_state import DEFAULT_RANGE, RANGES, synced, to_url
from ctxledger_dashboard.verdict_style import LAYER_OF_STAGE, badge, ordered
from ctxledger_dashboard.visible_text import visible, visible_frame

RECENT = 50
FIRST_LOST_HELP = (
    "tool results first lost here, each counted once: a result re-sent still missing in "
    "later requests is not counted again (the Verdicts chart counts those journeys)"
)


def _since(code: str) -> float | None:
    """The start of a time range, on a 5-second grid so that cached reads are reused."""
    window = TIME_RANGES[RANGES[code]]
    return None if window is None else math.floor((time.time() - window) / 5) * 5.0


def _layer(stage: str) -> str:
    return LAYER_OF_STAGE.get(stage, f"the code that produces the {stage} stage")


def _where(stage: dict[str, Any]) -> str:
    return f"{stage['from_stage']} → {stage['stage']}" if stage["from_stage"] else stage["stage"]


def _choose(since: float | None) -> tuple[str | None, dict[str, int]]:
    rows = fetch("breakdown", "tool", limit=500, since=since)["rows"]
    losing = {row["name"]: row["lost_results"] for row in rows if row["name"]}
    tool = st.selectbox(
        "Tool",
        synced("tool", list(losing), None),
        index=None,
        placeholder="choose a tool (most lost results first)",
        format_func=lambda n: f"{visible(n)} · {losing[n]:,} lost" if losing.get(n) else visible(n),
        key="filter_tool",
    )
    to_url("tool", tool)
    return tool, losing


def _headline(profile: dict[str, Any]) -> None:
    journeys = profile["journeys"]
    losing = profile["losing"]
    losing_words = ", ".join(LOSING_VERDICTS)
    columns = st.columns(4)
    columns[0].metric("Journeys", f"{journeys:,}", border=True)
    columns[1].metric(
        "Lost results",
        f"{profile['lost_results']:,}",
        delta=f"in {losing:,} losing journeys" if losing else None,
        delta_color="inverse",
        delta_arrow="off",
        help=f"This tool's results lost ({losing_words}), each counted once: a result re-sent "
        "still missing in later requests is the same loss. "
        + "; ".join(f"{v}: {VERDICT_MEANINGS[v]}" for v in LOSING_VERDICTS),
        border=True,
    )
    columns[2].metric(
        "Lost items",
        f"{profile['result_lost_items']:,}",
        help=f"Items its lost results lost ({losing_words}), each result counted once.",
        border=True,
    )
    columns[3].metric(
        "Lost tokens",
        f"{profile['result_lost_tokens']:,}",
        help=f"Tokens its lost results lost ({losing_words}), each result counted once.",
        border=True,
    )
    if profile["sampled"]:
        st.caption(f"Computed from the {journeys:,} most recent journeys of this tool.")


def _fix_here(by_stage: list[dict[str, Any]]) -> None:
    if not by_stage:
        st.success("No stage lost anything in this window.", icon=":material/check_circle:")
        return
    top = by_stage[0]
    verdicts = ", ".join(f"{n:,} {v}" for v, n in ordered(top["verdicts"]))
    message = (
        f"**Fix at: [{_layer(top['stage'])}]({remedy_link(top['stage'])}).** Most lost "
        f"results ({verdicts}) were first lost at {inline_code(_where(top))}: "
        f"{top['lost_items']:,} items, {top['lost_tokens']:,} tokens. The link opens the "
        "remedy in docs/remedies.md."
    )
    worst = ordered(top["verdicts"])[0][0]
    (st.error if worst in LOSING_VERDICTS else st.warning)(message, icon=":material/build:")


def _stage_table(by_stage: list[dict[str, Any]]) -> None:
    st.dataframe(
        visible_frame(
            pd.DataFrame(
                [
                    {
                        "where": _where(stage),
                        "layer to fix": _layer(stage["stage"]),
                        "lost results": stage["losses"],
                        "verdicts": " · ".join(f"{v} {n:,}" for v, n in ordered(stage["verdicts"])),
                        "lost items": stage["lost_items"],
                        "lost tokens": stage["lost_tokens"],
                    }
                    for stage in by_stage
                ]
            )
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "lost results": st.column_config.NumberColumn(format="localized", help=FIRST_LOST_HELP),
            **{
                name: st.column_config.NumberColumn(format="localized")
                for name in ("lost items", "lost tokens")
            },
        },
    )


def _agents(profile: dict[str, Any], range_code: str) -> None:
    st.subheader("Agents using it")
    data = pd.DataFrame(
        [
            {
                "agent": agent,
                "journeys": count,
                # Incidents is the app's default page: Streamlit serves it at the root URL.
                "open": "/?"
                + urlencode({"agent": agent, "tool": profile["tool"], "range": range_code}),
            }
            for agent, count in sorted(profile["agents"].items(), key=lambda kv: -kv[1])
        ]
    )
    st.dataframe(
        visible_frame(data),
        hide_index=True,
        width="stretch",
        column_config={"open": st.column_config.LinkColumn("", display_text="incidents →")},
    )


def render() -> None:
    st.title("Tool")
    left, right = st.columns([3, 1])
    with right:
        code = (
            st.selectbox(
                "Time range",
                synced("range", list(RANGES), DEFAULT_RANGE, free=False),
                format_func=RANGES.__getitem__,
                key="filter_range",
            )
            or DEFAULT_RANGE
        )  # never empty: the options have a default
        to_url("range", code, DEFAULT_RANGE)
    since = _since(code)
    with left:
        tool, losing = _choose(since)
    if not losing and fetch("runs", limit=1)["total"] == 0:
        empty_state("tool results")
        return
    if not losing and not tool:
        st.info(
            f"No tool results in this window ({RANGES[code].lower()}).",
            icon=":material/filter_alt_off:",
        )
        return
    if not tool:
        st.caption("Choose a tool, or open one from the Incidents page.")
        return
    profile = fetch("tool", tool, since=since, recent=RECENT)
    if profile is None:
        st.warning(
            f"No journeys of tool {inline_code(tool)} in this window ({RANGES[code].lower()}).",
            icon=":material/filter_alt_off:",
        )
        return
    worst = ordered(profile["verdicts"])[0][0]
    st.markdown(f"### {inline_code(tool)} {badge(worst)}")
    st.caption(f"{VERDICT_MEANINGS.get(worst, '')} · {RANGES[code].lower()}")
    _headline(profile)
    _fix_here(profile["by_stage"])
    left, right = st.columns([1, 2], gap="large")
    with left:
        st.subheader("Verdicts")
        st.caption(
            "Journeys by verdict: a result re-sent in later requests is one journey per request."
        )
        chart = charts.verdict_distribution(profile["verdicts"])
        if chart is not None:
            st.altair_chart(chart, width="stretch")
    with right:
        st.subheader("Where it loses")
        st.caption(
            "Lost results by where they were first lost, each counted once (its re-sends "
            "still missing are not counted again)."
        )
        chart = charts.stage_losses(profile["by_stage"], LAYER_OF_STAGE)
        if chart is not None:
            st.altair_chart(chart, width="stretch")
        else:
            st.caption("No stage lost anything.")
    if profile["by_stage"]:
        st.markdown("**Each stage, and the layer to fix**")
        _stage_table(profile["by_stage"])
    recent_losses(profile["recent_losses"])
    _agents(profile, code)


live(render)
