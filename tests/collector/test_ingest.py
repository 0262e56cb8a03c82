"""OTLP/HTTP ingest (contract sections 1, 2, 4, 5) against a live collector.

Real parts only: the collector runs under uvicorn and is reached over HTTP, storage is
a SQLite file and a PostgreSQL database (the ``collector`` fixture runs each test on
both), and the first tests speak through the stock OpenTelemetry SDK and its OTLP/HTTP
exporter, not through ctxledger's SDK.
"""

from __future__ import annotations

import gzip
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import httpx
import psycopg
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from ctxledger import semconv as sc
from ctxledger_collector.ops.settings import Settings
from tests.collector import otlp_payloads as op
from tests.collector.live_collector import LiveCollector

POSTGRES_ADMIN = os.environ.get(
    "CTXLEDGER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)
CALL = "call_search_1"
REQUEST = "req_step_2"


# --- helpers ---------------------------------------------------------------------------


def _wait_for_error_log(collector: LiveCollector) -> None:
    """After a 500 the server thread logs the traceback; one more round trip ensures it
    is done. (CPython 3.11 breaks when two threads build tracebacks/ASTs at once, which
    pytest does while reporting the failure.)"""
    with collector.client() as http:
        http.get("/healthz")


def post(
    collector: LiveCollector,
    body: bytes | Iterator[bytes],
    content_type: str | None = op.PROTOBUF,
    **headers: str,
) -> httpx.Response:
    """One export request on a fresh connection (an error answer may close it)."""
    sent = {k.replace("_", "-"): v for k, v in headers.items()}
    if content_type is not None:
        sent["content-type"] = content_type
    with collector.client() as http:
        answer = http.post("/v1/traces", content=body, headers=sent)
    if answer.status_code >= 500 and answer.status_code != 503:
        _wait_for_error_log(collector)
    return answer


def reports(collector: LiveCollector, trace_id: bytes | str) -> list[dict[str, Any]]:
    trace_hex = trace_id if isinstance(trace_id, str) else trace_id.hex()
    with collector.client() as http:
        answer = http.get("/api/v1/reports", params={"trace_id": trace_hex})
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["reports"]
    return found


def metric_samples(collector: LiveCollector) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with collector.client() as http:
        answer = http.get("/metrics")
    if answer.status_code != 200:
        _wait_for_error_log(collector)
    assert answer.status_code == 200, answer.text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def spans_counted(collector: LiveCollector) -> dict[str, float]:
    samples = metric_samples(collector)
    return {
        kind: samples.get(("ctxledger_ingest_spans_total", frozenset({("kind", kind)})), 0.0)
        for kind in ("measurement", "manifest", "ignored", "rejected")
    }


def requests_counted(collector: LiveCollector, encoding: str, status: int) -> float:
    key = frozenset({("encoding", encoding), ("status", str(status))})
    return metric_samples(collector).get(("ctxledger_ingest_requests_total", key), 0.0)


def stage_table(report: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    return [(s["stage"], s["chars"], s["tokens"], s["items"]) for s in report["stages"]]


def assert_reference_journey(
    found: list[dict[str, Any]], trace_hex: str, call_id: str = CALL, request_id: str = REQUEST
) -> dict[str, Any]:
    """The reference journey of otlp_payloads: silent, 30 items lost, ids named."""
    assert len(found) == 1, found
    report = found[0]
    assert stage_table(report) == [tuple(stage) for stage in op.JOURNEY_STAGES]
    assert report["trace_id"] == trace_hex
    assert report["tool_call_id"] == call_id
    assert report["tool_name"] == op.TOOL_NAME
    assert report["request_id"] == request_id
    assert report["agent_name"] == op.SERVICE_NAME
    assert report["verdict"] == sc.VERDICT_SILENT
    assert report["settled"] is True
    assert report["lost_items"] == 30
    assert sorted(report["lost_item_ids"]) == sorted(op.LOST_IDS)
    assert [s["order"] for s in report["stages"]] == [10, 20, 30, 40]
    assert [(t["from_stage"], t["to_stage"], t["verdict"]) for t in report["transitions"]] == [
        (sc.STAGE_ORIGINAL, sc.STAGE_SERIALIZED, sc.VERDICT_INTACT),
        (sc.STAGE_SERIALIZED, sc.STAGE_ASSEMBLED, sc.VERDICT_SILENT),
        (sc.STAGE_ASSEMBLED, sc.STAGE_SENT, sc.VERDICT_INTACT),
    ]
    return report


def emit_reference_journey(provider: TracerProvider, call_id: str = CALL) -> str:
    """Emit the contract's spans by hand with the stock OTel API; returns the trace id."""
    tracer = provider.get_tracer("hand-written-client")
    with tracer.start_as_current_span("agent.run") as root:  # not ours: ignored
        for attrs in op.journey_attributes(call_id, REQUEST):
            name = sc.SPAN_MEASUREMENT if sc.STAGE in attrs else sc.SPAN_MANIFEST
            with tracer.start_as_current_span(name, attributes=attrs):
                pass
    return format(root.get_span_context().trace_id, "032x")


def stock_provider() -> TracerProvider:
    return TracerProvider(resource=Resource.create({sc.SERVICE_NAME: op.SERVICE_NAME}))


def finished_stock_spans(call_id: str = CALL) -> tuple[str, Sequence[ReadableSpan]]:
    """The reference journey as finished stock-SDK spans, to hand to an exporter."""
    memory = InMemorySpanExporter()
    provider = stock_provider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace_hex = emit_reference_journey(provider, call_id)
    provider.shutdown()
    return trace_hex, memory.get_finished_spans()


def without_volatile(report: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("judged_at", *names)}


# --- 1. the stock OpenTelemetry SDK and exporter ----------------------------------------


@pytest.mark.parametrize(
    "compression", [Compression.NoCompression, Compression.Gzip], ids=["identity", "gzip"]
)
def test_stock_otel_exporter_protobuf_journey_is_judged_silent(
    collector: LiveCollector, compression: Compression
) -> None:
    exporter = OTLPSpanExporter(
        endpoint=collector.url + "/v1/traces", compression=compression, timeout=30
    )
    provider = stock_provider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace_hex = emit_reference_journey(provider)
    assert provider.force_flush()
    provider.shutdown()

    assert_reference_journey(reports(collector, trace_hex), trace_hex)
    # One export per span (SimpleSpanProcessor), each answered 200 and counted by kind.
    assert requests_counted(collector, "protobuf", 200) == 6
    assert spans_counted(collector) == {
        "measurement": 4,
        "manifest": 1,
        "ignored": 1,
        "rejected": 0,
    }


# --- 2. OTLP JSON as another language's client sends it ----------------------------------


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_otlp_json_journey_is_judged_silent(collector: LiveCollector, encoding: str) -> None:
    trace_id = op.new_trace_id()
    # Upper-case hex with gzip: OTLP JSON ids are hex, whatever the case.
    body = op.json_body(
        trace_id,
        [*op.journey_spans(CALL, REQUEST), op.plain_span()],
        upper_hex=encoding == "gzip",
    )
    assert b'"intValue": "5000"' in body and b'"arrayValue"' in body
    headers = {"content_encoding": "gzip"} if encoding == "gzip" else {}
    answer = post(
        collector,
        op.gzipped(body) if encoding == "gzip" else body,
        "application/json; charset=utf-8",
        **headers,
    )

    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith(op.JSON_TYPE)
    response = json_format.Parse(answer.text, ExportTraceServiceResponse())
    assert not response.HasField("partial_success")
    assert_reference_journey(reports(collector, trace_id), trace_id.hex())
    assert requests_counted(collector, "json", 200) == 1


# --- 3. partial success ------------------------------------------------------------------


def _bad_spans() -> dict[str, op.Span]:
    """Spans that claim to be measurements but break the contract, by expected reason."""

    def stage(call_id: str, **overrides: Any) -> dict[str, Any]:
        attrs = op.stage_attributes(
            sc.STAGE_ORIGINAL, call_id, chars=900, tokens=220, items=9, step=1
        )
        attrs.update(overrides)
        return {k: v for k, v in attrs.items() if v is not None}

    return {
        sc.STAGE_ORDER: op.Span(stage("call_bad_custom", **{sc.STAGE: "reranked"})),
        f"{sc.TOOL_CALL_ID} is required": op.Span(stage("x", **{sc.TOOL_CALL_ID: None})),
        f"{sc.SIZE_CHARS} must be an int": op.Span(
            stage("call_bad_chars", **{sc.SIZE_CHARS: "900"})
        ),
        f"needs {sc.REQUEST_ID}": op.Span(
            stage("call_bad_request", **{sc.STAGE: sc.STAGE_ASSEMBLED})
        ),
    }


def test_partial_success_rejects_bad_spans_and_keeps_the_rest(collector: LiveCollector) -> None:
    # JSON: four contract breaches, one span with a non-hex trace id, two foreign spans.
    json_trace = op.new_trace_id()
    json_bad = _bad_spans()
    json_bad["traceId is not hex"] = op.Span(
        op.stage_attributes(sc.STAGE_ORIGINAL, "call_bad_trace", chars=9, tokens=2, items=1),
        json_trace_id="zz" * 16,
    )
    good_json = op.journey_spans("call_good_json", REQUEST)
    spans = [good_json[0], *json_bad.values(), *good_json[1:], op.plain_span(), op.plain_span()]
    answer = post(collector, op.json_body(json_trace, spans), op.JSON_TYPE)

    assert answer.status_code == 200, answer.text
    partial = answer.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 5
    for reason, span in json_bad.items():
        assert reason in partial["errorMessage"]
        assert span.span_id.hex() in partial["errorMessage"]
    assert_reference_journey(reports(collector, json_trace), json_trace.hex(), "call_good_json")

    # Protobuf: the same four breaches and one foreign span.
    proto_trace = op.new_trace_id()
    proto_bad = _bad_spans()
    good_proto = op.journey_spans("call_good_proto", REQUEST)
    spans = [*good_proto[:2], *proto_bad.values(), *good_proto[2:], op.plain_span()]
    answer = post(collector, op.proto_body(proto_trace, spans))

    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == op.PROTOBUF
    response = ExportTraceServiceResponse.FromString(answer.content)
    assert response.partial_success.rejected_spans == 4
    for reason, span in proto_bad.items():
        assert reason in response.partial_success.error_message
        assert span.span_id.hex() in response.partial_success.error_message
    assert_reference_journey(reports(collector, proto_trace), proto_trace.hex(), "call_good_proto")

    assert spans_counted(collector) == {
        "measurement": 8,
        "manifest": 2,
        "ignored": 3,
        "rejected": 9,
    }
    assert requests_counted(collector, "json", 200) == 1
    assert requests_counted(collector, "protobuf", 200) == 1


def test_foreign_spans_alone_are_accepted_not_rejected(collector: LiveCollector) -> None:
    trace_id = op.new_trace_id()
    answer = post(collector, op.proto_body(trace_id, [op.plain_span(), op.plain_span("db")]))

    assert answer.status_code == 200
    assert not ExportTraceServiceResponse.FromString(answer.content).HasField("partial_success")
    assert reports(collector, trace_id) == []
    assert spans_counted(collector) == {
        "measurement": 0,
        "manifest": 0,
        "ignored": 2,
        "rejected": 0,
    }


# --- 4. status codes ----------------------------------------------------------------------


def _status(answer: httpx.Response) -> status_pb2.Status:
    assert answer.headers["content-type"] == op.PROTOBUF
    return status_pb2.Status.FromString(answer.content)


def test_malformed_bodies_get_400_saying_what_is_wrong(collector: LiveCollector) -> None:
    trace_id = op.new_trace_id()
    valid = op.proto_body(trace_id, op.journey_spans(CALL, REQUEST))

    answer = post(collector, valid[:-7])  # truncated protobuf
    assert answer.status_code == 400
    status = _status(answer)
    assert status.code == 3  # INVALID_ARGUMENT
    assert "protobuf ExportTraceServiceRequest" in status.message

    answer = post(collector, b'{"resourceSpans": [', op.JSON_TYPE)
    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith(op.JSON_TYPE)
    error = answer.json()
    assert error["code"] == 3
    assert "not valid JSON" in error["message"]

    answer = post(collector, b'{"resourceSpans": {"spans": []}}', op.JSON_TYPE)
    assert answer.status_code == 400
    assert "OTLP JSON" in answer.json()["message"]

    answer = post(collector, b"this is not gzip", content_encoding="gzip")
    assert answer.status_code == 400
    assert "not valid gzip" in _status(answer).message

    answer = post(collector, op.gzipped(valid)[:-12], content_encoding="gzip")
    assert answer.status_code == 400
    assert "truncated" in _status(answer).message

    assert reports(collector, trace_id) == []
    assert requests_counted(collector, "protobuf", 400) == 3
    assert requests_counted(collector, "json", 400) == 2


def test_unsupported_content_type_or_encoding_gets_415(collector: LiveCollector) -> None:
    trace_id = op.new_trace_id()
    valid = op.proto_body(trace_id, op.journey_spans(CALL, REQUEST))

    answer = post(collector, valid, "text/plain")
    assert answer.status_code == 415
    assert "Content-Type 'text/plain'" in answer.json()["message"]

    answer = post(collector, valid, None)
    assert answer.status_code == 415

    answer = post(collector, valid, content_encoding="br")
    assert answer.status_code == 415
    assert "Content-Encoding 'br'" in _status(answer).message

    assert reports(collector, trace_id) == []


def test_bodies_over_the_limits_get_413(database_url: str) -> None:
    settings = Settings(
        database_url=database_url,
        auto_migrate=True,
        sweep_interval_s=3600,
        max_body_bytes=1000,
        max_decompressed_bytes=50_000,
    )
    with LiveCollector(settings) as collector:
        small_trace = op.new_trace_id()
        small = op.proto_body(
            small_trace,
            [op.Span(op.stage_attributes(sc.STAGE_ORIGINAL, CALL, chars=9, tokens=2, items=1))],
        )
        assert len(small) < 1000
        assert post(collector, small).status_code == 200
        assert len(reports(collector, small_trace)) == 1

        big_trace = op.new_trace_id()
        big = op.proto_body(big_trace, op.journey_spans(CALL, REQUEST))
        assert len(big) > 1000
        answer = post(collector, big)  # Content-Length declared
        assert answer.status_code == 413
        status = _status(answer)
        assert status.code == 8  # RESOURCE_EXHAUSTED
        assert "limit of 1000" in status.message

        answer = post(collector, iter([big[:600], big[600:]]))  # chunked, no Content-Length
        assert answer.status_code == 413
        assert "limit of 1000" in _status(answer).message

        bomb = gzip.compress(b"\0" * 400_000)
        assert len(bomb) < 1000
        answer = post(collector, bomb, content_encoding="gzip")
        assert answer.status_code == 413
        assert "decompressed body is over the limit of 50000" in _status(answer).message

        assert reports(collector, big_trace) == []
        assert requests_counted(collector, "protobuf", 413) == 3


def test_api_keys_are_required_when_configured(database_url: str) -> None:
    settings = Settings(
        database_url=database_url, auto_migrate=True, sweep_interval_s=3600, api_keys="k1, k2"
    )
    with LiveCollector(settings) as collector:
        trace_id = op.new_trace_id()
        body = op.proto_body(trace_id, op.journey_spans(CALL, REQUEST))

        answer = post(collector, body)
        assert answer.status_code == 401
        assert _status(answer).code == 16  # UNAUTHENTICATED
        assert post(collector, body, authorization="Bearer k3").status_code == 401
        assert post(collector, body, authorization="Basic k2").status_code == 401
        answer = post(collector, op.json_body(trace_id, []), op.JSON_TYPE)
        assert answer.status_code == 401
        assert "API key" in answer.json()["message"]
        assert reports(collector, trace_id) == []

        assert post(collector, body, authorization="Bearer k2").status_code == 200
        assert_reference_journey(reports(collector, trace_id), trace_id.hex())

        # The stock exporter with a header, as users configure it.
        stock_trace, spans = finished_stock_spans("call_stock")
        endpoint = collector.url + "/v1/traces"
        wrong = OTLPSpanExporter(endpoint=endpoint, headers={"Authorization": "Bearer nope"})
        assert wrong.export(spans) == SpanExportResult.FAILURE
        assert reports(collector, stock_trace) == []
        right = OTLPSpanExporter(endpoint=endpoint, headers={"Authorization": "Bearer k1"})
        assert right.export(spans) == SpanExportResult.SUCCESS
        assert_reference_journey(reports(collector, stock_trace), stock_trace, "call_stock")
        assert requests_counted(collector, "protobuf", 401) == 4


# --- 5. storage outage ----------------------------------------------------------------------


def _set_connections(database: str, *, allowed: bool) -> None:
    """Open or close a PostgreSQL database to connections; closing kills its sessions."""
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(allowed).lower()}')
        if not allowed:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            )


