"""The Incidents page's tables: worst runs, a tool's journeys, and the rankings."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from ctxledger.verdicts import LOSING_VERDICTS, VERDICT_MEANINGS
from ctxledger_dashboard import charts
from ctxledger_dashboard.markdown_text import code
from ctxledger_dashboard.page_kit import (
    TRACE_ID_WIDTH,
    count,
    cursor_page,
    fetch,
    loss_columns,
    plural,
    run_link,
    to_first_page,
)
from ctxledger_dashboard.pagers import cursor_page_controls
from ctxledger_dashboard.verdict_style import (
    COLORS,
    badge,
    ordered,
)
from ctxledger_dashboard.visible_text import visible_frame

PAGE_SIZE = 20
ANY = "any"
#: The runs table's columns: the trace id before the verdict counts, so that it is seen
#: whole without scrolling.
RUN_COLUMNS = [
    "worst",
    "agent",
    "last seen",
    "lost results",
    "journeys",
    "run",
    "verdicts (journeys)",
]


def verdict_style(value: Any) -> str:
    color = COLORS.get(str(value))
    return f"color: {color}; font-weight: 600" if color else ""


def styled(data: pd.DataFrame, column: str) -> Any:
    return visible_frame(data).style.map(verdict_style, subset=[column])


LOSING = "losing"


def _chosen_verdicts(choice: str | None) -> list[str]:
    if choice == LOSING:
        return list(LOSING_VERDICTS)
    return [] if choice in (None, ANY) else [choice]


def _run_count(f: dict[str, Any], verdicts: list[str]) -> int:
    scope = {"agent": f["agent"], "layer": f["layer"], "since": f["since"], "until": f["until"]}
    total: int = fetch("runs", limit=1, verdict=verdicts, **scope)["total"]
    return total


def runs(f: dict[str, Any], totals: dict[str, int]) -> None:
    """The runs (or, with a tool chosen, that tool's journeys) with a journey of the chosen
    verdicts: all losing ones by default. Each chip counts what the table lists."""
    tool = f["tool"]
    st.subheader("Worst recent runs" if not tool else f"Recent journeys of {code(tool)}")
    present = [v for v, n in ordered(totals) if n]
    options = ([LOSING] if any(v in LOSING_VERDICTS for v in present) else []) + present + [ANY]
    if tool:
        counts = {v: totals[v] for v in present}
        counts[LOSING] = sum(totals.get(v, 0) for v in LOSING_VERDICTS)
        counts[ANY] = sum(totals.values())
        unit = "journey"
    else:
        counts = {option: _run_count(f, _chosen_verdicts(option)) for option in options}
        unit = "run"

    def label(option: str) -> str:
        name = {LOSING: "any losing verdict", ANY: "any verdict"}.get(option, option)
        return f"{name} · {plural(counts[option], unit)}"

    chip_key = f"runs_verdict:{','.join(options)}"
    if st.session_state.get(chip_key) not in options:
        st.session_state[chip_key] = options[0]
    choice = st.segmented_control(
        "Journeys that are" if tool else "Runs with at least one journey that is",
        options,
        format_func=label,
        required=True,
        key=chip_key,
    )
    verdicts = _chosen_verdicts(choice)
    if choice == LOSING:
        st.caption(" · ".join(f"{badge(v)} {VERDICT_MEANINGS[v]}" for v in LOSING_VERDICTS))
    elif verdicts:
        st.caption(f"{badge(verdicts[0])} {VERDICT_MEANINGS.get(verdicts[0], '')}")
    key = "runs_page:" + repr(
        (f["range"], f["agent"], tool, f["layer"], tuple(f["verdict"]), choice)
    )
    _, after = cursor_page(key)
    if tool:
        tool_journeys(f, verdicts, after, key)
        return
    listing = fetch(
        "runs",
        limit=PAGE_SIZE,
        after=after,
        agent=f["agent"],
        layer=f["layer"],
        verdict=verdicts,
        since=f["since"],
        until=f["until"],
    )
    runs = listing["runs"]
    if not runs and after:
        to_first_page(key)
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
                "lost results": run["lost_results"],
                "journeys": run["journeys"],
                "verdicts (journeys)": " · ".join(
                    f"{v} {n:,}" for v, n in ordered(run["verdicts"])
                ),
                "run": run_link(run["trace_id"]),
            }
            for run in runs
        ]
    )
    st.dataframe(
        styled(data, "worst"),
        hide_index=True,
        width="stretch",
        column_config={
            "last seen": st.column_config.DatetimeColumn(format="distance"),
            "lost results": st.column_config.NumberColumn(
                format="localized", help="tool results lost in the run, each counted once"
            ),
            "journeys": st.column_config.NumberColumn(format="localized"),
            "verdicts (journeys)": st.column_config.TextColumn(width="medium"),
            "run": st.column_config.LinkColumn(
                "run (trace id)", display_text=r"trace_id=([0-9a-f]+)", width=TRACE_ID_WIDTH
            ),
        },
        column_order=RUN_COLUMNS,
    )
    cursor_page_controls(key, PAGE_SIZE, listing["total"], len(runs), listing.get("next_cursor"))


def tool_journeys(f: dict[str, Any], chosen: list[str], after: str | None, key: str) -> None:
    """/runs has no tool filter: with a tool chosen, list that tool's journeys instead."""
    verdicts = chosen or f["verdict"]
    listing = fetch(
        "reports",
        limit=PAGE_SIZE,
        after=after,
        tool=f["tool"],
        agent=f["agent"],
        layer=f["layer"],
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
                "step": count(r["step"]),
                "loss": loss_note(r),
                "lost items": r["lost_items"],
                "lost tokens": r["lost_tokens"],
                "tool call": r["tool_call_id"],
                "journey": run_link(r["trace_id"], link_step(r), r["tool_call_id"]),
                "run (trace id)": run_link(r["trace_id"]),
            }
            for r in reports
        ]
    )
    st.dataframe(
        styled(data, "verdict"),
        hide_index=True,
        width="stretch",
        column_config={
            **loss_columns(),
            # Not the call id out of the link: the link holds it raw, the table shows it visible.
            "journey": st.column_config.LinkColumn(display_text="open →"),
            "run (trace id)": st.column_config.LinkColumn(
                display_text=r"trace_id=([0-9a-f]+)", width=TRACE_ID_WIDTH
            ),
        },
    )
    next_cursor = listing.get("next_cursor")
    cursor_page_controls(key, PAGE_SIZE, listing["total"], len(reports), next_cursor)


