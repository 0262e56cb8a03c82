"""``POST /v1/logs`` (contract section 8) on a real collector, SQLite and PostgreSQL: the
stock OpenTelemetry Python log exporter's records stored by their ids, the records the
audit does not read counted and ignored, a record with text that is not Unicode
rejected alone (protobuf and JSON), and the same keys, limits and answers as traces."""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

import httpx
import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord as ProtoLogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from sqlalchemy import select

from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.log_table import LOG_RECORDS
from tests.collector.live_collector import LiveCollector
from tests.collector.test_ingest import metric_samples

PROTOBUF = "application/x-protobuf"
JSON_TYPE = "application/json"
SESSION = "5f0c5d3e-claude-session"


def _stored(database_url: str) -> list[Any]:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            return list(connection.execute(select(LOG_RECORDS).order_by(LOG_RECORDS.c.time_us)))
    finally:
        engine.dispose()


def _counted(collector: LiveCollector) -> dict[str, float]:
    samples = metric_samples(collector)
    return {
        kind: samples.get(("ctxledger_ingest_log_records_total", frozenset({("kind", kind)})), 0)
        for kind in ("stored", "ignored", "rejected")
    }


def _post(collector: LiveCollector, body: bytes, media: str = PROTOBUF, **headers: str) -> Any:
    with collector.client() as http:
        return http.post("/v1/logs", content=body, headers={"content-type": media, **headers})


def test_the_stock_python_log_exporter_stores_the_events_the_audit_reads(
    collector: LiveCollector, collector_settings: Settings
) -> None:
    provider = LoggerProvider(resource=Resource({"service.name": "claude-code"}))
    exporter = OTLPLogExporter(endpoint=f"{collector.url}/v1/logs", timeout=30)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("com.anthropic.claude_code.events")
    base = time.time_ns()
    for index in range(5):
        logger.emit(
            LogRecord(
                timestamp=base + index * 1000,
                event_name="claude_code.tool_result",
                body="claude_code.tool_result",
                attributes={
                    "session.id": SESSION,
                    "tool_use_id": f"toolu_{index:02d}",
                    "tool_name": "Bash",
                    "tool_result_size_bytes": 2_000 + index,
                    "success": True,
                },
            )
        )
    # Codex names its events in an attribute, fills the record's own name with a code
    # location (0.171.0) and sends time 0 (its observed time counts).
    logger.emit(
        LogRecord(
            timestamp=0,
            observed_timestamp=base + 9_000,
            event_name="event otel/src/tool_result.rs:54",
            body="任务输出：213 KB",  # a body in Chinese: sized in code points and bytes
            attributes={"event.name": "codex.tool_result", "call_id": "call_codex_1"},
        )
    )
    logger.emit(LogRecord(timestamp=base, body="GET /healthz 200"))  # not an audited event
    provider.shutdown()

    rows = _stored(collector_settings.database_url)
    assert [(r.event_name, r.call_id) for r in rows] == [
        *(("claude_code.tool_result", f"toolu_{i:02d}") for i in range(5)),
        ("codex.tool_result", "call_codex_1"),
    ]
    first, codex = rows[0], rows[-1]
    assert (first.session_id, first.service_name) == (SESSION, "claude-code")
    assert json.loads(first.numbers) == {"tool_result_size_bytes": 2_000, "success": True}
    assert first.time_us == base // 1000
    assert codex.time_us == (base + 9_000) // 1000
    assert (codex.body_chars, codex.body_bytes) == (11, 21)  # code points, UTF-8 bytes
    assert all(r.body is None for r in rows)  # content stays out unless opted in
    assert _counted(collector) == {"stored": 6, "ignored": 1, "rejected": 0}


def _proto_record(index: int, **attributes: str) -> ProtoLogRecord:
    return ProtoLogRecord(
        time_unix_nano=1_800_000_000_000_000_000 + index,
        event_name="claude_code.api_request_body",
        body=AnyValue(string_value=f"request {index}"),
        attributes=[
            KeyValue(key="tool_use_id", value=AnyValue(string_value=f"toolu_{index}")),
            *(KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attributes.items()),
        ],
    )


def _proto_body(records: list[ProtoLogRecord]) -> bytes:
    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    scope.log_records.extend(records)
    return request.SerializeToString()


def test_a_protobuf_record_with_invalid_utf8_is_rejected_alone(
    collector: LiveCollector, collector_settings: Settings
) -> None:
    body = _proto_body([_proto_record(i) for i in range(4)])
    marker = b"request 2"
    assert body.count(marker) == 1
    broken = body.replace(marker, b"request\xff2")  # same length: invalid UTF-8 in one
    answer = _post(collector, broken)
    assert answer.status_code == 200, answer.text
    response = ExportLogsServiceResponse.FromString(answer.content)
    assert response.partial_success.rejected_log_records == 1
    assert "not valid UTF-8" in response.partial_success.error_message
    rows = _stored(collector_settings.database_url)
    assert {r.call_id for r in rows} == {"toolu_0", "toolu_1", "toolu_3"}
    assert _counted(collector)["rejected"] == 1
    with collector.client() as http:
        listed = http.get("/api/v1/rejections").json()["rejections"]
    assert [r["reason"] for r in listed] == ["malformed_span"]