def _requests_503(collector: LiveCollector) -> float:
    # Read the counter itself: /metrics also reads the database, which is down.
    metrics = collector.app.state.ctxledger.metrics
    return sum(
        sample.value
        for family in metrics.requests.collect()
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels.get("status") == "503"
    )


def test_storage_outage_gets_503_with_retry_after_and_nothing_is_lost(
    postgres_url: str,
) -> None:
    database = postgres_url.rsplit("/", 1)[1]
    settings = Settings(  # without a spool (tests/reliability has it): 503 during the outage
        database_url=postgres_url,
        auto_migrate=True,
        sweep_interval_s=3600,
        retry_after_s=1,
        ingest_spool_dir="off",
    )
    with LiveCollector(settings) as collector:
        warm = op.new_trace_id()  # the pool holds live connections when the outage starts
        answer = post(collector, op.proto_body(warm, op.journey_spans(CALL, REQUEST)))
        assert answer.status_code == 200
        trace_id = op.new_trace_id()
        spans = op.journey_spans(CALL, REQUEST)
        body = op.proto_body(trace_id, spans)
        stock_trace, stock_spans = finished_stock_spans("call_stock")
        exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces", timeout=120)
        outcome: list[SpanExportResult] = []
        retrier = threading.Thread(target=lambda: outcome.append(exporter.export(stock_spans)))

        _set_connections(database, allowed=False)
        try:
            answer = post(collector, body)
            assert answer.status_code == 503
            assert answer.headers["retry-after"] == "1"
            assert _status(answer).code == 14  # UNAVAILABLE
            answer = post(collector, op.json_body(trace_id, spans), op.JSON_TYPE)
            assert answer.status_code == 503
            assert answer.headers["retry-after"] == "1"
            assert answer.json()["code"] == 14

            # The stock exporter, refused, retries on its own after Retry-After.
            retrier.start()
            deadline = time.monotonic() + 60
            while _requests_503(collector) < 3 and retrier.is_alive():
                assert time.monotonic() < deadline, "the exporter never reached the collector"
                time.sleep(0.05)
            assert retrier.is_alive(), f"the exporter gave up: {outcome}"
        finally:
            _set_connections(database, allowed=True)
        retrier.join(timeout=120)

        assert outcome == [SpanExportResult.SUCCESS]
        assert_reference_journey(reports(collector, stock_trace), stock_trace, "call_stock")
        assert post(collector, body).status_code == 200
        assert_reference_journey(reports(collector, trace_id), trace_id.hex())


