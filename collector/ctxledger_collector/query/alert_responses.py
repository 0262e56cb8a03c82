"""The alerting answer as response models: ``/api/v1/alerts`` (notifications, groups,
the rules in force and the sinks; the rules every response model follows are in
:mod:`~ctxledger_collector.query.responses`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ctxledger_collector.query.responses import Public


class NotificationPublic(Public):
    """One message to one sink, and where its delivery stands."""

    id: int
    webhook_id: str
    batch_id: str
    status: str
    rule: str
    agent: str | None
    tool: str | None
    sink: str
    sink_type: str
    delivery: str
    attempts: int
    last_error: str | None
    created_at: float
    delivered_at: float | None
    next_attempt_at: float | None
    payload: dict[str, Any]


class AlertGroupPublic(Public):
    rule: str
    agent: str | None
    tool: str | None
    severity: str
    state: str
    first_event_at: float
    last_event_at: float
    last_notified_at: float | None


class SinkPublic(Public):
    name: str
    type: str


class AlertsPublic(Public):
    notifications: list[NotificationPublic]
    total: int
    next_offset: int | None
    groups: list[AlertGroupPublic]
    rules: list[dict[str, Any]] = Field(description="the alert rules in force")
    sinks: list[SinkPublic]