def tool_link(name: str, range_code: str) -> str:
    return "/tool?" + urlencode({"tool": name, "range": range_code})


def agent_link(name: str, range_code: str) -> str:
    # Incidents is the app's default page: Streamlit serves it at the root URL.
    return "/?" + urlencode({"agent": name, "range": range_code})


def loss_note(report: dict[str, Any]) -> str:
    """Whether a losing journey is where its result was first lost, or the same loss again."""
    if report.get("first_lost"):
        return "first lost here"
    if report.get("still_missing"):
        step = report.get("first_lost_step")
        where = f"at step {step}" if step is not None else "earlier"
        return f"first lost {where}, still missing"
    return ""


def link_step(report: dict[str, Any]) -> int | None:
    """The step a journey's link opens: where its result was first lost, if it was."""
    if report.get("still_missing") and report.get("first_lost_step") is not None:
        step: int = report["first_lost_step"]
        return step
    found: int | None = report["step"]
    return found


def ranking(rows: list[dict[str, Any]], label: str, link: Any, range_code: str) -> None:
    if not rows:
        st.caption("Nothing in this window.")
        return
    chart = charts.loss_ranking(rows, label)
    if chart is not None:
        if len(rows) > charts.RANKING_TOP:
            st.caption(
                f"The chart shows the {charts.RANKING_TOP:,} of {plural(len(rows), label)} that "
                "lose most; the table below lists them all."
            )
        st.altair_chart(chart, width="stretch")
    data = pd.DataFrame(
        [
            {
                label: row["name"] or "?",
                "lost results": row["lost_results"],
                "losing journeys": row["losing"],
                "journeys": row["journeys"],
                "lost items": row["result_lost_items"],
                "lost tokens": row["result_lost_tokens"],
                "open": link(row["name"], range_code) if row["name"] else "",
            }
            for row in rows
        ]
    )
    numbers = ["lost results", "losing journeys", "journeys", "lost items", "lost tokens"]
    st.dataframe(
        visible_frame(data),
        hide_index=True,
        width="stretch",
        height=38 + 35 * len(data) if len(data) <= 15 else 560,
        column_order=[label, "open", *numbers],
        column_config={
            **{name: st.column_config.NumberColumn(format="localized") for name in numbers},
            "lost results": st.column_config.NumberColumn(
                format="localized",
                help=f"tool results lost ({', '.join(LOSING_VERDICTS)}), each counted once",
            ),
            "losing journeys": st.column_config.NumberColumn(
                format="localized", help="silent + dropped + orphaned journeys"
            ),
            "lost items": st.column_config.NumberColumn(
                format="localized", help="what the lost results lost, each counted once"
            ),
            "lost tokens": st.column_config.NumberColumn(
                format="localized", help="what the lost results lost, each counted once"
            ),
            "open": st.column_config.LinkColumn(
                "",
                display_text="open →" if label == "tool" else "filter →",
                help="the tool's page" if label == "tool" else "these incidents, for this agent",
            ),
        },
    )
