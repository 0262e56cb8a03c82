"""``GET /api/v1/alerts``: the notifications sent (or being sent) and the alert groups."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from sqlalchemy import func, select

from ctxledger_collector.query.alert_responses import AlertsPublic
from ctxledger_collector.routes.deps import MAX_OFFSET, SessionDep, StateDep
from ctxledger_collector.storage.alert_tables import ALERT_GROUPS, NOTIFICATIONS

router = APIRouter(prefix="/api/v1", tags=["alerts"])


def _notification(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "webhook_id": row.webhook_id,
        "batch_id": row.batch_id,
        "status": row.status,
        "rule": row.rule,
        "agent": row.agent or None,
        "tool": row.tool or None,
        "sink": row.sink,
        "sink_type": row.sink_type,
        "delivery": row.delivery,
        "attempts": row.attempts,
        "last_error": row.last_error,
        "created_at": row.created_at,
        "delivered_at": row.delivered_at,
        "next_attempt_at": row.next_attempt_at if row.delivery == "pending" else None,
        "payload": row.payload,
    }


@router.get(
    "/alerts",
    response_model=AlertsPublic,
    summary="Alert notifications, newest first, and the alert groups",
)
def get_alerts(
    state: StateDep,
    session: SessionDep,
    rule: str | None = None,
    delivery: Literal["pending", "delivered", "dead"] | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> dict[str, Any]:
    query = select(NOTIFICATIONS)
    if rule:
        query = query.where(NOTIFICATIONS.c.rule == rule)
    if delivery:
        query = query.where(NOTIFICATIONS.c.delivery == delivery)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.execute(
        query.order_by(NOTIFICATIONS.c.id.desc()).offset(offset).limit(limit)
    ).all()
    groups = session.execute(
        select(ALERT_GROUPS).order_by(ALERT_GROUPS.c.last_event_at.desc()).limit(200)
    ).all()
    next_offset = offset + len(rows)
    return {
        "notifications": [_notification(r) for r in rows],
        "total": total,
        "next_offset": next_offset if next_offset < total else None,
        "groups": [
            {
                "rule": g.rule,
                "agent": g.agent or None,
                "tool": g.tool or None,
                "severity": g.severity,
                "state": g.state,
                "first_event_at": g.first_event_at,
                "last_event_at": g.last_event_at,
                "last_notified_at": g.last_notified_at,
            }
            for g in groups
        ],
        "rules": [rule.model_dump() for rule in state.alerts.config.rules],
        "sinks": [{"name": s.name, "type": s.type} for s in state.alerts.config.sinks],
    }
