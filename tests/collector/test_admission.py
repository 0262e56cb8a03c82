"""Ingest admission control against a live collector (uvicorn on a loopback port).

A request whose body is held open keeps its slot, so the tests can fill the collector
deterministically: they wait until ``/metrics`` shows the request in flight, then send
the next one. Refusals are observed from the outside: a request that sends only its
headers and gets an answer was refused before its body was read. No timing thresholds:
the timeouts below only keep a broken collector from hanging the suite.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from ctxledger import semconv as sc
from ctxledger_collector.ops.settings import Settings
from tests.collector import otlp_payloads as op
from tests.collector.live_collector import LiveCollector

HANG_GUARD_S = 30.0


def admission_settings(tmp_path: Path, **limits: Any) -> Settings:
    return Settings(
        database_url=f"sqlite:///{tmp_path / 'ctxledger.db'}",
        auto_migrate=True,
        sweep_interval_s=3600,
        **limits,
    )


def journey_body(call_id: str = "call_admission") -> tuple[bytes, str]:
    trace_id = op.new_trace_id()
    return op.proto_body(trace_id, op.journey_spans(call_id, "req_admission")), trace_id.hex()


class HeldRequest:
    """An export whose headers and first body bytes are sent; the rest waits for
    :meth:`finish`. ``declared`` may exceed the body to send headers only."""

    def __init__(self, collector: LiveCollector, body: bytes, sent: int, declared: int) -> None:
        self.connection = http.client.HTTPConnection(
            "127.0.0.1", collector.port, timeout=HANG_GUARD_S
        )
        self.body = body
        self.sent = sent
        self.connection.putrequest("POST", "/v1/traces")
        self.connection.putheader("Content-Type", op.PROTOBUF)
        self.connection.putheader("Content-Length", str(declared))
        self.connection.endheaders()
        if sent:
            self.connection.send(body[:sent])

    def answer(self) -> http.client.HTTPResponse:
        """The answer, without sending any more of the body."""
        return self.connection.getresponse()

    def finish(self) -> http.client.HTTPResponse:
        self.connection.send(self.body[self.sent :])
        return self.connection.getresponse()

    def close(self) -> None:
        self.connection.close()


def metric(collector: LiveCollector, name: str, **labels: str) -> float:
    with httpx.Client(base_url=collector.url, timeout=HANG_GUARD_S) as client:
        text = client.get("/metrics").text
    wanted = set(labels.items())
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and wanted <= set(sample.labels.items()):
                return float(sample.value)
    return 0.0


def wait_for_metric(collector: LiveCollector, name: str, at_least: float, **labels: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while metric(collector, name, **labels) < at_least:
        assert time.monotonic() < deadline, f"{name} never reached {at_least}"
        time.sleep(0.02)


def post(collector: LiveCollector, body: bytes) -> httpx.Response:
    with httpx.Client(base_url=collector.url, timeout=HANG_GUARD_S) as client:
        return client.post("/v1/traces", content=body, headers={"content-type": op.PROTOBUF})


def report_count(collector: LiveCollector, trace_hex: str) -> int:
    with httpx.Client(base_url=collector.url, timeout=HANG_GUARD_S) as client:
        answer = client.get("/api/v1/reports", params={"trace_id": trace_hex})
    assert answer.status_code == 200, answer.text
    total: int = answer.json()["total"]
    return total


@pytest.fixture
def one_slot(tmp_path: Path) -> Iterator[LiveCollector]:
    settings = admission_settings(
        tmp_path, ingest_max_requests=1, ingest_admission_wait_s=0, ingest_busy_retry_after_s=1
    )
    with LiveCollector(settings) as collector:
        yield collector


def test_a_second_request_is_refused_while_the_only_slot_is_held_then_its_retry_is_stored(
    one_slot: LiveCollector,
) -> None:
    first_body, first_trace = journey_body("call_first")
    second_body, second_trace = journey_body("call_second")
    held = HeldRequest(one_slot, first_body, len(first_body) // 2, len(first_body))
    try:
        wait_for_metric(one_slot, "ctxledger_ingest_in_flight_requests", 1)

        refused = post(one_slot, second_body)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        status = status_pb2.Status.FromString(refused.content)
        assert status.code == 14  # UNAVAILABLE: the stock exporters retry it
        assert "busy" in status.message
        assert report_count(one_slot, second_trace) == 0
        assert metric(one_slot, "ctxledger_ingest_refused_total", reason="requests") == 1

        assert held.finish().status == 200
    finally:
        held.close()
    assert report_count(one_slot, first_trace) == 1

    assert post(one_slot, second_body).status_code == 200
    assert report_count(one_slot, second_trace) == 1
    assert metric(one_slot, "ctxledger_ingest_in_flight_requests") == 0
    assert metric(one_slot, "ctxledger_ingest_in_flight_bytes") == 0


def test_a_refused_request_is_answered_from_its_headers_alone(one_slot: LiveCollector) -> None:
    first_body, _ = journey_body("call_first")
    held = HeldRequest(one_slot, first_body, 10, len(first_body))
    headers_only = None
    try:
        wait_for_metric(one_slot, "ctxledger_ingest_in_flight_requests", 1)
        second_body, _ = journey_body("call_second")
        headers_only = HeldRequest(one_slot, second_body, 0, len(second_body))
        answer = headers_only.answer()  # not one byte of its body was sent
        assert answer.status == 503
        assert answer.getheader("retry-after") == "1"
    finally:
        held.close()
        if headers_only is not None:
            headers_only.close()


def stock_spans(call_id: str) -> tuple[str, list[ReadableSpan]]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: op.SERVICE_NAME}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("admission-test")
    with tracer.start_as_current_span("agent.run") as root:
        for attrs in op.journey_attributes(call_id, "req_admission"):
            name = sc.SPAN_MEASUREMENT if sc.STAGE in attrs else sc.SPAN_MANIFEST
            with tracer.start_as_current_span(name, attributes=attrs):
                pass
    provider.shutdown()
    return format(root.get_span_context().trace_id, "032x"), list(memory.get_finished_spans())


def test_the_stock_exporter_retries_after_a_busy_refusal_and_its_batch_is_stored(
    one_slot: LiveCollector,
) -> None:
    first_body, _ = journey_body("call_first")
    trace_hex, spans = stock_spans("call_stock")
    held = HeldRequest(one_slot, first_body, 10, len(first_body))
    outcome: list[SpanExportResult] = []
    exporter = OTLPSpanExporter(endpoint=one_slot.url + "/v1/traces", timeout=HANG_GUARD_S)
    try:
        wait_for_metric(one_slot, "ctxledger_ingest_in_flight_requests", 1)
        exporting = threading.Thread(target=lambda: outcome.append(exporter.export(spans)))
        exporting.start()
        wait_for_metric(one_slot, "ctxledger_ingest_refused_total", 1, reason="requests")
        assert held.finish().status == 200
        exporting.join(HANG_GUARD_S)
    finally:
        held.close()
        exporter.shutdown()
    assert outcome == [SpanExportResult.SUCCESS]
    assert report_count(one_slot, trace_hex) == 1


def test_a_body_that_does_not_fit_the_bytes_left_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    first_body, first_trace = journey_body("call_first")
    budget = len(first_body) + 1_000
    settings = admission_settings(
        tmp_path,
        ingest_max_requests=4,
        ingest_max_inflight_bytes=budget,
        ingest_admission_wait_s=0,
        max_body_bytes=100_000,
    )
    with LiveCollector(settings) as collector:
        held = HeldRequest(collector, first_body, 10, len(first_body))
        over = None
        try:
            wait_for_metric(collector, "ctxledger_ingest_in_flight_bytes", len(first_body))
            over = HeldRequest(collector, b"", 0, 1_001)  # one byte more than is left
            answer = over.answer()  # headers only: refused before any body byte
            assert answer.status == 503
            assert answer.getheader("retry-after") is not None
            assert metric(collector, "ctxledger_ingest_refused_total", reason="bytes") == 1
            assert held.finish().status == 200
        finally:
            held.close()
            if over is not None:
                over.close()
        assert report_count(collector, first_trace) == 1


def test_a_body_over_the_limit_is_refused_from_its_content_length(tmp_path: Path) -> None:
    settings = admission_settings(tmp_path, max_body_bytes=1_000)
    with LiveCollector(settings) as collector:
        over = HeldRequest(collector, b"", 0, 1_001)
        try:
            answer = over.answer()
            assert answer.status == 413
        finally:
            over.close()


def test_a_body_larger_than_the_byte_budget_is_admitted_alone(tmp_path: Path) -> None:
    settings = admission_settings(tmp_path, ingest_max_inflight_bytes=100)
    with LiveCollector(settings) as collector:
        body, trace_hex = journey_body()
        assert len(body) > 100
        assert post(collector, body).status_code == 200
        assert report_count(collector, trace_hex) == 1


def test_a_chunked_body_outgrowing_the_bytes_left_is_refused(tmp_path: Path) -> None:
    first_body, _ = journey_body("call_first")
    settings = admission_settings(
        tmp_path,
        ingest_max_requests=4,
        ingest_max_inflight_bytes=len(first_body) + 1_000,
        ingest_admission_wait_s=0,
    )
    with LiveCollector(settings) as collector:
        held = HeldRequest(collector, first_body, 10, len(first_body))
        try:
            wait_for_metric(collector, "ctxledger_ingest_in_flight_bytes", len(first_body))
            chunked_body, chunked_trace = journey_body("call_chunked")
            with httpx.Client(base_url=collector.url, timeout=HANG_GUARD_S) as client:
                answer = client.post(
                    "/v1/traces",
                    content=iter([chunked_body]),  # no Content-Length: chunked
                    headers={"content-type": op.PROTOBUF},
                )
            assert answer.status_code == 503
            assert report_count(collector, chunked_trace) == 0
            assert held.finish().status == 200
        finally:
            held.close()


def test_a_stalled_body_is_answered_408_and_frees_its_slot(tmp_path: Path) -> None:
    settings = admission_settings(tmp_path, ingest_max_requests=1, ingest_body_timeout_s=0.2)
    with LiveCollector(settings) as collector:
        body, _ = journey_body("call_stalled")
        stalled = HeldRequest(collector, body, 10, len(body))
        try:
            assert stalled.answer().status == 408
        finally:
            stalled.close()
        retry_body, retry_trace = journey_body("call_after")
        assert post(collector, retry_body).status_code == 200
        assert report_count(collector, retry_trace) == 1
