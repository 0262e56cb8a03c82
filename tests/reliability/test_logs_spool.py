"""Log records met by a database that cannot take writes: the stock log exporter's
export is kept in the ingest spool (answered 200) and stored once the database is back,
every record by its id; a spooled logs export keeps its signal on disk."""

from __future__ import annotations

import time
from pathlib import Path

from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from sqlalchemy import select

from ctxledger_collector.ingest.spool import SpooledExport
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.log_table import LOG_RECORDS
from ctxledger_collector.storage.migrate import upgrade
from tests.collector.live_collector import LiveCollector
from tests.reliability.kit import metric, wait_until
from tests.reliability.test_sqlite_faults import _settings, _writable, read_only


def _stored_calls(database_url: str) -> set[str]:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            return {row.call_id for row in connection.execute(select(LOG_RECORDS.c.call_id))}
    finally:
        engine.dispose()


def test_a_spooled_logs_export_replays_as_logs() -> None:
    logs = SpooledExport(b"\x0a\x00", "application/x-protobuf", True, "logs")
    assert SpooledExport.decode(logs.encode()) == logs
    traces = SpooledExport(b"{}", "application/json", False)
    # A trace export's file is as it always was: files spooled before logs replay unchanged.
    assert traces.encode() == b"application/json\tidentity\n{}"
    assert SpooledExport.decode(traces.encode()).signal == "traces"


def test_read_only_database_spools_log_records_and_replays_them_all(tmp_path: Path) -> None:
    database = tmp_path / "ctxledger.db"
    url = f"sqlite:///{database}"
    upgrade(url)
    settings = _settings(database, ingest_spool_dir=str(tmp_path / "spool"))
    sent = {f"toolu_{i:03d}" for i in range(40)}
    with read_only(database), LiveCollector(settings) as collector:
        provider = LoggerProvider()
        exporter = OTLPLogExporter(endpoint=f"{collector.url}/v1/logs", timeout=30)
        provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
        logger = provider.get_logger("com.anthropic.claude_code.events")
        for call_id in sorted(sent):
            logger.emit(
                LogRecord(
                    timestamp=time.time_ns(),
                    event_name="claude_code.tool_result",
                    attributes={"tool_use_id": call_id, "tool_result_size_bytes": 10},
                )
            )
        provider.shutdown()
        assert metric(collector.url, "ctxledger_ingest_spooled_total", outcome="kept") >= 1
        assert _stored_calls(url) == set()

        _writable(database)
        wait_until(
            lambda: metric(collector.url, "ctxledger_ingest_spool_requests") == 0, what="replay"
        )
    assert _stored_calls(url) == sent
