"""The database tables (sqlmodel). The migrations in ``migrations/`` create the same schema.

Keys are natural: a measurement is (trace, tool call, request, stage), a manifest is
(trace, request), a report is (trace, tool call, request). ``request_key`` is the request
id or ``""`` for stages measured before any request, so unique keys never hold NULL.
Every row keeps the span's attributes as received (``attributes``) and the rule record
it was read into (``record``), so nothing the client sent is lost.
"""

from __future__ import annotations

from typing import Any

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


def _table(model: type[SQLModel]) -> Table:
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


#: Typed Core handles for queries (``RUNS.c.trace_id == ...`` is a typed expression).
RUNS = _table(RunRow)
MEASUREMENTS = _table(MeasurementRow)
MANIFESTS = _table(ManifestRow)
REPORTS = _table(ReportRow)
