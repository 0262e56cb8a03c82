"""Reading: reports, runs and one run's steps, as the query API returns them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from ctxledger import semconv as sc
from ctxledger.verdicts import worst
from ctxledger_collector.records import record_to_manifest
from ctxledger_collector.tables import MANIFESTS, REPORTS, RUNS, ManifestRow, ReportRow, RunRow


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


def links(
    dashboard_url: str | None,
    trace_id: str,
    step: int | None = None,
    tool_call_id: str | None = None,
) -> dict[str, str]:
    """Deep links for a run, step or journey: the API's own and the dashboard's."""
    out = {"run": f"/api/v1/runs/{trace_id}"}
    if dashboard_url:
        query: dict[str, str] = {"trace_id": trace_id}
        if step is not None:
            query["step"] = str(step)
        if tool_call_id:
            query["tool_call_id"] = tool_call_id
        out["dashboard"] = f"{dashboard_url.rstrip('/')}/run?{urlencode(query)}"
    return out


def report_json(row: ReportRow, dashboard_url: str | None) -> dict[str, Any]:
    detail = row.detail
    return {
        "trace_id": row.trace_id,
        "tool_call_id": row.tool_call_id,
        "tool_name": row.tool_name,
        "request_id": row.request_key or None,
        "agent_name": row.agent_name,
        "step": row.step,
        "verdict": row.verdict,
        "settled": row.settled,
        "lost_items": row.lost_items,
        "lost_item_ids": detail.get("lost_item_ids", []),
        "lost_fields": detail.get("lost_fields", []),
        "lost_chars": row.lost_chars,
        "lost_tokens": row.lost_tokens,
        "lost_priority_items": detail.get("lost_priority_items", 0),
        "notes": detail.get("notes", []),
        "stages": detail.get("stages", []),
        "transitions": detail.get("transitions", []),
        "last_observed_at": row.last_observed_at,
        "judged_at": row.judged_at,
        "links": links(dashboard_url, row.trace_id, row.step, row.tool_call_id),
    }


def filtered(query: Select[Any], f: ReportFilter) -> Select[Any]:
    if f.trace_id:
        query = query.where(REPORTS.c.trace_id == f.trace_id)
    if f.verdicts:
        query = query.where(REPORTS.c.verdict.in_(f.verdicts))
    if f.agent:
        # The contract names the agent by gen_ai.agent.name, else service.name: match
        # either, as /api/v1/runs does.
        of_service = select(RUNS.c.trace_id).where(RUNS.c.service_name == f.agent)
        query = query.where((REPORTS.c.agent_name == f.agent) | REPORTS.c.trace_id.in_(of_service))
    if f.tool:
        query = query.where(REPORTS.c.tool_name == f.tool)
    if f.tool_call_id:
        query = query.where(REPORTS.c.tool_call_id == f.tool_call_id)
    if f.since is not None:
        query = query.where(REPORTS.c.last_observed_at >= f.since)
    if f.until is not None:
        query = query.where(REPORTS.c.last_observed_at < f.until)
    return query


def list_reports(
    session: Session, f: ReportFilter, page: Page, dashboard_url: str | None
) -> dict[str, Any]:
    total = session.scalar(filtered(select(func.count()).select_from(ReportRow), f)) or 0
    query = filtered(select(ReportRow), f)
    if f.trace_id:  # one run: in pipeline order
        query = query.order_by(REPORTS.c.step, REPORTS.c.request_key, REPORTS.c.tool_call_id)
    else:  # most recent first
        query = query.order_by(
            REPORTS.c.last_observed_at.desc(),
            REPORTS.c.trace_id,
            REPORTS.c.tool_call_id,
            REPORTS.c.request_key,
        )
    rows = session.scalars(query.offset(page.offset).limit(page.limit)).all()
    next_offset = page.offset + len(rows)
    return {
        "reports": [report_json(row, dashboard_url) for row in rows],
        "total": total,
        "next_offset": next_offset if next_offset < total else None,
    }


def _verdict_counts(session: Session, trace_ids: list[str]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    if not trace_ids:
        return counts
    rows = session.execute(
        select(REPORTS.c.trace_id, REPORTS.c.verdict, func.count())
        .where(REPORTS.c.trace_id.in_(trace_ids))
        .group_by(REPORTS.c.trace_id, REPORTS.c.verdict)
    )
    for trace_id, verdict, count in rows:
        counts[trace_id][verdict] = count
    return counts


def _run_json(run: RunRow, verdicts: dict[str, int], dashboard_url: str | None) -> dict[str, Any]:
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
    query = select(RunRow)
    if agent:
        query = query.where((RUNS.c.agent_name == agent) | (RUNS.c.service_name == agent))
    if verdict:
        with_verdict = select(REPORTS.c.trace_id).where(REPORTS.c.verdict == verdict)
        query = query.where(RUNS.c.trace_id.in_(with_verdict))
    if since is not None:
        query = query.where(RUNS.c.last_seen >= since)
    if until is not None:
        query = query.where(RUNS.c.last_seen < until)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    runs = session.scalars(
        query.order_by(RUNS.c.last_seen.desc(), RUNS.c.trace_id)
        .offset(page.offset)
        .limit(page.limit)
    ).all()
    counts = _verdict_counts(session, [r.trace_id for r in runs])
    next_offset = page.offset + len(runs)
    return {
        "runs": [_run_json(r, counts.get(r.trace_id, {}), dashboard_url) for r in runs],
        "total": total,
        "next_offset": next_offset if next_offset < total else None,
    }


def _manifest_json(row: ManifestRow) -> dict[str, Any]:
    manifest = record_to_manifest(row.record)
    calls = set(manifest.tool_calls or ())
    results = set(manifest.tool_call_ids)
    window_used = (
        round(row.tokens / row.context_window, 4) if row.tokens and row.context_window else None
    )
    return {
        "request_id": row.request_id,
        "step": row.step,
        "model": row.model,
        "tokens": row.tokens,
        "tokenizer": row.attributes.get(sc.TOKENIZER),
        "context_window": row.context_window,
        "window_used": window_used,
        "tool_call_ids": list(manifest.tool_call_ids),
        "tool_calls": list(manifest.tool_calls) if manifest.tool_calls is not None else None,
        "calls_without_result": sorted(calls - results),
        "results_without_call": sorted(results - calls) if manifest.tool_calls is not None else [],
        "sdk_dropped_spans": manifest.sdk_dropped_spans,
        "observed_at": row.observed_at,
    }


def run_detail(session: Session, trace_id: str, dashboard_url: str | None) -> dict[str, Any] | None:
    """One run's steps in order, each with its requests, manifests and journeys."""
    run = session.get(RunRow, trace_id)
    if run is None:
        return None
    reports = session.scalars(
        select(ReportRow)
        .where(REPORTS.c.trace_id == trace_id)
        .order_by(REPORTS.c.step, REPORTS.c.tool_call_id)
    ).all()
    manifests = session.scalars(select(ManifestRow).where(MANIFESTS.c.trace_id == trace_id)).all()
    steps: dict[int | None, dict[str, dict[str, Any]]] = defaultdict(dict)
    for manifest in manifests:
        steps[manifest.step][manifest.request_id] = {
            "request_id": manifest.request_id,
            "manifest": _manifest_json(manifest),
            "journeys": [],
        }
    for report in reports:
        requests = steps[report.step]
        request = requests.setdefault(
            report.request_key,
            {"request_id": report.request_key or None, "manifest": None, "journeys": []},
        )
        request["journeys"].append(report_json(report, dashboard_url))
    counts: dict[str, int] = defaultdict(int)
    for report in reports:
        counts[report.verdict] += 1
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
