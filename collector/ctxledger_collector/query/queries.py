"""Reading: reports and one run's steps, as the query API returns them (the runs list is
:mod:`run_listing`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.orm import Session

from ctxledger.verdicts import worst
from ctxledger_collector.query import pagination
from ctxledger_collector.query.journey_aggregates import SUMS, tally
from ctxledger_collector.query.pagination import Page
from ctxledger_collector.query.report_documents import links, report_documents
from ctxledger_collector.query.report_filters import (
    ReportFilter,
    filtered,
    report_columns,
    with_runs,
)
from ctxledger_collector.query.run_listing import run_json
from ctxledger_collector.query.time_slices import Slice
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.stored_records import listed
from ctxledger_collector.storage.string_lists import StoredLists, read_lists
from ctxledger_collector.storage.tables import MANIFESTS, REPORTS, RUNS

__all__ = ["Page", "ReportFilter", "documents", "list_reports", "run_detail"]

#: Most recent first, ties by row id: both descending, so one time index walks it (each
#: ends with the id).
RECENT: tuple[ColumnElement[Any], ...] = (REPORTS.c.last_observed_at, REPORTS.c.id)
#: One run in pipeline order: reports without a step first, then by step and request.
PIPELINE: tuple[ColumnElement[Any], ...] = (
    REPORTS.c.step.is_not(None),
    func.coalesce(REPORTS.c.step, 0),
    REPORTS.c.request_key,
    REPORTS.c.tool_call_id,
)


def documents(
    session: Session, query: Select[Any], dashboard_url: str | None
) -> list[dict[str, Any]]:
    """The reports ``query`` (of :func:`report_columns`) selects, as the API shows them."""
    rows = [dict(row) for row in session.execute(query).mappings()]
    trace_ids = {row["run_id"]: row["trace_id"] for row in rows}
    return report_documents(session.connection(), rows, trace_ids, dashboard_url)


def count_reports(session: Session, f: ReportFilter) -> int:
    """How many reports ``f`` matches: from the journey counters, unless it names a run
    or a call (which the counters do not know; the key index answers those). The
    counters keep the first losses apart (``lost_results``), so ``f.first_lost`` is
    answered from them too."""
    if f.trace_id or f.tool_call_id:
        return session.scalar(filtered(with_runs(select(func.count())), f)) or 0
    whole = [Slice(0.0, f.since, f.until)]
    sums = tally(session, replace(f, first_lost=None), whole).values()
    journeys = sum(s[SUMS.index("journeys")] for s in sums)
    first_losses = sum(s[SUMS.index("lost_results")] for s in sums)
    if f.first_lost is None:
        return journeys
    return first_losses if f.first_lost else journeys - first_losses


def _cursor_of(report: dict[str, Any], row: dict[str, Any], pipeline: bool) -> str:
    if pipeline:
        step = report["step"]
        key = (step is not None, step or 0, report["request_id"] or "", report["tool_call_id"])
        return pagination.encode("pipeline", key)
    return pagination.encode("recent", (report["last_observed_at"], row["id"]))


def list_reports(
    session: Session, f: ReportFilter, page: Page, dashboard_url: str | None
) -> dict[str, Any]:
    """Reports ``f`` matches: one run in pipeline order, otherwise most recent first;
    from ``page.after`` when given, else from ``page.offset``."""
    total = count_reports(session, f)
    pipeline = bool(f.trace_id)
    order = PIPELINE if pipeline else RECENT
    query = filtered(with_runs(select(*report_columns())), f)
    query = query.order_by(*(order if pipeline else (c.desc() for c in order)))
    if page.after is not None:
        ordering = "pipeline" if pipeline else "recent"
        bound = pagination.decode(ordering, page.after)
        query = query.where(pagination.after(order, bound, descending=not pipeline))
    else:
        query = query.offset(page.offset)
    rows = [dict(row) for row in session.execute(query.limit(page.limit + 1)).mappings()]
    shown = rows[: page.limit]
    trace_ids = {row["run_id"]: row["trace_id"] for row in shown}
    reports = report_documents(session.connection(), shown, trace_ids, dashboard_url)
    more = len(rows) > page.limit
    next_offset = page.offset + len(reports)
    return {
        "reports": reports,
        "total": total,
        "next_offset": next_offset if page.after is None and next_offset < total else None,
        "next_cursor": _cursor_of(reports[-1], shown[-1], pipeline) if more else None,
    }


def _manifest_json(row: Any, lists: StoredLists) -> dict[str, Any]:
    tool_call_ids = list(listed(row.tool_call_ids_ref, lists) or ())
    found = listed(row.tool_calls_ref, lists)
    tool_calls = None if found is None else list(found)
    calls, results = set(tool_calls or ()), set(tool_call_ids)
    window_used = (
        round(row.tokens / row.context_window, 4) if row.tokens and row.context_window else None
    )
    return {
        "request_id": row.request_id,
        "step": row.step,
        "model": row.model,
        "tokens": row.tokens,
        "tokenizer": row.tokenizer,
        "context_window": row.context_window,
        "window_used": window_used,
        "tool_call_ids": tool_call_ids,
        "tool_calls": tool_calls,
        "calls_without_result": sorted(calls - results),
        "results_without_call": sorted(results - calls) if tool_calls is not None else [],
        "sdk_dropped_spans": row.sdk_dropped_spans,
        "observed_at": row.observed_us / 1_000_000,
        "source": row.source,
        "conversation": row.conversation or None,
        "telemetry_cut": row.telemetry_cut,
        "compaction": row.compaction,
    }


def run_detail(session: Session, trace_id: str, dashboard_url: str | None) -> dict[str, Any] | None:
    """One run's steps in order, each with its requests, manifests and journeys."""
    run = session.execute(select(RUNS).where(RUNS.c.trace_id == trace_id)).first()
    if run is None:
        return None
    reports = documents(
        session,
        with_runs(select(*report_columns()))
        .where(REPORTS.c.run_id == run.id)
        .order_by(REPORTS.c.step, REPORTS.c.tool_call_id),
        dashboard_url,
    )
    manifests = session.execute(select(MANIFESTS).where(MANIFESTS.c.run_id == run.id)).all()
    refs = {bytes(r) for m in manifests for r in (m.tool_call_ids_ref, m.tool_calls_ref) if r}
    connection = session.connection()
    lists = read_lists(connection, Statements(connection.dialect.name), refs)
    steps: dict[int | None, dict[str, dict[str, Any]]] = defaultdict(dict)
    for manifest in manifests:
        steps[manifest.step][manifest.request_id] = {
            "request_id": manifest.request_id,
            "manifest": _manifest_json(manifest, lists),
            "journeys": [],
        }
    for report in reports:
        requests = steps[report["step"]]
        request = requests.setdefault(
            report["request_id"] or "",
            {"request_id": report["request_id"], "manifest": None, "journeys": []},
        )
        request["journeys"].append(report)
    counts: dict[str, int] = defaultdict(int)
    sources: set[str] = set()
    for report in reports:
        counts[report["verdict"]] += 1
        sources.update(report["source"].split("+"))
    ordered = sorted(steps.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
    return {
        **run_json(
            run,
            dict(counts),
            dashboard_url,
            sorted(sources),
            sum(1 for report in reports if report["first_lost"]),
        ),
        "steps": [
            {
                "step": step,
                "verdict": worst(j["verdict"] for r in requests.values() for j in r["journeys"]),
                "requests": sorted(requests.values(), key=lambda r: r["request_id"] or ""),
                "links": links(dashboard_url, trace_id, step),
            }
            for step, requests in ordered
        ],
    }