def test_metrics_can_be_scraped_during_a_storage_outage(postgres_url: str) -> None:
    database = postgres_url.rsplit("/", 1)[1]
    settings = Settings(
        database_url=postgres_url, auto_migrate=True, sweep_interval_s=3600, ingest_spool_dir="off"
    )
    with LiveCollector(settings) as collector:
        _set_connections(database, allowed=False)
        try:
            trace_id = op.new_trace_id()
            answer = post(collector, op.proto_body(trace_id, op.journey_spans(CALL, REQUEST)))
            assert answer.status_code == 503
            assert requests_counted(collector, "protobuf", 503) == 1
        finally:
            _set_connections(database, allowed=True)


# --- 6. idempotence and order independence ----------------------------------------------


def test_the_same_batch_twice_gives_identical_reports(collector: LiveCollector) -> None:
    trace_id = op.new_trace_id()
    spans = op.journey_spans(CALL, REQUEST)

    assert post(collector, op.proto_body(trace_id, spans)).status_code == 200
    first = reports(collector, trace_id)
    assert_reference_journey(first, trace_id.hex())
    assert post(collector, op.proto_body(trace_id, spans)).status_code == 200
    second = reports(collector, trace_id)
    # The same spans again in the other encoding.
    assert post(collector, op.json_body(trace_id, spans), op.JSON_TYPE).status_code == 200
    third = reports(collector, trace_id)

    assert [without_volatile(r) for r in second] == [without_volatile(r) for r in first]
    assert [without_volatile(r) for r in third] == [without_volatile(r) for r in first]
    with collector.client() as http:
        run = http.get(f"/api/v1/runs/{trace_id.hex()}").json()
    assert run["journeys"] == 1
    assert run["verdicts"] == {sc.VERDICT_SILENT: 1}


