"""Altair charts. Every verdict keeps its colour on every chart.

Names (tools, agents, stages) go onto the charts ``visible``: axes, labels and tooltips
show invisible and reordering characters as escapes.

Altair ships no type information, so the charts are typed ``Any`` (an ``alt.Chart``)."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from ctxledger.verdicts import VERDICT_SEVERITY
from ctxledger_dashboard.verdict_style import COLORS
from ctxledger_dashboard.visible_text import visible, visible_frame

_VERDICT_SCALE = alt.Scale(domain=list(COLORS), range=list(COLORS.values()))
_KEPT = "#90a4ae"


#: The funnel's last bar for a result that vanished from its request (dropped, orphaned).
VANISHED = "request (missing)"


def stage_funnel(
    stages: list[dict[str, Any]], verdict: str, measure: str, vanished: bool = False
) -> Any:
    """One journey's stages as bars: what is left at each stage, and (in the verdict's
    colour) what is missing compared with the first stage. A result that ``vanished``
    from its request ends with a bar of nothing left: all of it lost."""
    values: list[tuple[str, int]] = [
        (s["stage"], int(s[measure])) for s in stages if s.get(measure) is not None
    ]
    if not values:
        return None
    if vanished:
        values.append((VANISHED, 0))
    first = values[0][1]
    rows = []
    for order, (stage, value) in enumerate(values):
        rows.append({"stage": stage, "order": order, "part": "present", "value": value})
        if value < first:
            rows.append({"stage": stage, "order": order, "part": "lost", "value": first - value})
    data = visible_frame(pd.DataFrame(rows))
    color = alt.Color(
        "part:N",
        scale=alt.Scale(domain=["present", "lost"], range=[_KEPT, COLORS.get(verdict, "#c62828")]),
        legend=None,
    )
    return (
        alt.Chart(data, title=measure)
        .mark_bar()
        .encode(
            y=alt.Y("stage:N", sort=alt.SortField("order"), title=None),
            x=alt.X("sum(value):Q", title=measure),
            color=color,
            order=alt.Order("part:N", sort="descending"),
            tooltip=["stage", "part", "value"],
        )
        .properties(height=alt.Step(24))
    )


def verdict_timeline(points: list[dict[str, Any]], bucket_seconds: float | None) -> Any:
    data = pd.DataFrame(points)
    data["time"] = pd.to_datetime(data["start"], unit="s", utc=True)
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("time:T", title=None),
            y=alt.Y("sum(journeys):Q", title="journeys"),
            color=alt.Color("verdict:N", scale=_VERDICT_SCALE),
            tooltip=["time:T", "verdict", "journeys"],
        )
        .properties(height=220)
    )


def verdict_bars(rows: list[dict[str, Any]], label: str) -> Any:
    """Per name (tool, agent, stage): journeys by verdict, stacked."""
    data = visible_frame(
        pd.DataFrame(
            [
                {label: row["name"] or "?", "verdict": verdict, "journeys": count}
                for row in rows
                for verdict, count in row["verdicts"].items()
            ]
        )
    )
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y(f"{label}:N", sort="-x", title=None),
            x=alt.X("sum(journeys):Q", title="journeys"),
            color=alt.Color("verdict:N", scale=_VERDICT_SCALE),
            tooltip=[label, "verdict", "journeys"],
        )
        .properties(height=max(80, 26 * len(rows)))
    )


def _severity(verdict: str) -> int:
    return VERDICT_SEVERITY.get(verdict, 0)


def _present_scale(verdicts: set[str]) -> alt.Scale:
    """The verdict colours, limited to the verdicts on this chart (a short legend)."""
    domain = sorted(verdicts, key=_severity, reverse=True)
    return alt.Scale(domain=domain, range=[COLORS.get(v, _KEPT) for v in domain])


def _bottom_legend() -> alt.Legend:
    return alt.Legend(orient="bottom", title=None, columns=4)


def _count_axis(field: str, title: str = "journeys") -> alt.X:
    """A whole-number axis of journey counts."""
    return alt.X(f"sum({field}):Q", title=title, axis=alt.Axis(tickMinStep=1, format="d"))


#: How many names the ranking chart shows (its table lists all of them).
RANKING_TOP = 10


def loss_ranking(rows: list[dict[str, Any]], label: str, top: int = RANKING_TOP) -> Any:
    """Breakdown rows (tool or agent) in the order given (the collector's: most losing
    first), journeys stacked by verdict with the worst verdict next to the axis."""
    rows = rows[:top]
    names = [visible(row["name"] or "?") for row in rows]
    data = visible_frame(
        pd.DataFrame(
            [
                {
                    label: row["name"] or "?",
                    "verdict": verdict,
                    "journeys": count,
                    "severity": _severity(verdict),
                    "losing": row["losing"],
                    "lost results": row["lost_results"],
                    "lost items": row["result_lost_items"],
                }
                for row in rows
                for verdict, count in row["verdicts"].items()
            ]
        )
    )
    if data.empty:
        return None
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y(f"{label}:N", sort=names, title=None, axis=alt.Axis(labelLimit=180)),
            x=_count_axis("journeys"),
            color=alt.Color(
                "verdict:N", scale=_present_scale(set(data["verdict"])), legend=_bottom_legend()
            ),
            order=alt.Order("severity:Q", sort="descending"),
            tooltip=[label, "verdict", "journeys", "losing", "lost results", "lost items"],
        )
        .properties(height=alt.Step(26))
    )


def verdict_distribution(verdicts: dict[str, int]) -> Any:
    """Journeys per verdict, worst first, one bar each in its colour."""
    data = pd.DataFrame(
        [{"verdict": verdict, "journeys": count} for verdict, count in verdicts.items() if count]
    )
    if data.empty:
        return None
    order = sorted(data["verdict"], key=_severity, reverse=True)
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("verdict:N", sort=order, title=None),
            x=_count_axis("journeys"),
            color=alt.Color("verdict:N", scale=_present_scale(set(order)), legend=None),
            tooltip=["verdict", "journeys"],
        )
        .properties(height=alt.Step(26))
    )


def stage_losses(by_stage: list[dict[str, Any]], layers: dict[str, str]) -> Any:
    """Where a tool loses: one bar per stage transition, stacked by verdict, counting each
    lost result once where it was first lost (the collector's ``by_stage``); the tooltip
    names the layer to fix."""
    rows = []
    for stage in by_stage:
        where = (
            f"{stage['from_stage']} → {stage['stage']}" if stage.get("from_stage") else "request"
        )
        for verdict, count in stage["verdicts"].items():
            rows.append(
                {
                    "where": where,
                    "verdict": verdict,
                    "losses": count,
                    "severity": _severity(verdict),
                    "layer to fix": layers.get(stage["stage"], f"the code behind {stage['stage']}"),
                }
            )
    if not rows:
        return None
    data = visible_frame(pd.DataFrame(rows))
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("where:N", sort="-x", title=None, axis=alt.Axis(labelLimit=220)),
            x=_count_axis("losses", "results lost here (each once)"),
            color=alt.Color(
                "verdict:N", scale=_present_scale(set(data["verdict"])), legend=_bottom_legend()
            ),
            order=alt.Order("severity:Q", sort="descending"),
            tooltip=["where", "layer to fix", "verdict", "losses"],
        )
        .properties(height=alt.Step(30))
    )
