"""Aggregates for the dashboard: verdicts over time, who loses most, where a tool loses.

Counts and losses come from the journey counters (:mod:`journey_aggregates`), exact and
in time proportional to the buckets read, not to the journeys; a tool's losses by stage
come from its reports that are not intact (the partial index ``ix_reports_losses``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import literal_column, select
from sqlalchemy.orm import Session

from ctxledger import semconv as sc
from ctxledger.verdicts import LOSING_VERDICTS
from ctxledger_collector.query.journey_aggregates import minute_bounds, tally
from ctxledger_collector.query.queries import documents
from ctxledger_collector.query.report_filters import (
    ReportFilter,
    filtered,
    report_columns,
    with_runs,
)
from ctxledger_collector.query.time_slices import Slice, timeline_slices
from ctxledger_collector.storage.journey_counts import GRAINS
from ctxledger_collector.storage.stored_records import loads
from ctxledger_collector.storage.tables import REPORTS

#: What lost results sum (each result once, at its first lost journey; losing verdicts only).
RESULT_SUMS = ("lost_results", "result_lost_items", "result_lost_tokens")
#: Journeys and lost results whose lost tokens are unknown (the tally's last two sums).
UNKNOWN_SUMS = ("tokens_unknown", "result_tokens_unknown")
#: A tool's losses by stage are read from at most this many of its latest losses.
LOSS_SAMPLE = 10_000
#: Not intact, written as the partial index ``ix_reports_losses`` is (so it serves).
_NOT_INTACT = REPORTS.c.verdict != literal_column(f"'{sc.VERDICT_INTACT}'")


def _whole_grains(width: int) -> int:
    """``width`` rounded up to whole minutes, hours or days (whichever it reaches)."""
    grain = max((g for g in GRAINS if g <= width), default=GRAINS[0])
    return math.ceil(width / grain) * grain


def timeline(session: Session, f: ReportFilter, buckets: int) -> dict[str, Any]:
    """Journeys by verdict in ``buckets`` equal time slices of [since, until).

    With since and until given, the slices are ``ceil((until - since) / buckets)``
    seconds wide. Where one is left out, the range ends at the minute of the first or
    last journey and the width is rounded up to whole minutes, hours or days, so the
    counters answer whole (there may be fewer slices than asked)."""
    since, until = f.since, f.until
    explicit = since is not None and until is not None
    if not explicit:
        bounds = minute_bounds(session, f)
        if bounds is None:
            return {"bucket_seconds": None, "since": since, "until": until, "points": []}
        since = float(bounds[0]) if since is None else since
        until = float(bounds[1]) if until is None else until
    if since is None or until is None or until <= since:
        return {"bucket_seconds": None, "since": since, "until": until, "points": []}
    width = max(1, math.ceil((until - since) / buckets))
    if not explicit:
        width = _whole_grains(width)
    totals = tally(session, f, timeline_slices(since, until, width), ("verdict",), width)
    points = [
        {"start": float(start), "verdict": verdict, "journeys": sums[0], "lost_results": sums[3]}
        for (start, verdict), sums in totals.items()
    ]
    points.sort(key=lambda p: (p["start"], p["verdict"]))
    return {"bucket_seconds": width, "since": since, "until": until, "points": points}


def _whole_range(f: ReportFilter) -> list[Slice]:
    return [Slice(0.0, f.since, f.until)]


def breakdown(session: Session, f: ReportFilter, by: str, limit: int) -> dict[str, Any]:
    """Per tool (or agent): journeys by verdict and what was lost, worst first."""
    column = "tool_name" if by == "tool" else "agent_name"
    rows: dict[str | None, dict[str, Any]] = {}
    for (_, name, verdict), sums in tally(session, f, _whole_range(f), (column, "verdict")).items():
        row = rows.setdefault(
            name,
            {
                "name": name,
                "journeys": 0,
                "verdicts": {},
                "losing": 0,
                "lost_items": 0,
                "lost_tokens": 0,
                **dict.fromkeys((*RESULT_SUMS, *UNKNOWN_SUMS), 0),
            },
        )
        row["journeys"] += sums[0]
        row["verdicts"][verdict] = sums[0]
        row["lost_items"] += sums[1]
        row["lost_tokens"] += sums[2]
        for name_of_sum, value in zip((*RESULT_SUMS, *UNKNOWN_SUMS), sums[3:], strict=True):
            row[name_of_sum] += value
        if verdict in LOSING_VERDICTS:
            row["losing"] += sums[0]
    ordered = sorted(
        rows.values(),
        key=lambda r: (
            -r["lost_results"],
            -r["result_lost_items"],
            -r["losing"],
            -r["lost_tokens"],
            str(r["name"]),
        ),
    )
    return {"by": by, "rows": ordered[:limit]}


def _new_stage(stage: str, from_stage: str | None) -> dict[str, Any]:
    return {
        "stage": stage,
        "from_stage": from_stage,
        "losses": 0,
        "verdicts": defaultdict(int),
        "lost_items": 0,
        "lost_tokens": 0,
    }


def _losses_by_stage(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Where the journeys lost, each lost result once: a losing journey whose result was
    first lost earlier (still missing) is the same loss again and is left out."""
    by_stage: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.verdict in LOSING_VERDICTS and not row.first_lost:
            continue
        for transition in loads(row.transitions) or []:
            if transition["verdict"] in (sc.VERDICT_INTACT, sc.VERDICT_UNAUDITABLE):
                continue  # not a loss (unauditable: the telemetry's own cut)
            stage = by_stage.setdefault(
                transition["to_stage"],
                _new_stage(transition["to_stage"], transition["from_stage"]),
            )
            stage["losses"] += 1
            stage["verdicts"][transition["verdict"]] += 1
            stage["lost_items"] += transition["lost_items"]
            stage["lost_tokens"] += transition["lost_tokens"]
        if row.verdict in (sc.VERDICT_DROPPED, sc.VERDICT_ORPHANED):
            stage = by_stage.setdefault("request", _new_stage("request", None))
            stage["losses"] += 1
            stage["verdicts"][row.verdict] += 1
            stage["lost_items"] += row.lost_items
            stage["lost_tokens"] += row.lost_tokens
    return [
        {**stage, "verdicts": dict(stage["verdicts"])}
        for stage in sorted(by_stage.values(), key=lambda s: -s["losses"])
    ]


