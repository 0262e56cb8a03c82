"""Aggregates for the dashboard: verdicts over time, who loses most, where a tool loses."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from sqlalchemy import ColumnElement, Integer, cast, func, select
from sqlalchemy.orm import Session

from ctxledger import semconv as sc
from ctxledger.verdicts import LOSING_VERDICTS
from ctxledger_collector.queries import (
    ReportFilter,
    documents,
    filtered,
    report_columns,
    with_runs,
)
from ctxledger_collector.stored_records import loads
from ctxledger_collector.tables import REPORTS

_TOOL_SAMPLE = 10_000


def _bucket_start(width: float, dialect: str) -> ColumnElement[Any]:
    scaled = REPORTS.c.last_observed_at / width
    floored = func.floor(scaled) if dialect == "postgresql" else cast(scaled, Integer)
    return floored * width


def timeline(session: Session, f: ReportFilter, buckets: int) -> dict[str, Any]:
    """Journeys by verdict in ``buckets`` equal time slices of [since, until)."""
    since, until = f.since, f.until
    if since is None or until is None:
        bounds = session.execute(
            filtered(
                with_runs(
                    select(
                        func.min(REPORTS.c.last_observed_at), func.max(REPORTS.c.last_observed_at)
                    )
                ),
                f,
            )
        ).one()
        since = since if since is not None else bounds[0]
        until = until if until is not None else (bounds[1] + 1 if bounds[1] is not None else None)
    if since is None or until is None or until <= since:
        return {"bucket_seconds": None, "since": since, "until": until, "points": []}
    width = max(1.0, math.ceil((until - since) / buckets))
    dialect = session.get_bind().dialect.name
    start = _bucket_start(width, dialect).label("start")
    query = filtered(
        with_runs(select(start, REPORTS.c.verdict, func.count())).group_by(
            start, REPORTS.c.verdict
        ),
        ReportFilter(**{**vars(f), "since": since, "until": until}),
    )
    points = [
        {"start": float(bucket), "verdict": verdict, "journeys": count}
        for bucket, verdict, count in session.execute(query)
    ]
    points.sort(key=lambda p: (p["start"], p["verdict"]))
    return {"bucket_seconds": width, "since": since, "until": until, "points": points}


def breakdown(session: Session, f: ReportFilter, by: str, limit: int) -> dict[str, Any]:
    """Per tool (or agent): journeys by verdict and what was lost, worst first."""
    column = REPORTS.c.tool_name if by == "tool" else REPORTS.c.agent_name
    query = filtered(
        with_runs(
            select(
                column,
                REPORTS.c.verdict,
                func.count(),
                func.sum(REPORTS.c.lost_items),
                func.sum(REPORTS.c.lost_tokens),
            )
        ).group_by(column, REPORTS.c.verdict),
        f,
    )
    rows: dict[str | None, dict[str, Any]] = {}
    for name, verdict, count, lost_items, lost_tokens in session.execute(query):
        row = rows.setdefault(
            name,
            {
                "name": name,
                "journeys": 0,
                "verdicts": {},
                "losing": 0,
                "lost_items": 0,
                "lost_tokens": 0,
            },
        )
        row["journeys"] += count
        row["verdicts"][verdict] = count
        row["lost_items"] += int(lost_items or 0)
        row["lost_tokens"] += int(lost_tokens or 0)
        if verdict in LOSING_VERDICTS:
            row["losing"] += count
    ordered = sorted(
        rows.values(),
        key=lambda r: (-r["losing"], -r["lost_items"], -r["lost_tokens"], str(r["name"])),
    )
    return {"by": by, "rows": ordered[:limit]}


def tool_profile(
    session: Session, tool: str, f: ReportFilter, dashboard_url: str | None, recent: int
) -> dict[str, Any] | None:
    """One tool across runs: how often and how much it loses, and at which stage."""
    scoped = ReportFilter(**{**vars(f), "tool": tool})
    rows = session.execute(
        filtered(
            with_runs(
                select(
                    REPORTS.c.verdict,
                    REPORTS.c.agent_name,
                    REPORTS.c.lost_items,
                    REPORTS.c.lost_tokens,
                    REPORTS.c.transitions,
                )
            ),
            scoped,
        )
        .order_by(REPORTS.c.last_observed_at.desc())
        .limit(_TOOL_SAMPLE)
    ).all()
    if not rows:
        return None
    verdicts: dict[str, int] = defaultdict(int)
    agents: dict[str, int] = defaultdict(int)
    by_stage: dict[str, dict[str, Any]] = {}
    for row in rows:
        verdicts[row.verdict] += 1
        agents[row.agent_name or "?"] += 1
        for transition in loads(row.transitions) or []:
            if transition["verdict"] == sc.VERDICT_INTACT:
                continue
            stage = by_stage.setdefault(
                transition["to_stage"],
                {
                    "stage": transition["to_stage"],
                    "from_stage": transition["from_stage"],
                    "losses": 0,
                    "verdicts": defaultdict(int),
                    "lost_items": 0,
                    "lost_tokens": 0,
                },
            )
            stage["losses"] += 1
            stage["verdicts"][transition["verdict"]] += 1
            stage["lost_items"] += transition["lost_items"]
            stage["lost_tokens"] += transition["lost_tokens"]
        if row.verdict in (sc.VERDICT_DROPPED, sc.VERDICT_ORPHANED):
            stage = by_stage.setdefault(
                "request",
                {
                    "stage": "request",
                    "from_stage": None,
                    "losses": 0,
                    "verdicts": defaultdict(int),
                    "lost_items": 0,
                    "lost_tokens": 0,
                },
            )
            stage["losses"] += 1
            stage["verdicts"][row.verdict] += 1
            stage["lost_items"] += row.lost_items
            stage["lost_tokens"] += row.lost_tokens
    lossy = documents(
        session,
        filtered(with_runs(select(*report_columns())), scoped)
        .where(REPORTS.c.verdict != sc.VERDICT_INTACT)
        .order_by(REPORTS.c.last_observed_at.desc())
        .limit(recent),
        dashboard_url,
    )
    return {
        "tool": tool,
        "journeys": len(rows),
        "sampled": len(rows) == _TOOL_SAMPLE,
        "verdicts": dict(verdicts),
        "losing": sum(verdicts[v] for v in LOSING_VERDICTS),
        "lost_items": sum(r.lost_items for r in rows),
        "lost_tokens": sum(r.lost_tokens for r in rows),
        "agents": dict(agents),
        "by_stage": [
            {**stage, "verdicts": dict(stage["verdicts"])}
            for stage in sorted(by_stage.values(), key=lambda s: -s["losses"])
        ],
        "recent_losses": lossy,
    }
