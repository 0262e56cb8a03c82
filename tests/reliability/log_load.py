"""A load of OTLP log records sent with the stock log exporter, recording the call id of
every record by the exporter's result: what the fault tests compare with what was
stored, as id sets."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from dataclasses import dataclass, field

from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from sqlalchemy import create_engine, select

from ctxledger_collector.storage.log_table import LOG_RECORDS

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


@dataclass
class LogLoad:
    """Sends batches of ``records`` from ``senders`` threads until stopped."""

    endpoint: str
    records: int = 20
    senders: int = 1
    pause_s: float = 0.2
    acked: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    exports: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> LogLoad:
        for _ in range(self.senders):
            thread = threading.Thread(target=self._send, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _send(self) -> None:
        exporter = OTLPLogExporter(endpoint=self.endpoint + "/v1/logs", timeout=30)
        for _ in itertools.count():
            if self._stop.is_set():
                break
            batch, calls = log_batch(self.records)
            result = exporter.export(batch)
            with self._lock:
                self.exports += 1
                ok = result == LogRecordExportResult.SUCCESS
                (self.acked if ok else self.failed).update(calls)
            self._stop.wait(self.pause_s)
        exporter.shutdown()

    def wait_for_exports(self, count: int, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.exports < count:
            assert time.monotonic() < deadline, f"only {self.exports} exports in {timeout_s} s"
            time.sleep(0.05)

    def stop(self, timeout_s: float = 120.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout_s)
            assert not thread.is_alive(), "an exporter never returned"


def stored_call_ids(database_url: str) -> set[str]:
    """Every log record's call id the database holds."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            return {row[0] for row in connection.execute(select(LOG_RECORDS.c.call_id))}
    finally:
        engine.dispose()