def test_stages_in_reverse_one_per_request_judge_like_one_ordered_batch(
    collector: LiveCollector,
) -> None:
    start = time.time_ns()
    spans = op.journey_spans(CALL, REQUEST, start_ns=start)
    # A stale copy of the assembled stage (earlier, still all 50 rows): the later one wins.
    stale = op.Span(
        op.stage_attributes(
            sc.STAGE_ASSEMBLED,
            CALL,
            chars=5150,
            tokens=1290,
            items=50,
            ids=op.ITEM_IDS,
            request_id=REQUEST,
            step=2,
        ),
        end_time_unix_nano=start + 1_500_000,
    )
    spans.insert(2, stale)
    in_order, reversed_trace = op.new_trace_id(), op.new_trace_id()

    assert post(collector, op.proto_body(in_order, spans)).status_code == 200
    for index, span in enumerate(reversed(op.with_new_span_ids(spans))):
        if index % 2:
            answer = post(collector, op.json_body(reversed_trace, [span]), op.JSON_TYPE)
        else:
            answer = post(collector, op.proto_body(reversed_trace, [span]))
        assert answer.status_code == 200, answer.text

    expected = reports(collector, in_order)
    assert_reference_journey(expected, in_order.hex())
    got = reports(collector, reversed_trace)
    assert_reference_journey(got, reversed_trace.hex())
    assert [without_volatile(r, "trace_id", "links") for r in got] == [
        without_volatile(r, "trace_id", "links") for r in expected
    ]


