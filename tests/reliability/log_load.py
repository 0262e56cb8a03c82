"""A load of OTLP log records sent with the stock log exporter, recording the call id of
every record by the exporter's result: what the fault tests compare with what was
stored, as id sets."""

from __future__ import annotations

import time
import uuid

from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from sqlalchemy import create_engine, select

from ctxledger_collector.storage.log_table import LOG_RECORDS
from tests.reliability.kit import Load

RESOURCE = Resource({"service.name": "claude-code"})
SCOPE = InstrumentationScope("com.anthropic.claude_code.events")


def log_batch(size: int) -> tuple[list[ReadableLogRecord], set[str]]:
    """``size`` ``claude_code.tool_result`` records, each with a call id of its own."""
    calls = [f"toolu_{uuid.uuid4().hex}" for _ in range(size)]
    session = f"session-{uuid.uuid4().hex[:12]}"
    records = [
        ReadableLogRecord(
            LogRecord(
                timestamp=time.time_ns(),
                event_name="claude_code.tool_result",
                body="claude_code.tool_result",
                attributes={
                    "session.id": session,
                    "tool_use_id": call,
                    "tool_name": "Bash",
                    "tool_result_size_bytes": 4_096,
                },
            ),
            RESOURCE,
            SCOPE,
        )
        for call in calls
    ]
    return records, set(calls)


class LogLoad(Load):
    """:class:`Load` of log records: each export is ``journeys`` records, sent with the
    stock log exporter; ``acked`` and ``failed`` hold their call ids."""

    def _send(self) -> None:
        exporter = OTLPLogExporter(endpoint=self.endpoint + "/v1/logs", timeout=self.timeout_s)
        while not self._stop.is_set():
            batch, calls = log_batch(self.journeys)
            result = exporter.export(batch)
            with self._lock:
                self.exports += 1
                ok = result == LogRecordExportResult.SUCCESS
                (self.acked if ok else self.failed).update(calls)
            self._stop.wait(self.pause_s)
        exporter.shutdown()


def stored_call_ids(database_url: str) -> set[str]:
    """Every log record's call id the database holds."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            return {row[0] for row in connection.execute(select(LOG_RECORDS.c.call_id))}
    finally:
        engine.dispose()
