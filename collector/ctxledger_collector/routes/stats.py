"""Aggregates for dashboards: ``/api/v1/stats/...`` and ``/api/v1/tools/{tool}``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from ctxledger_collector import stats
from ctxledger_collector.queries import ReportFilter
from ctxledger_collector.routes.queries import verdict_filter
from ctxledger_collector.state import StateDep

router = APIRouter(prefix="/api/v1", tags=["stats"])

Since = Annotated[float | None, Query(description="unix seconds, inclusive")]
Until = Annotated[float | None, Query(description="unix seconds, exclusive")]
Verdicts = Annotated[list[str] | None, Query(description="repeat to allow several")]


def journey_filter(
    since: Since = None,
    until: Until = None,
    agent: str | None = None,
    tool: str | None = None,
    verdict: Verdicts = None,
) -> ReportFilter:
    """The filters every aggregate takes, from the query string."""
    return ReportFilter(
        verdicts=verdict_filter(verdict), agent=agent, tool=tool, since=since, until=until
    )


FilterDep = Annotated[ReportFilter, Depends(journey_filter)]


@router.get("/stats/timeline", summary="Journeys by verdict over time")
async def get_timeline(
    state: StateDep,
    f: FilterDep,
    buckets: Annotated[int, Query(ge=1, le=500)] = 48,
) -> dict[str, Any]:

    def read() -> dict[str, Any]:
        with Session(state.engine) as session:
            return stats.timeline(session, f, buckets)

    return await run_in_threadpool(read)


@router.get("/stats/breakdown", summary="Per tool or agent: verdicts and losses, worst first")
async def get_breakdown(
    state: StateDep,
    f: FilterDep,
    by: Literal["tool", "agent"] = "tool",
    limit: Annotated[int, Query(ge=1, le=500)] = 20,
) -> dict[str, Any]:

    def read() -> dict[str, Any]:
        with Session(state.engine) as session:
            return stats.breakdown(session, f, by, limit)

    return await run_in_threadpool(read)


@router.get("/tools/{tool}", summary="One tool across runs: how often and where it loses")
async def get_tool(
    state: StateDep,
    tool: str,
    since: Since = None,
    until: Until = None,
    agent: str | None = None,
    recent: Annotated[int, Query(ge=0, le=200)] = 20,
) -> dict[str, Any]:
    f = ReportFilter(agent=agent, since=since, until=until)

    def read() -> dict[str, Any] | None:
        with Session(state.engine) as session:
            return stats.tool_profile(session, tool, f, state.settings.dashboard_url, recent)

    profile = await run_in_threadpool(read)
    if profile is None:
        raise HTTPException(404, f"no journeys of tool {tool!r} in that window")
    return profile