# --- 7. incomplete journeys -------------------------------------------------------------


def test_journey_without_later_stages_becomes_incomplete_after_the_grace_period(
    collector: LiveCollector,
) -> None:
    trace_id = op.new_trace_id()
    spans = op.journey_spans(CALL, REQUEST)
    assert post(collector, op.proto_body(trace_id, spans[:2])).status_code == 200

    (waiting,) = reports(collector, trace_id)
    assert waiting["verdict"] == sc.VERDICT_INTACT
    assert waiting["settled"] is False
    assert waiting["request_id"] is None
    assert [s["stage"] for s in waiting["stages"]] == [sc.STAGE_ORIGINAL, sc.STAGE_SERIALIZED]

    store = collector.app.state.ctxledger.store
    assert store.sweep_unsettled(now=time.time()).reports == []  # still within the grace period
    assert reports(collector, trace_id)[0]["settled"] is False

    swept = store.sweep_unsettled(now=time.time() + 10_000).reports
    assert [r.verdict for r in swept] == [sc.VERDICT_INCOMPLETE]
    (incomplete,) = reports(collector, trace_id)
    assert incomplete["verdict"] == sc.VERDICT_INCOMPLETE
    assert incomplete["settled"] is True
    assert any("grace period" in note for note in incomplete["notes"])

    # The later stages arrive after all: the journey is judged whole, the stale one goes.
    assert post(collector, op.proto_body(trace_id, spans[2:])).status_code == 200
    assert_reference_journey(reports(collector, trace_id), trace_id.hex())


