"""Aggregates for dashboards: ``/api/v1/stats/...`` and ``/api/v1/tools/{tool}``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query

from ctxledger_collector.query import stats
from ctxledger_collector.query.aggregate_responses import (
    BreakdownPublic,
    TimelinePublic,
    ToolProfilePublic,
)
from ctxledger_collector.query.report_filters import ReportFilter
from ctxledger_collector.routes.deps import (
    FilterDep,
    Layers,
    SessionDep,
    Since,
    StateDep,
    Until,
    layer_filter,
)

router = APIRouter(prefix="/api/v1", tags=["stats"])


@router.get(
    "/stats/timeline", response_model=TimelinePublic, summary="Journeys by verdict over time"
)
def get_timeline(
    session: SessionDep,
    f: FilterDep,
    buckets: Annotated[int, Query(ge=1, le=500)] = 48,
) -> dict[str, Any]:
    return stats.timeline(session, f, buckets)


@router.get(
    "/stats/breakdown",
    response_model=BreakdownPublic,
    summary="Per tool or agent: verdicts and losses, worst first",
)
def get_breakdown(
    session: SessionDep,
    f: FilterDep,
    by: Literal["tool", "agent"] = "tool",
    limit: Annotated[int, Query(ge=1, le=500)] = 20,
) -> dict[str, Any]:
    return stats.breakdown(session, f, by, limit)


@router.get(
    "/tools/{tool:path}",
    response_model=ToolProfilePublic,
    summary="One tool across runs: how often and where it loses",
    responses={404: {"description": "no journeys of this tool in the window"}},
)
def get_tool(
    state: StateDep,
    session: SessionDep,
    tool: str,
    since: Since = None,
    until: Until = None,
    agent: str | None = None,
    layer: Layers = None,
    recent: Annotated[int, Query(ge=0, le=200)] = 20,
) -> dict[str, Any]:
    f = ReportFilter(agent=agent, since=since, until=until, layers=layer_filter(layer))
    profile = stats.tool_profile(session, tool, f, state.settings.dashboard_url, recent)
    if profile is None:
        raise HTTPException(404, f"no journeys of tool {tool!r} in that window")
    return profile
