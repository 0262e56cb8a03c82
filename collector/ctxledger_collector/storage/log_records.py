"""Writing the OTLP log records the audit reads: one statement per batch, a record
already stored (a retry, a spool replay) left as it is."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import orjson
from sqlalchemy import Engine
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import StatementError

from ctxledger_collector.decoded.batch import DecodedLogRecord
from ctxledger_collector.decoded.rejection_codes import DATABASE_REFUSED, Rejection
from ctxledger_collector.storage.database import is_storage_outage
from ctxledger_collector.storage.log_table import LOG_RECORDS


def _row(record: DecodedLogRecord, now: float) -> dict[str, Any]:
    return {
        "record_key": record.key,
        "received_at": now,
        "time_us": record.time_us,
        "service_name": record.service_name,
        "scope_name": record.scope_name,
        "event_name": record.event_name,
        "trace_id": record.trace_id,
        "span_id": record.span_id,
        "session_id": record.session_id,
        "call_id": record.call_id,
        "body_chars": record.body_chars,
        "body_bytes": record.body_bytes,
        "body_sha256": record.body_sha256,
        "body": record.body,
        "body_ref": record.body_ref,
        "truncated": record.truncated,
        "numbers": orjson.dumps(record.numbers).decode() if record.numbers else None,
    }


def store_log_records(
    engine: Engine,
    records: Sequence[DecodedLogRecord],
    now: float | None = None,
    writer: AbstractContextManager[Any] | None = None,
) -> None:
    """Store ``records`` in one transaction, holding ``writer`` (the store's SQLite writer
    lock, which span ingest holds too); a StatementError when the database refuses it (an
    outage, or a record it cannot hold)."""
    if not records:
        return
    moment = time.time() if now is None else now
    rows = list({r.key: _row(r, moment) for r in records}.values())
    insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
    statement = insert(LOG_RECORDS).on_conflict_do_nothing(index_elements=["record_key"])
    with writer or nullcontext(), engine.begin() as connection:
        connection.execute(statement, rows)


def store_log_records_each(
    engine: Engine,
    records: Sequence[DecodedLogRecord],
    now: float | None = None,
    writer: AbstractContextManager[Any] | None = None,
) -> list[Rejection]:
    """Store ``records`` one by one; those the database refuses are returned as
    rejections (an outage still raises)."""
    rejected: list[Rejection] = []
    for record in records:
        try:
            store_log_records(engine, [record], now, writer)
        except StatementError as error:
            if is_storage_outage(error):
                raise
            reason = str(getattr(error, "orig", None) or error).splitlines()[0]
            rejected.append(
                Rejection(
                    record.trace_id or "",
                    record.span_id or "log:" + record.key.hex()[:16],
                    f"log record could not be stored: {reason}",
                    DATABASE_REFUSED,
                    record.service_name,
                )
            )
    return rejected
