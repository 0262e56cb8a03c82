"""The query API: ``/api/v1/reports``, ``/api/v1/runs``, ``/api/v1/runs/{trace_id}``."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, HTTPException, Query, Response

from ctxledger_collector.query import queries, run_listing
from ctxledger_collector.query.responses import ReportsPublic, RunDetailPublic, RunsPublic
from ctxledger_collector.routes.deps import (
    TRACE_ID_PATTERN,
    After,
    FirstLost,
    Layers,
    Limit,
    Offset,
    SessionDep,
    Since,
    StateDep,
    TraceId,
    Until,
    Verdicts,
    cursor_errors,
    layer_filter,
    page_of,
    verdict_filter,
)
from ctxledger_collector.routes.readable_json import readable_bytes

router = APIRouter(prefix="/api/v1", tags=["query"])


def built_answer(document: dict[str, Any]) -> Response:
    """A large answer written as built. The routes still declare their models (the
    OpenAPI document, and ``tests/collector/test_openapi.py`` checks each answer against
    its model); validating a run of 1,000 journeys into those models again and dumping
    them cost more than building it (~100 ms of ~300 at a million measurements)."""
    return Response(readable_bytes(orjson.dumps(document)), media_type="application/json")


@router.get(
    "/reports", response_model=ReportsPublic, summary="Journey reports, filtered and paginated"
)
def get_reports(
    state: StateDep,
    session: SessionDep,
    trace_id: Annotated[
        str | None, Query(pattern=TRACE_ID_PATTERN, description="32 hex digits (any case)")
    ] = None,
    verdict: Verdicts = None,
    agent: str | None = None,
    tool: str | None = None,
    tool_call_id: str | None = None,
    since: Since = None,
    until: Until = None,
    first_lost: FirstLost = None,
    layer: Layers = None,
    limit: Limit = 100,
    offset: Offset = 0,
    after: After = None,
) -> Response:
    report_filter = queries.ReportFilter(
        trace_id.lower() if trace_id else None,
        verdict_filter(verdict),
        agent,
        tool,
        tool_call_id,
        since,
        until,
        first_lost,
        layer_filter(layer),
    )
    page = page_of(limit, offset, after)
    with cursor_errors():
        return built_answer(
            queries.list_reports(session, report_filter, page, state.settings.dashboard_url)
        )


@router.get("/runs", response_model=RunsPublic, summary="Recent runs with their verdict counts")
def get_runs(
    state: StateDep,
    session: SessionDep,
    agent: str | None = None,
    verdict: Verdicts = None,
    since: Since = None,
    until: Until = None,
    layer: Layers = None,
    limit: Limit = 50,
    offset: Offset = 0,
    after: After = None,
) -> dict[str, Any]:
    """Runs with a journey of any of the verdicts given (repeat ``verdict``) whose worst
    finding sits in any of the layers given (repeat ``layer``)."""
    verdicts = verdict_filter(verdict)
    layers = layer_filter(layer)
    with cursor_errors():
        return run_listing.list_runs(
            session,
            page_of(limit, offset, after),
            state.settings.dashboard_url,
            agent=agent,
            verdicts=verdicts,
            since=since,
            until=until,
            layers=layers,
        )


@router.get(
    "/runs/{trace_id}",
    response_model=RunDetailPublic,
    summary="One run: its steps, requests, manifests and journeys",
    responses={404: {"description": "no run with this trace id"}},
)
def get_run(state: StateDep, session: SessionDep, trace_id: TraceId) -> Response:
    trace_id = trace_id.lower()
    detail = queries.run_detail(session, trace_id, state.settings.dashboard_url)
    if detail is None:
        raise HTTPException(404, f"no run with trace id {trace_id}")
    return built_answer(detail)