# --- 8. attributes dropped in transit ---------------------------------------------------


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_dropped_attributes_are_noted_not_trusted(collector: LiveCollector, encoding: str) -> None:
    trace_id = op.new_trace_id()
    spans = op.journey_spans(CALL, REQUEST)
    sent = spans[3]
    assert sent.attributes[sc.STAGE] == sc.STAGE_SENT
    # The sent stage lost 4 attributes on the way, and its id list is short: not trusted.
    spans[3] = op.Span(
        {**sent.attributes, sc.ITEMS_IDS: list(op.KEPT_IDS[:10])},
        end_time_unix_nano=sent.end_time_unix_nano,
        dropped_attributes_count=4,
    )
    if encoding == "json":
        answer = post(collector, op.json_body(trace_id, spans), op.JSON_TYPE)
    else:
        answer = post(collector, op.proto_body(trace_id, spans))
    assert answer.status_code == 200, answer.text

    report = assert_reference_journey(reports(collector, trace_id), trace_id.hex())
    assert [s["trusted"] for s in report["stages"]] == [True, True, True, False]
    assert any(
        "sent" in note and "lost 4 attributes in transit" in note for note in report["notes"]
    ), report["notes"]


# --- bodies and values that once lost data ------------------------------------------------


def test_multi_member_gzip_body_is_read_whole(collector: LiveCollector) -> None:
    trace_id = op.new_trace_id()
    spans = op.journey_spans(CALL, REQUEST)
    # Concatenated protobuf messages merge: the two halves make one request.
    first, second = op.proto_body(trace_id, spans[:3]), op.proto_body(trace_id, spans[3:])
    assert gzip.decompress(gzip.compress(first) + gzip.compress(second)) == first + second

    answer = post(collector, gzip.compress(first) + gzip.compress(second), content_encoding="gzip")

    assert answer.status_code == 200
    assert_reference_journey(reports(collector, trace_id), trace_id.hex())


