"""The table of OTLP log records the audit reads (sqlmodel), which
:mod:`.log_records` writes (see :mod:`ctxledger_collector.storage.tables` for the rest of the
schema; migration ``0016`` creates it)."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Index, LargeBinary, Text, false
from sqlmodel import Field, SQLModel

from ctxledger_collector.storage.table_columns import big_integer, text_column
from ctxledger_collector.storage.typed_tables import table_of


class LogRecordRow(SQLModel, table=True):
    """One log record (contract section 8): who sent it, what it is about, when, and its
    body's size and digest; the body's text only when the operator opted in to content.
    Keyed by a digest of the whole record, so a record sent again is stored once."""

    __tablename__ = "log_records"
    __table_args__ = (
        Index("ix_log_records_session", "session_id", "time_us"),
        Index("ix_log_records_call", "call_id"),
        Index("ix_log_records_trace", "trace_id"),
        Index("ix_log_records_received", "received_at"),
    )

    record_key: bytes = Field(sa_column=Column(LargeBinary(16), primary_key=True))
    received_at: float
    time_us: int = big_integer()
    service_name: str | None = text_column()
    scope_name: str | None = text_column()
    event_name: str = Field(sa_column=Column(Text, nullable=False))
    trace_id: str | None = text_column()
    span_id: str | None = text_column()
    session_id: str | None = text_column()
    call_id: str | None = text_column()
    body_chars: int | None = big_integer(nullable=True)
    body_bytes: int | None = big_integer(nullable=True)
    body_sha256: str | None = text_column()
    body: str | None = text_column()
    body_ref: str | None = text_column()
    truncated: bool = Field(
        default=False, sa_column=Column(Boolean, nullable=False, server_default=false())
    )
    #: The record's numeric and boolean attributes, as a JSON object.
    numbers: str | None = text_column()


LOG_RECORDS = table_of(LogRecordRow)
