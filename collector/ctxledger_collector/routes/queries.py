"""The query API: ``/api/v1/reports``, ``/api/v1/runs``, ``/api/v1/runs/{trace_id}``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from ctxledger.verdicts import VERDICTS
from ctxledger_collector import queries
from ctxledger_collector.state import StateDep

router = APIRouter(prefix="/api/v1", tags=["query"])

TraceId = Annotated[str, Path(pattern="^[0-9a-f]{32}$", description="32 lower-case hex")]
Limit = Annotated[int, Query(ge=1, le=1000, description="page size")]
Offset = Annotated[int, Query(ge=0, description="rows to skip (use next_offset)")]


def verdict_filter(values: list[str] | None) -> tuple[str, ...]:
    unknown = sorted(set(values or ()) - set(VERDICTS))
    if unknown:
        raise HTTPException(422, f"unknown verdict(s) {unknown}; known: {list(VERDICTS)}")
    return tuple(values or ())


@router.get("/reports", summary="Journey reports, filtered and paginated")
async def get_reports(
    state: StateDep,
    trace_id: Annotated[str | None, Query(pattern="^[0-9a-f]{32}$")] = None,
    verdict: Annotated[list[str] | None, Query(description="repeat to allow several")] = None,
    agent: str | None = None,
    tool: str | None = None,
    tool_call_id: str | None = None,
    since: Annotated[float | None, Query(description="unix seconds, inclusive")] = None,
    until: Annotated[float | None, Query(description="unix seconds, exclusive")] = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> dict[str, Any]:
    report_filter = queries.ReportFilter(
        trace_id, verdict_filter(verdict), agent, tool, tool_call_id, since, until
    )

    def read() -> dict[str, Any]:
        with Session(state.engine) as session:
            return queries.list_reports(
                session, report_filter, queries.Page(limit, offset), state.settings.dashboard_url
            )

    return await run_in_threadpool(read)


@router.get("/runs", summary="Recent runs with their verdict counts")
async def get_runs(
    state: StateDep,
    agent: str | None = None,
    verdict: str | None = None,
    since: float | None = None,
    until: float | None = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> dict[str, Any]:
    if verdict is not None:
        verdict_filter([verdict])

    def read() -> dict[str, Any]:
        with Session(state.engine) as session:
            return queries.list_runs(
                session,
                queries.Page(limit, offset),
                state.settings.dashboard_url,
                agent=agent,
                verdict=verdict,
                since=since,
                until=until,
            )

    return await run_in_threadpool(read)


@router.get("/runs/{trace_id}", summary="One run: its steps, requests, manifests and journeys")
async def get_run(state: StateDep, trace_id: TraceId) -> dict[str, Any]:
    def read() -> dict[str, Any] | None:
        with Session(state.engine) as session:
            return queries.run_detail(session, trace_id, state.settings.dashboard_url)

    detail = await run_in_threadpool(read)
    if detail is None:
        raise HTTPException(404, f"no run with trace id {trace_id}")
    return detail