# Values a valid OTLP client can send that the collector cannot store. Each should at
# worst reject its own span; the rest of the batch must be stored.
def _with(span: op.Span, **attributes: Any) -> op.Span:
    return replace(span, attributes={**span.attributes, **attributes})


_POISON: dict[str, tuple[bool, Callable[[op.Span], op.Span]]] = {
    # name: (fails on PostgreSQL only, how to poison the original stage span)
    "nan_double_attribute": (True, lambda s: _with(s, **{"app.score": math.nan})),
    "step_over_int32": (True, lambda s: _with(s, **{sc.STEP: 2**31})),
    "span_id_of_16_bytes": (True, lambda s: replace(s, span_id=b"\x07" * 16)),
    "nul_in_tool_name": (True, lambda s: _with(s, **{sc.TOOL_NAME: "a\0b"})),
    "bytes_inside_array_attribute": (False, lambda s: _with(s, **{"app.blobs": [b"\x00\x01"]})),
}


@pytest.mark.parametrize("case", list(_POISON))
def test_one_unstorable_span_does_not_lose_the_batch(
    collector: LiveCollector, database_url: str, case: str, request: pytest.FixtureRequest
) -> None:
    _, poison = _POISON[case]
    good_trace, poisoned_trace = op.new_trace_id(), op.new_trace_id()
    poisoned = op.journey_spans("call_poisoned", REQUEST)
    poisoned[0] = poison(poisoned[0])
    poisoned = [replace(s, trace_id=poisoned_trace) for s in poisoned]
    body = op.proto_body(good_trace, [*op.journey_spans(CALL, REQUEST), *poisoned])

    answer = post(collector, body)

    assert answer.status_code == 200, answer.text
    assert_reference_journey(reports(collector, good_trace), good_trace.hex())


