"""The Incidents page's tables: worst runs, a tool's journeys, and the rankings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from ctxledger.verdicts import VERDICT_MEANINGS
from ctxledger_dashboard import charts
from ctxledger_dashboard.markdown_text import code
from ctxledger_dashboard.page_kit import (
    cursor_page,
    fetch,
    run_link,
    to_first_page,
    to_newer_page,
    to_older_page,
)
from ctxledger_dashboard.verdict_style import (
    COLORS,
    badge,
    ordered,
)

PAGE_SIZE = 20
ANY = "any"


def duration(seconds: float) -> str:
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n > 1 else ''}"
    return f"{seconds:g} s"


def _pager(
    key: str,
    page: int,
    total: int,
    shown: int,
    newer: Callable[[], None],
    older: Callable[[], None] | None,
) -> None:
    first = page * PAGE_SIZE
    columns = st.columns([1, 1, 6], vertical_alignment="center")
    columns[0].button(
        "← newer", key=f"{key}:prev", disabled=page == 0, on_click=newer, width="stretch"
    )
    columns[1].button(
        "older →", key=f"{key}:next", disabled=older is None, on_click=older, width="stretch"
    )
    if total:
        columns[2].caption(f"{first + 1}–{first + shown} of {total:,}, newest first")


def page_controls(key: str, total: int, shown: int, next_offset: int | None) -> None:
    """Newer and older buttons for a list paged by offset (page number under ``key``)."""
    page = st.session_state[key]

    def go(to: int) -> Callable[[], None]:
        return lambda: st.session_state.update({key: to})

    _pager(key, page, total, shown, go(page - 1), go(page + 1) if next_offset is not None else None)


def cursor_page_controls(key: str, total: int, shown: int, next_cursor: str | None) -> None:
    """Newer and older buttons for a list paged by cursor (the cursors under ``key``)."""
    page, _ = cursor_page(key)
    older = (lambda: to_older_page(key, next_cursor)) if next_cursor is not None else None
    _pager(key, page, total, shown, lambda: to_newer_page(key), older)


def verdict_style(value: Any) -> str:
    color = COLORS.get(str(value))
    return f"color: {color}; font-weight: 600" if color else ""


def styled(data: pd.DataFrame, column: str) -> Any:
    return data.style.map(verdict_style, subset=[column])


def runs(f: dict[str, Any], totals: dict[str, int]) -> None:
    st.subheader("Worst recent runs" if not f["tool"] else f"Recent journeys of {code(f['tool'])}")
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
        st.caption(f"{badge(verdict)} {VERDICT_MEANINGS.get(verdict, '')}")
    key = "runs_page:" + repr((f["range"], f["agent"], f["tool"], tuple(f["verdict"]), verdict))
    _, after = cursor_page(key)
    if f["tool"]:
        tool_journeys(f, verdict, after, key)
        return
    listing = fetch(
        "runs",
        limit=PAGE_SIZE,
        after=after,
        agent=f["agent"],
        verdict=verdict,
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
                "journeys": run["journeys"],
                "verdicts": " · ".join(f"{v} {n}" for v, n in ordered(run["verdicts"])),
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
            "verdicts": st.column_config.TextColumn(width="medium"),
            "run": st.column_config.LinkColumn(
                "run (trace id)", display_text=r"trace_id=([0-9a-f]+)", width="medium"
            ),
        },
    )
    cursor_page_controls(key, listing["total"], len(runs), listing.get("next_cursor"))


def tool_journeys(f: dict[str, Any], verdict: str | None, after: str | None, key: str) -> None:
    """/runs has no tool filter: with a tool chosen, list that tool's journeys instead."""
    verdicts = [verdict] if verdict else f["verdict"]
    listing = fetch(
        "reports",
        limit=PAGE_SIZE,
        after=after,
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
        styled(data, "verdict"),
        hide_index=True,
        width="stretch",
        column_config={
            "seen": st.column_config.DatetimeColumn(format="distance"),
            "journey": st.column_config.LinkColumn(display_text=r"tool_call_id=(.+)$"),
            "run (trace id)": st.column_config.LinkColumn(display_text=r"trace_id=([0-9a-f]+)"),
        },
    )
    cursor_page_controls(key, listing["total"], len(reports), listing.get("next_cursor"))


def tool_link(name: str, range_code: str) -> str:
    return "/tool?" + urlencode({"tool": name, "range": range_code})


def agent_link(name: str, range_code: str) -> str:
    # Incidents is the app's default page: Streamlit serves it at the root URL.
    return "/?" + urlencode({"agent": name, "range": range_code})


def ranking(rows: list[dict[str, Any]], label: str, link: Any, range_code: str) -> None:
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
