"""The runs list: newest first, filtered, by offset or cursor, each run with its journeys'
verdicts counted (from ``run_journey_counts``, not from its reports)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from ctxledger.verdicts import worst
from ctxledger_collector.query import pagination
from ctxledger_collector.query.pagination import Page
from ctxledger_collector.query.report_documents import links
from ctxledger_collector.query.report_filters import in_layers
from ctxledger_collector.storage.counter_tables import RUN_JOURNEY_COUNTS
from ctxledger_collector.storage.tables import REPORTS, RUNS

_ORDER = (RUNS.c.last_seen, RUNS.c.id)


def verdict_counts(
    session: Session, run_ids: Sequence[int]
) -> tuple[dict[int, dict[str, int]], dict[int, int]]:
    """Each run's journeys by verdict, and its lost results (each counted once)."""
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    results: dict[int, int] = defaultdict(int)
    if not run_ids:
        return counts, results
    c = RUN_JOURNEY_COUNTS.c
    rows = session.execute(
        select(c.run_id, c.verdict, func.sum(c.journeys), func.sum(c.lost_results))
        .where(c.run_id.in_(run_ids))
        .group_by(c.run_id, c.verdict)
    )
    for run_id, verdict, count, lost in rows:
        if count:
            counts[run_id][verdict] = int(count)
        results[run_id] += int(lost or 0)
    return counts, results


def run_sources(session: Session, run_ids: Sequence[int]) -> dict[int, list[str]]:
    """Where each run's evidence came from (``ctxledger``, ``genai``, ...; a report that
    joined two says ``a+b``)."""
    found: dict[int, set[str]] = defaultdict(set)
    if run_ids:
        rows = session.execute(
            select(REPORTS.c.run_id, REPORTS.c.source)
            .where(REPORTS.c.run_id.in_(run_ids))
            .group_by(REPORTS.c.run_id, REPORTS.c.source)
        )
        for run_id, source in rows:
            found[run_id].update(source.split("+"))
    return {run_id: sorted(sources) for run_id, sources in found.items()}


def run_json(
    run: Any,
    verdicts: dict[str, int],
    dashboard_url: str | None,
    sources: list[str],
    lost_results: int = 0,
) -> dict[str, Any]:
    return {
        "trace_id": run.trace_id,
        "service_name": run.service_name,
        "agent_name": run.agent_name or run.service_name,
        "first_seen": run.first_seen,
        "last_seen": run.last_seen,
        "journeys": sum(verdicts.values()),
        "verdicts": verdicts,
        "lost_results": lost_results,
        "worst_verdict": worst(verdicts),
        "sources": sources,
        "links": links(dashboard_url, run.trace_id),
    }


def list_runs(
    session: Session,
    page: Page,
    dashboard_url: str | None,
    agent: str | None = None,
    verdicts: tuple[str, ...] = (),
    since: float | None = None,
    until: float | None = None,
    layers: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Runs newest first (ties by id), from ``page.after`` when given; with ``verdicts``
    or ``layers`` (short layer names), only runs holding a journey of one of the
    verdicts whose worst finding sits in one of the layers."""
    query = select(RUNS)
    if agent:
        query = query.where((RUNS.c.agent_name == agent) | (RUNS.c.service_name == agent))
    if verdicts or layers:
        c = RUN_JOURNEY_COUNTS.c
        held = exists().where(c.run_id == RUNS.c.id, c.journeys > 0)
        if verdicts:
            held = held.where(c.verdict.in_(verdicts))
        if layers:
            held = held.where(in_layers(c.layer, layers))
        query = query.where(held)
    if since is not None:
        query = query.where(RUNS.c.last_seen >= since)
    if until is not None:
        query = query.where(RUNS.c.last_seen < until)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    ordered = query.order_by(*(column.desc() for column in _ORDER))
    if page.after is not None:
        ordered = ordered.where(
            pagination.after(_ORDER, pagination.decode("runs", page.after), descending=True)
        )
    else:
        ordered = ordered.offset(page.offset)
    found = session.execute(ordered.limit(page.limit + 1)).all()
    runs, more = found[: page.limit], len(found) > page.limit
    counts, results = verdict_counts(session, [r.id for r in runs])
    sources = run_sources(session, [r.id for r in runs])
    next_offset = page.offset + len(runs)
    return {
        "runs": [
            run_json(
                r, counts.get(r.id, {}), dashboard_url, sources.get(r.id, []), results.get(r.id, 0)
            )
            for r in runs
        ],
        "total": total,
        "next_offset": next_offset if page.after is None and next_offset < total else None,
        "next_cursor": (
            pagination.encode("runs", (runs[-1].last_seen, runs[-1].id)) if more else None
        ),
    }