def _json_record(index: int, body: str) -> dict[str, Any]:
    return {
        "timeUnixNano": str(1_800_000_000_000_000_000 + index),
        "eventName": "codex.tool_result",
        "body": {"stringValue": body},
        "attributes": [{"key": "call_id", "value": {"stringValue": f"call_{index}"}}],
    }


def test_a_json_record_with_a_lone_surrogate_is_rejected_alone_and_gzip_works(
    collector: LiveCollector, collector_settings: Settings
) -> None:
    records = [_json_record(0, "ok"), _json_record(1, "\ud800 bad"), _json_record(2, "fine")]
    text = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]})
    answer = _post(
        collector, gzip.compress(text.encode()), JSON_TYPE, **{"content-encoding": "gzip"}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["partialSuccess"]["rejectedLogRecords"] == "1"
    assert {r.call_id for r in _stored(collector_settings.database_url)} == {"call_0", "call_2"}


def test_the_same_record_sent_twice_is_stored_once(
    collector: LiveCollector, collector_settings: Settings
) -> None:
    body = _proto_body([_proto_record(7)])
    for _ in range(2):
        assert _post(collector, body).status_code == 200
    assert [r.call_id for r in _stored(collector_settings.database_url)] == ["toolu_7"]


def test_a_malformed_body_is_400_and_over_the_limit_is_413(collector: LiveCollector) -> None:
    answer = _post(collector, b"\x0a\xff\xff\xff")
    assert answer.status_code == 400 and "ExportLogsServiceRequest" in answer.text
    assert _post(collector, b"{", JSON_TYPE).status_code == 400
    wrong = _post(collector, b"{}", "text/plain")
    assert wrong.status_code == 415
    too_big = b"x" * (collector.settings.max_body_bytes + 1)
    assert _post(collector, too_big).status_code == 413


@pytest.fixture
def keyed_collector(database_url: str) -> Any:
    settings = Settings(database_url=database_url, auto_migrate=True, api_keys="ingest-key-1")
    with LiveCollector(settings) as running:
        yield running


def test_logs_ingest_needs_the_api_key_as_traces_do(keyed_collector: LiveCollector) -> None:
    body = _proto_body([_proto_record(1)])
    refused = _post(keyed_collector, body)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer")
    accepted = _post(keyed_collector, body, authorization="Bearer ingest-key-1")
    assert accepted.status_code == 200
    with httpx.Client(base_url=keyed_collector.url) as http:
        assert http.post("/v1/logs", content=body).status_code == 401


def test_the_span_limits_hold_for_log_records(tmp_path: Any) -> None:
    """Too many records in one export is a 413 with nothing stored; a record over the
    attribute or value limits is rejected alone (counted, listed), its export kept."""
    url = f"sqlite:///{tmp_path / 'limits.db'}"
    settings = Settings(
        database_url=url,
        auto_migrate=True,
        max_spans_per_request=5,
        max_span_attributes=3,
        max_value_chars=64,
    )
    with LiveCollector(settings) as limited:
        crowded = _post(limited, _proto_body([_proto_record(i) for i in range(6)]))
        assert crowded.status_code == 413 and "log records" in crowded.text
        records = [
            _proto_record(0),
            _proto_record(1, a="1", b="2", c="3"),  # 4 attributes
            _proto_record(2, long="x" * 65),  # a value over 64 chars
            _proto_record(3),
        ]
        answer = _post(limited, _proto_body(records))
        assert answer.status_code == 200, answer.text
        response = ExportLogsServiceResponse.FromString(answer.content)
        assert response.partial_success.rejected_log_records == 2
        with limited.client() as http:
            listed = http.get("/api/v1/rejections").json()["rejections"]
        assert sorted(r["reason"] for r in listed) == ["too_many_attributes", "value_too_long"]
        assert all(r["span_id"].startswith("log:") for r in listed)  # no span id: a digest
    assert {r.call_id for r in _stored(url)} == {"toolu_0", "toolu_3"}


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1" * 100_000, "NaN"])
def test_a_json_record_holding_a_number_no_record_can_hold_is_rejected_alone(
    collector: LiveCollector, collector_settings: Settings, number: str
) -> None:
    records = [_json_record(i, f"result {i}") for i in range(100)]
    records[41]["attributes"].append({"key": "x.big", "value": {"doubleValue": "BIG"}})
    text = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]})
    answer = _post(collector, text.replace('"BIG"', number).encode(), JSON_TYPE)
    assert answer.status_code == 200, answer.text
    assert answer.json()["partialSuccess"]["rejectedLogRecords"] == "1"
    stored = {r.call_id for r in _stored(collector_settings.database_url)}
    assert stored == {f"call_{i}" for i in range(100) if i != 41}
    with collector.client() as http:
        listed = http.get("/api/v1/rejections").json()["rejections"]
    assert [r["reason"] for r in listed] == ["malformed_span"]
    assert "a number no span can hold" in listed[0]["detail"]
