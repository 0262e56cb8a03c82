"""Reading: reports, runs and one run's steps, as the query API returns them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.orm import Session

from ctxledger.verdicts import worst
from ctxledger_collector.report_documents import REPORT_FIELDS, links, report_documents
from ctxledger_collector.statements import Statements
from ctxledger_collector.stored_records import listed
from ctxledger_collector.string_lists import StoredLists, read_lists
from ctxledger_collector.tables import MANIFESTS, REPORTS, RUNS


@dataclass(frozen=True)
class ReportFilter:
    trace_id: str | None = None
    verdicts: tuple[str, ...] = ()
    agent: str | None = None
    tool: str | None = None
    tool_call_id: str | None = None
    since: float | None = None
    until: float | None = None


@dataclass(frozen=True)
class Page:
    limit: int = 100
    offset: int = 0


def report_columns() -> list[ColumnElement[Any]]:
    return [*(REPORTS.c[name] for name in REPORT_FIELDS), RUNS.c.trace_id]


def with_runs(query: Select[Any]) -> Select[Any]:
    return query.join_from(REPORTS, RUNS, RUNS.c.id == REPORTS.c.run_id)


def filtered(query: Select[Any], f: ReportFilter) -> Select[Any]:
    """``query`` (over reports joined with runs) narrowed by ``f``."""
    if f.trace_id:
        query = query.where(RUNS.c.trace_id == f.trace_id)
    if f.verdicts:
        query = query.where(REPORTS.c.verdict.in_(f.verdicts))
    if f.agent:
        # The contract names the agent by gen_ai.agent.name, else service.name: match
        # either, as /api/v1/runs does.
        query = query.where((REPORTS.c.agent_name == f.agent) | (RUNS.c.service_name == f.agent))
    if f.tool:
        query = query.where(REPORTS.c.tool_name == f.tool)
    if f.tool_call_id:
        query = query.where(REPORTS.c.tool_call_id == f.tool_call_id)
    if f.since is not None:
        query = query.where(REPORTS.c.last_observed_at >= f.since)
    if f.until is not None:
        query = query.where(REPORTS.c.last_observed_at < f.until)
    return query


def documents(
    session: Session, query: Select[Any], dashboard_url: str | None
) -> list[dict[str, Any]]:
    """The reports ``query`` (of :func:`report_columns`) selects, as the API shows them."""
    rows = [dict(row) for row in session.execute(query).mappings()]
    trace_ids = {row["run_id"]: row["trace_id"] for row in rows}
    return report_documents(session.connection(), rows, trace_ids, dashboard_url)


def list_reports(
    session: Session, f: ReportFilter, page: Page, dashboard_url: str | None
) -> dict[str, Any]:
    total = session.scalar(filtered(with_runs(select(func.count())), f)) or 0
    query = filtered(with_runs(select(*report_columns())), f)
    if f.trace_id:  # one run: in pipeline order
        query = query.order_by(REPORTS.c.step, REPORTS.c.request_key, REPORTS.c.tool_call_id)
    else:  # most recent first
        query = query.order_by(
            REPORTS.c.last_observed_at.desc(),
            REPORTS.c.run_id,
            REPORTS.c.tool_call_id,
            REPORTS.c.request_key,
        )
    reports = documents(session, query.offset(page.offset).limit(page.limit), dashboard_url)
    next_offset = page.offset + len(reports)
    return {
        "reports": reports,
        "total": total,
        "next_offset": next_offset if next_offset < total else None,
    }


def _verdict_counts(session: Session, run_ids: list[int]) -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    if not run_ids:
        return counts
    rows = session.execute(
        select(REPORTS.c.run_id, REPORTS.c.verdict, func.count())
        .where(REPORTS.c.run_id.in_(run_ids))
        .group_by(REPORTS.c.run_id, REPORTS.c.verdict)
    )
    for run_id, verdict, count in rows:
        counts[run_id][verdict] = count
    return counts


def _run_json(run: Any, verdicts: dict[str, int], dashboard_url: str | None) -> dict[str, Any]:
    return {
        "trace_id": run.trace_id,
        "service_name": run.service_name,
        "agent_name": run.agent_name or run.service_name,
        "first_seen": run.first_seen,
        "last_seen": run.last_seen,
        "journeys": sum(verdicts.values()),
        "verdicts": verdicts,
        "worst_verdict": worst(verdicts),
        "links": links(dashboard_url, run.trace_id),
    }


def list_runs(
    session: Session,
    page: Page,
    dashboard_url: str | None,
    agent: str | None = None,
    verdict: str | None = None,
    since: float | None = None,
    until: float | None = None,
) -> dict[str, Any]:
    query = select(RUNS)
    if agent:
        query = query.where((RUNS.c.agent_name == agent) | (RUNS.c.service_name == agent))
    if verdict:
        with_verdict = select(REPORTS.c.run_id).where(REPORTS.c.verdict == verdict)
        query = query.where(RUNS.c.id.in_(with_verdict))
    if since is not None:
        query = query.where(RUNS.c.last_seen >= since)
    if until is not None:
        query = query.where(RUNS.c.last_seen < until)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    runs = session.execute(
        query.order_by(RUNS.c.last_seen.desc(), RUNS.c.trace_id)
        .offset(page.offset)
        .limit(page.limit)
    ).all()
    counts = _verdict_counts(session, [r.id for r in runs])
    next_offset = page.offset + len(runs)
    return {
        "runs": [_run_json(r, counts.get(r.id, {}), dashboard_url) for r in runs],
        "total": total,
        "next_offset": next_offset if next_offset < total else None,
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
    for report in reports:
        counts[report["verdict"]] += 1
    ordered = sorted(steps.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
    return {
        **_run_json(run, dict(counts), dashboard_url),
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