def _lossy(query: Any, scoped: ReportFilter, join_runs: bool) -> Any:
    """The journeys of ``query`` that ``scoped`` matches and are not intact, newest first."""
    if join_runs:
        query = with_runs(query)
    return filtered(query, scoped).where(_NOT_INTACT).order_by(REPORTS.c.last_observed_at.desc())


def tool_profile(
    session: Session, tool: str, f: ReportFilter, dashboard_url: str | None, recent: int
) -> dict[str, Any] | None:
    """One tool across runs: how often and how much it loses, and at which stage."""
    scoped = ReportFilter(**{**vars(f), "tool": tool})
    totals = tally(session, scoped, _whole_range(scoped), ("agent_name", "verdict"))
    if not totals:
        return None
    verdicts: dict[str, int] = defaultdict(int)
    agents: dict[str, int] = defaultdict(int)
    for (_, agent, verdict), sums in totals.items():
        verdicts[verdict] += sums[0]
        agents[agent or "?"] += sums[0]
    columns = (
        REPORTS.c.verdict,
        REPORTS.c.lost_items,
        REPORTS.c.lost_tokens,
        REPORTS.c.transitions,
        REPORTS.c.first_lost,
    )
    sample = _lossy(select(*columns).select_from(REPORTS), scoped, join_runs=bool(scoped.agent))
    losses = session.execute(sample.limit(LOSS_SAMPLE + 1)).all()
    latest = _lossy(select(*report_columns()), scoped, join_runs=True).limit(recent)
    recent_losses = documents(session, latest, dashboard_url) if recent else []
    return {
        "tool": tool,
        "journeys": sum(verdicts.values()),
        "sampled": len(losses) > LOSS_SAMPLE,
        "verdicts": dict(verdicts),
        "losing": sum(verdicts[v] for v in LOSING_VERDICTS),
        "lost_items": sum(sums[1] for sums in totals.values()),
        "lost_tokens": sum(sums[2] for sums in totals.values()),
        **{
            name: sum(sums[3 + i] for sums in totals.values())
            for i, name in enumerate((*RESULT_SUMS, *UNKNOWN_SUMS))
        },
        "agents": dict(agents),
        "by_stage": _losses_by_stage(losses[:LOSS_SAMPLE]),
        "recent_losses": recent_losses,
    }
