"""The table of spans refused at ingest (sqlmodel), which :mod:`.rejection_log` writes and
prunes (see :mod:`ctxledger_collector.storage.tables` for the rest of the schema; migration
``0006`` creates it, ``0013`` adds ``replayed``)."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Index, false
from sqlmodel import Field, SQLModel

from ctxledger_collector.storage.typed_tables import table_of


class RejectionRow(SQLModel, table=True):
    """A span refused at ingest, with why: the most recent ones (older rows are pruned).
    Ids are kept as received (cut to the column), so a malformed one still shows."""

    __tablename__ = "rejections"
    __table_args__ = (Index("ix_rejections_span", "trace_id", "span_id", unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    trace_id: str = Field(max_length=64)
    span_id: str = Field(max_length=64)
    service_name: str | None = Field(default=None, max_length=256)
    reason: str = Field(max_length=32)
    detail: str = Field(max_length=500)
    rejected_at: float
    #: Refused while the spool replayed an export the collector had acknowledged during an
    #: outage (the client was answered before the database saw the span).
    replayed: bool = Field(
        default=False, sa_column=Column(Boolean, nullable=False, server_default=false())
    )


REJECTIONS = table_of(RejectionRow)
