"""The database tables (sqlmodel). The migrations in ``migrations/`` create the same schema.

Keys are natural: a measurement is (trace, tool call, request, stage), a manifest is
(trace, request), a report is (trace, tool call, request). ``request_key`` is the request
id or ``""`` for stages measured before any request, so unique keys never hold NULL.
Every row keeps the span's attributes as received (``attributes``) and the rule record
it was read into (``record``), so nothing the client sent is lost. Beside each table it
writes to, the typed dict of an INSERT's parameters (``…Values``) and its natural key;
``rows`` fills them.
"""

from __future__ import annotations

from typing import Any, TypedDict

from sqlalchemy import JSON, Column, Index, Table
from sqlmodel import Field, SQLModel


class RunRow(SQLModel, table=True):
    """One agent run: one trace."""

    __tablename__ = "runs"

    trace_id: str = Field(primary_key=True, max_length=32)
    service_name: str | None = Field(default=None, max_length=256)
    agent_name: str | None = Field(default=None, max_length=256, index=True)
    first_seen: float = Field(index=True)
    last_seen: float = Field(index=True)


class MeasurementRow(SQLModel, table=True):
    """One stage measurement span."""

    __tablename__ = "measurements"
    __table_args__ = (
        Index(
            "ix_measurements_journey",
            "trace_id",
            "tool_call_id",
            "request_key",
            "stage",
            unique=True,
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    trace_id: str = Field(max_length=32)
    tool_call_id: str = Field(max_length=256)
    request_key: str = Field(max_length=256)
    stage: str = Field(max_length=128)
    stage_order: int
    tool_name: str | None = Field(default=None, max_length=256)
    step: int | None = None
    span_id: str | None = Field(default=None, max_length=16)
    observed_at: float
    pick_key: str = Field(max_length=64)
    dropped_attributes: int = 0
    record: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    attributes: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))


class ManifestRow(SQLModel, table=True):
    """One request manifest span: what an LLM request contained when sent."""

    __tablename__ = "manifests"

    trace_id: str = Field(primary_key=True, max_length=32)
    request_id: str = Field(primary_key=True, max_length=256)
    step: int | None = None
    model: str | None = Field(default=None, max_length=256)
    tokens: int | None = None
    context_window: int | None = None
    span_id: str | None = Field(default=None, max_length=16)
    observed_at: float
    pick_key: str = Field(max_length=64)
    record: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    attributes: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))


class ReportRow(SQLModel, table=True):
    """The verdict on one journey, re-judged whenever its trace receives data."""

    __tablename__ = "reports"
    __table_args__ = (
        Index("ix_reports_verdict_time", "verdict", "last_observed_at"),
        Index("ix_reports_tool_time", "tool_name", "last_observed_at"),
        Index("ix_reports_agent_time", "agent_name", "last_observed_at"),
        Index("ix_reports_unsettled", "settled", "last_observed_at"),
    )

    trace_id: str = Field(primary_key=True, max_length=32)
    tool_call_id: str = Field(primary_key=True, max_length=256)
    request_key: str = Field(primary_key=True, max_length=256)
    verdict: str = Field(max_length=16)
    tool_name: str | None = Field(default=None, max_length=256)
    agent_name: str | None = Field(default=None, max_length=256)
    step: int | None = None
    settled: bool = True
    lost_items: int = 0
    lost_chars: int = 0
    lost_tokens: int = 0
    last_observed_at: float
    judged_at: float
    detail: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))


# --- alerting: events, groups and the notification outbox ------------------------------
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
        Index("ix_alert_events_pending", "rule", "agent", "tool", "batch_id"),
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


# --- row values: the parameters of an INSERT into each table, keyed by column -------------


class RunValues(TypedDict):
    trace_id: str
    service_name: str | None
    agent_name: str | None
    first_seen: float
    last_seen: float


class MeasurementValues(TypedDict):
    trace_id: str
    tool_call_id: str
    request_key: str
    stage: str
    stage_order: int
    tool_name: str | None
    step: int | None
    span_id: str | None
    observed_at: float
    pick_key: str
    dropped_attributes: int
    record: dict[str, Any]
    attributes: dict[str, Any]


class ManifestValues(TypedDict):
    trace_id: str
    request_id: str
    step: int | None
    model: str | None
    tokens: int | None
    context_window: int | None
    span_id: str | None
    observed_at: float
    pick_key: str
    record: dict[str, Any]
    attributes: dict[str, Any]


class ReportValues(TypedDict):
    trace_id: str
    tool_call_id: str
    request_key: str
    verdict: str
    tool_name: str | None
    agent_name: str | None
    step: int | None
    settled: bool
    lost_items: int
    lost_chars: int
    lost_tokens: int
    last_observed_at: float
    judged_at: float
    detail: dict[str, Any]


#: The natural keys: the unique index each upsert resolves its conflicts on.
MEASUREMENT_KEY = ("trace_id", "tool_call_id", "request_key", "stage")
MANIFEST_KEY = ("trace_id", "request_id")
REPORT_KEY = ("trace_id", "tool_call_id", "request_key")


def table_of(model: type[SQLModel]) -> Table:
    """The typed Core table of a model (``T.c.trace_id == ...`` is a typed expression)."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


RUNS = table_of(RunRow)
MEASUREMENTS = table_of(MeasurementRow)
MANIFESTS = table_of(ManifestRow)
REPORTS = table_of(ReportRow)
ALERT_EVENTS = table_of(AlertEventRow)
ALERT_GROUPS = table_of(AlertGroupRow)
NOTIFICATIONS = table_of(NotificationRow)
