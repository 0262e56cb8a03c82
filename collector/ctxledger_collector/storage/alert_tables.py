"""The alerting tables (sqlmodel): events, groups and the notification outbox (see
:mod:`ctxledger_collector.storage.tables` for the rest of the schema; migrations ``0002``,
``0008`` and ``0009`` create them)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Column, Index, false, text
from sqlmodel import Field, SQLModel

from ctxledger_collector.storage.typed_tables import table_of

# An *event* is one journey matching one rule, written once (unique key) in the same
# transaction as the report that triggered it. Events of one (rule, agent, tool) *group*
# are notified together, once per group window; a *notification* is one message to one
# sink, kept in the outbox until delivered (``webhook_id`` stays the same on every retry).


class AlertEventRow(SQLModel, table=True):
    __tablename__ = "alert_events"
    __table_args__ = (
        Index(
            "ix_alert_events_journey",
            "rule",
            "trace_id",
            "tool_call_id",
            "request_key",
            unique=True,
        ),
        # The events not yet notified (batch_id NULL), by group: only those are in it, so
        # the delivery worker's tick reads what is pending, not every event ever kept.
        Index(
            "ix_alert_events_unbatched",
            "rule",
            "agent",
            "tool",
            "created_at",
            sqlite_where=text("batch_id IS NULL"),
            postgresql_where=text("batch_id IS NULL"),
        ),
        # The journeys an ingest batch judged, whatever the rule (record_events).
        Index("ix_alert_events_result", "trace_id", "tool_call_id", "request_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    rule: str = Field(max_length=128)
    severity: str = Field(max_length=16)
    agent: str = Field(max_length=256)
    tool: str = Field(max_length=256)
    trace_id: str = Field(max_length=32)
    tool_call_id: str = Field(max_length=256)
    request_key: str = Field(max_length=256)
    verdict: str = Field(max_length=16)
    step: int | None = None
    lost_items: int = 0
    lost_tokens: int = 0
    #: The journey's lost tokens are unknown (``lost_tokens`` holds only what compared).
    tokens_unknown: bool = Field(
        default=False, sa_column=Column(Boolean, nullable=False, server_default=false())
    )
    lost_priority_items: int = 0
    observed_at: float
    created_at: float
    batch_id: str | None = Field(default=None, max_length=64)


class AlertGroupRow(SQLModel, table=True):
    __tablename__ = "alert_groups"

    rule: str = Field(primary_key=True, max_length=128)
    agent: str = Field(primary_key=True, max_length=256)
    tool: str = Field(primary_key=True, max_length=256)
    severity: str = Field(max_length=16)
    state: str = Field(max_length=16)
    first_event_at: float
    last_event_at: float
    last_notified_at: float | None = None


class NotificationRow(SQLModel, table=True):
    __tablename__ = "alert_notifications"
    __table_args__ = (Index("ix_alert_notifications_due", "delivery", "next_attempt_at"),)

    id: int | None = Field(default=None, primary_key=True)
    webhook_id: str = Field(max_length=64, unique=True)
    batch_id: str = Field(max_length=64, index=True)
    rule: str = Field(max_length=128)
    agent: str = Field(max_length=256)
    tool: str = Field(max_length=256)
    status: str = Field(max_length=16)
    sink: str = Field(max_length=128)
    sink_type: str = Field(max_length=16)
    payload: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: float = Field(index=True)
    delivery: str = Field(max_length=16)
    attempts: int = 0
    next_attempt_at: float
    lease_until: float | None = None
    lease_owner: str | None = Field(default=None, max_length=64)
    last_error: str | None = Field(default=None, max_length=1000)
    delivered_at: float | None = None


ALERT_EVENTS = table_of(AlertEventRow)
ALERT_GROUPS = table_of(AlertGroupRow)
NOTIFICATIONS = table_of(NotificationRow)