def test_json_integers_out_of_their_protobuf_range_reject_only_their_span(
    collector: LiveCollector,
) -> None:
    """A fixed64 end time or uint32 count outside its range is a malformed span (not a 500)."""
    import json

    trace = op.new_trace_id()
    good = op.journey_spans("call_in_range", REQUEST)
    far_future = op.Span(
        op.stage_attributes(sc.STAGE_ORIGINAL, "call_far", chars=9, tokens=2, items=1)
    )
    negative = op.Span(
        op.stage_attributes(sc.STAGE_ORIGINAL, "call_negative", chars=9, tokens=2, items=1)
    )
    document = op.json_request(trace, [*good, far_future, negative])
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[-2]["endTimeUnixNano"] = str(10**30)
    spans[-1]["droppedAttributesCount"] = -1
    answer = post(collector, json.dumps(document).encode(), op.JSON_TYPE)

    assert answer.status_code == 200, answer.text
    partial = answer.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 2
    assert partial["errorMessage"].count("out of range") == 2
    assert far_future.span_id.hex() in partial["errorMessage"]
    assert negative.span_id.hex() in partial["errorMessage"]
    assert_reference_journey(reports(collector, trace), trace.hex(), "call_in_range")


def test_a_large_export_stored_in_chunks_judges_and_rejects_like_one_batch(
    database_url: str,
) -> None:
    """With chunks of 3 spans, an export of many journeys, foreign spans and contract
    breaches spread over every chunk is stored whole, judged as one batch is, and every
    rejection is counted in the one answer."""
    calls = [f"call_chunk_{i}" for i in range(6)]
    spans: list[op.Span] = []
    for i, call in enumerate(calls):
        spans += op.journey_spans(call, f"req_chunk_{i}")
        spans.append(op.plain_span())
    bad = list(_bad_spans().values())
    for position, span in zip((2, 9, 17, 30), bad, strict=False):
        spans.insert(position, span)
    judged = []
    for chunk_spans in (3, 100_000):
        settings = Settings(
            database_url=database_url,
            auto_migrate=True,
            sweep_interval_s=3600,
            ingest_chunk_spans=chunk_spans,
        )
        trace = op.new_trace_id()
        with LiveCollector(settings) as collector:
            answer = post(collector, op.proto_body(trace, op.with_new_span_ids(spans)))
            assert answer.status_code == 200, answer.text
            partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
            assert partial.rejected_spans == len(bad[:4])
            judged.append(
                sorted(
                    (r["tool_call_id"], r["request_id"], r["verdict"], r["lost_items"])
                    for r in reports(collector, trace)
                )
            )
            assert spans_counted(collector)["ignored"] == len(calls)
    assert judged[0] == judged[1]
    assert {(call, verdict) for call, _, verdict, _ in judged[0]} >= {
        (call, sc.VERDICT_SILENT) for call in calls
    }
