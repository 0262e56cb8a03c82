"""``GET /api/v1/rejections``: the spans refused at ingest, newest first, with why."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from ctxledger_collector.decoded.rejection_codes import REASONS
from ctxledger_collector.query.rejection_responses import RejectionsPublic
from ctxledger_collector.routes.deps import SessionDep, StateDep
from ctxledger_collector.storage.rejection_log import read_rejections

router = APIRouter(prefix="/api/v1", tags=["rejections"])

#: The reason codes as a type, so that ``/openapi.json`` lists them.
Reason = Literal[REASONS]  # type: ignore[valid-type]


@router.get(
    "/rejections",
    response_model=RejectionsPublic,
    summary="Spans rejected at ingest, newest first (each kept for a week by default)",
)
def get_rejections(
    state: StateDep,
    session: SessionDep,
    reason: Annotated[Reason | None, Query(description="only this reason")] = None,
    trace_id: Annotated[str | None, Query(max_length=64, description="only this trace")] = None,
    before: Annotated[
        int | None,
        Query(ge=1, le=2**31 - 1, description="the next_before of the previous page"),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="page size")] = 100,
) -> dict[str, Any]:
    page = read_rejections(session.connection(), limit, before, reason, trace_id)
    return {
        "rejections": page.rows,
        "total": page.total,
        "next_before": page.next_before,
        "kept": state.settings.rejections_kept,
        "max_age_s": state.settings.rejections_max_age_s,
        "reasons": list(REASONS),
    }
