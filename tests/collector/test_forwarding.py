"""Forwarding: every accepted export, unchanged, to other OTLP/HTTP endpoints.

Real parts only: the collector runs under uvicorn and is reached over HTTP; the
destinations are real HTTP servers on loopback (:mod:`tests.collector.forward_receivers`)
that keep each request's bytes as they arrived; the exports come from the stock
OpenTelemetry exporter and from hand-built bodies. No test measures time: each waits
for what must happen (a request arriving, a counter moving) and checks what happened.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from ctxledger_collector.ops.settings import Settings
from tests.collector import otlp_payloads as op
from tests.collector.forward_receivers import RecordingEndpoint
from tests.collector.live_collector import LiveCollector, free_port
from tests.collector.test_ingest import (
    assert_reference_journey,
    finished_stock_spans,
    metric_samples,
    reports,
)

API_KEY = "ctxledger-ingest-key"
OUTCOMES = ("delivered", "retried", "dropped_full", "given_up", "dropped_shutdown")


def settings_for(tmp_path: Path, *destinations: Any, **overrides: Any) -> Settings:
    """A collector on SQLite forwarding to ``destinations``, retrying quickly."""
    values: dict[str, Any] = {
        "database_url": f"sqlite:///{tmp_path / 'ctxledger.db'}",
        "auto_migrate": True,
        "sweep_interval_s": 3600.0,
        "api_keys": API_KEY,
        "forward_to": json.dumps(list(destinations)),
        "forward_retry_base_s": 0.02,
        "forward_max_backoff_s": 0.1,
        "forward_flush_timeout_s": 2.0,
        **overrides,
    }
    return Settings(**values)


def post(
    collector: LiveCollector, body: bytes, content_type: str, **headers: str
) -> httpx.Response:
    sent = {"content-type": content_type, "authorization": f"Bearer {API_KEY}"}
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    with collector.client() as http:
        return http.post("/v1/traces", content=body, headers=sent)


def forwarded(collector: LiveCollector, destination: str) -> dict[str, float]:
    """``ctxledger_forward_requests_total`` of one destination, by outcome."""
    samples = metric_samples(collector)
    return {
        outcome: samples[
            (
                "ctxledger_forward_requests_total",
                frozenset({("destination", destination), ("outcome", outcome)}),
            )
        ]
        for outcome in OUTCOMES
    }


def forwarded_bytes(collector: LiveCollector, destination: str, outcome: str) -> float:
    key = frozenset({("destination", destination), ("outcome", outcome)})
    return metric_samples(collector)[("ctxledger_forward_bytes_total", key)]


def queued(collector: LiveCollector, destination: str) -> tuple[float, float]:
    samples = metric_samples(collector)
    label = frozenset({("destination", destination)})
    return (
        samples[("ctxledger_forward_queue_requests", label)],
        samples[("ctxledger_forward_queue_bytes", label)],
    )


def wait_for_count(
    collector: LiveCollector, destination: str, outcome: str, at_least: float
) -> dict[str, float]:
    """The destination's counts once ``outcome`` reached ``at_least`` (30 s at most)."""
    deadline = time.monotonic() + 30
    counts = forwarded(collector, destination)
    while counts[outcome] < at_least and time.monotonic() < deadline:
        time.sleep(0.02)
        counts = forwarded(collector, destination)
    return counts


def journey(call_id: str) -> tuple[bytes, list[op.Span]]:
    return op.new_trace_id(), op.journey_spans(call_id, "req_step_2")


@pytest.fixture
def two_endpoints() -> Iterator[tuple[RecordingEndpoint, RecordingEndpoint]]:
    with RecordingEndpoint() as first, RecordingEndpoint() as second:
        yield first, second


# --- 1. byte for byte, to every destination ------------------------------------------------


def _exporter_posts(
    collector: LiveCollector, compression: Compression
) -> tuple[str, list[tuple[bytes, dict[str, str]]]]:
    """Export the reference journey with the stock exporter; what it sent, as sent."""
    sent: list[tuple[bytes, dict[str, str]]] = []
    session = requests.Session()

    def keep(response: requests.Response, *args: Any, **kwargs: Any) -> None:
        body = response.request.body
        assert isinstance(body, bytes)
        sent.append((body, {k.lower(): v for k, v in response.request.headers.items()}))

    session.hooks["response"].append(keep)
    exporter = OTLPSpanExporter(
        endpoint=collector.url + "/v1/traces",
        compression=compression,
        headers={"authorization": f"Bearer {API_KEY}"},
        session=session,
        timeout=30,
    )
    trace_hex, spans = finished_stock_spans(f"call_exporter_{compression.value}")
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    return trace_hex, sent


def test_every_accepted_export_reaches_each_destination_byte_for_byte(
    tmp_path: Path, two_endpoints: tuple[RecordingEndpoint, RecordingEndpoint]
) -> None:
    first, second = two_endpoints
    settings = settings_for(tmp_path, first.url, second.url)
    expected: list[tuple[bytes, str, str | None]] = []
    stored: dict[str, str] = {}  # trace id -> call id
    with LiveCollector(settings) as collector:
        for compression in (Compression.NoCompression, Compression.Gzip):
            trace_hex, sent = _exporter_posts(collector, compression)
            stored[trace_hex] = f"call_exporter_{compression.value}"
            for body, headers in sent:
                expected.append((body, headers["content-type"], headers.get("content-encoding")))
        raw = {
            "protobuf": (op.proto_body, op.PROTOBUF, None),
            "json": (op.json_body, "application/json; charset=utf-8", None),
            "gzip-protobuf": (op.proto_body, op.PROTOBUF, "gzip"),
            "gzip-json": (op.json_body, op.JSON_TYPE, "gzip"),
        }
        for name, (encode, content_type, encoding) in raw.items():
            trace_id, spans = journey(f"call_raw_{name}")
            body = encode(trace_id, spans)
            if encoding == "gzip":
                body = op.gzipped(body)
            extra = {} if encoding is None else {"content_encoding": encoding}
            answer = post(collector, body, content_type, **extra)
            assert answer.status_code == 200, answer.text
            stored[trace_id.hex()] = f"call_raw_{name}"
            expected.append((body, content_type, encoding))

        for endpoint in (first, second):
            arrived = endpoint.wait_for(len(expected))
            assert [(a.body, a.content_type, a.content_encoding) for a in arrived] == expected
            assert {a.path for a in arrived} == {"/v1/traces"}
            assert forwarded(collector, endpoint.url)["delivered"] == len(expected)
            assert forwarded_bytes(collector, endpoint.url, "delivered") == sum(
                len(body) for body, _, _ in expected
            )
            assert queued(collector, endpoint.url) == (0, 0)
        # ...and the collector kept and judged every one of them.
        for trace_hex, call_id in stored.items():
            assert_reference_journey(reports(collector, trace_hex), trace_hex, call_id)


def test_partial_success_is_forwarded_refused_exports_are_not(
    tmp_path: Path, two_endpoints: tuple[RecordingEndpoint, RecordingEndpoint]
) -> None:
    endpoint, _ = two_endpoints
    with LiveCollector(settings_for(tmp_path, endpoint.url)) as collector:
        trace_id, spans = journey("call_partial")
        broken = op.Span(
            op.stage_attributes("original", "call_bad_trace", chars=9, tokens=2, items=1),
            json_trace_id="zz" * 16,
        )
        partial = op.json_body(trace_id, [*spans, broken])
        answer = post(collector, partial, op.JSON_TYPE)
        assert answer.status_code == 200 and answer.json()["partialSuccess"], answer.text

        refused = [
            post(collector, b"not protobuf", op.PROTOBUF),  # 400
            post(collector, op.gzipped(b"x")[:-4], op.PROTOBUF, content_encoding="gzip"),
            post(collector, partial, "text/plain"),  # 415
            post(collector, partial, op.JSON_TYPE, authorization="Bearer wrong"),  # 401
        ]
        assert [r.status_code for r in refused] == [400, 400, 415, 401]
        last_id, last_spans = journey("call_after")
        assert post(collector, op.proto_body(last_id, last_spans), op.PROTOBUF).status_code == 200

        arrived = endpoint.wait_for(2)
        assert [a.body for a in arrived] == [partial, op.proto_body(last_id, last_spans)]
        assert forwarded(collector, endpoint.url)["delivered"] == 2


# --- 2. a destination that is down costs ingest nothing ---------------------------------


def test_a_down_destination_costs_ingest_nothing_and_gets_everything_once_up(
    tmp_path: Path, two_endpoints: tuple[RecordingEndpoint, RecordingEndpoint]
) -> None:
    port = free_port()  # nothing listens here yet: connection refused
    url = f"http://127.0.0.1:{port}/v1/traces"
    healthy, _ = two_endpoints
    bodies = []
    with LiveCollector(settings_for(tmp_path, url, healthy.url)) as collector:
        for index in range(5):
            trace_id, spans = journey(f"call_while_down_{index}")
            body = op.proto_body(trace_id, spans)
            answer = post(collector, body, op.PROTOBUF)
            # Answered, stored and judged while the destination is still down.
            assert answer.status_code == 200, answer.text
            assert_reference_journey(
                reports(collector, trace_id), trace_id.hex(), f"call_while_down_{index}"
            )
            bodies.append(body)
        counts = wait_for_count(collector, url, "retried", 2)
        assert counts["retried"] >= 2 and counts["delivered"] == 0
        # Each destination has its own queue and sender: the healthy one is not held up.
        assert [a.body for a in healthy.wait_for(len(bodies))] == bodies

        with RecordingEndpoint(port) as endpoint:
            arrived = endpoint.wait_for(len(bodies))
            assert [a.body for a in arrived] == bodies
            counts = wait_for_count(collector, url, "delivered", len(bodies))
        assert counts["delivered"] == len(bodies)
        assert counts["given_up"] == counts["dropped_full"] == 0


# --- 3. what is retried and what is given up -----------------------------------------------


def test_503_with_retry_after_is_retried_400_is_given_up_and_counted(
    tmp_path: Path, two_endpoints: tuple[RecordingEndpoint, RecordingEndpoint]
) -> None:
    throttled, refusing = two_endpoints
    throttled.answer(503, times=2, retry_after="0")
    throttled.answer(429, times=1, retry_after="0")
    refusing.answer(400, times=1)
    with LiveCollector(settings_for(tmp_path, throttled.url, refusing.url)) as collector:
        trace_id, spans = journey("call_retried")
        first = op.proto_body(trace_id, spans)
        assert post(collector, first, op.PROTOBUF).status_code == 200

        # Three refusals, then accepted: the same bytes four times.
        assert [a.status for a in throttled.wait_for(4)] == [503, 503, 429, 200]
        assert {a.body for a in throttled.arrived} == {first}
        counts = wait_for_count(collector, throttled.url, "delivered", 1)
        assert (counts["retried"], counts["delivered"], counts["given_up"]) == (3, 1, 0)

        # The 400 is not retried: given up, counted, and the next request goes through.
        second_id, second_spans = journey("call_after_400")
        second = op.proto_body(second_id, second_spans)
        assert post(collector, second, op.PROTOBUF).status_code == 200
        assert [(a.status, a.body) for a in refusing.wait_for(2)] == [(400, first), (200, second)]
        counts = wait_for_count(collector, refusing.url, "delivered", 1)
        assert (counts["given_up"], counts["retried"], counts["delivered"]) == (1, 0, 1)
        assert forwarded_bytes(collector, refusing.url, "given_up") == len(first)


def test_a_destination_failing_for_too_long_is_given_up(
    tmp_path: Path, two_endpoints: tuple[RecordingEndpoint, RecordingEndpoint]
) -> None:
    endpoint, _ = two_endpoints
    endpoint.answer(500, times=None)
    settings = settings_for(tmp_path, endpoint.url, forward_max_elapsed_s=0.2)
    with LiveCollector(settings) as collector:
        trace_id, spans = journey("call_500")
        assert post(collector, op.proto_body(trace_id, spans), op.PROTOBUF).status_code == 200
        counts = wait_for_count(collector, endpoint.url, "given_up", 1)
        assert counts["given_up"] == 1 and counts["delivered"] == 0
        assert counts["retried"] == len(endpoint.arrived) - 1


# --- 4. a full queue drops the oldest -----------------------------------------------------


def test_a_full_queue_drops_the_oldest_and_counts_them(
    tmp_path: Path, two_endpoints: tuple[RecordingEndpoint, RecordingEndpoint]
) -> None:
    stuck, _ = two_endpoints
    stuck.hold()
    settings = settings_for(tmp_path, stuck.url, forward_queue_max_requests=2)
    bodies = []
    with LiveCollector(settings) as collector:
        for index in range(6):
            trace_id, spans = journey(f"call_queued_{index}")
            bodies.append(op.proto_body(trace_id, spans))
            assert post(collector, bodies[-1], op.PROTOBUF).status_code == 200
            if index == 0:  # the sender holds the first; the next five queue behind it
                assert stuck.wait_held(1)

        assert queued(collector, stuck.url) == (2, len(bodies[4]) + len(bodies[5]))
        counts = forwarded(collector, stuck.url)
        assert counts["dropped_full"] == 3 and counts["delivered"] == 0
        assert forwarded_bytes(collector, stuck.url, "dropped_full") == sum(
            len(body) for body in bodies[1:4]
        )

        stuck.release()
        assert [a.body for a in stuck.wait_for(3)] == [bodies[0], bodies[4], bodies[5]]
        counts = wait_for_count(collector, stuck.url, "delivered", 3)
        assert (counts["delivered"], counts["dropped_full"]) == (3, 3)


def _refuses_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except OSError:
        return True


def test_at_shutdown_the_queue_is_flushed(
    tmp_path: Path, two_endpoints: tuple[RecordingEndpoint, RecordingEndpoint]
) -> None:
    endpoint, _ = two_endpoints
    endpoint.hold()
    settings = settings_for(
        tmp_path, endpoint.url, forward_flush_timeout_s=60.0, forward_timeout_s=60.0
    )
    collector = LiveCollector(settings)
    bodies = []
    with collector:
        for index in range(3):
            trace_id, spans = journey(f"call_flushed_{index}")
            bodies.append(op.proto_body(trace_id, spans))
            assert post(collector, bodies[-1], op.PROTOBUF).status_code == 200
        assert endpoint.wait_held(1)
        stopping = threading.Thread(target=collector.__exit__, args=(None, None, None))
        stopping.start()
        # The server no longer takes requests: it is in its lifespan's shutdown, flushing.
        deadline = time.monotonic() + 30
        while not _refuses_connections(collector.port) and time.monotonic() < deadline:
            time.sleep(0.02)
        endpoint.release()
        stopping.join(timeout=60)
    assert [a.body for a in endpoint.wait_for(3)] == bodies
    value = collector.app.state.ctxledger.metrics.registry.get_sample_value
    labels = {"destination": endpoint.url}
    assert value("ctxledger_forward_requests_total", {**labels, "outcome": "delivered"}) == 3
    assert value("ctxledger_forward_requests_total", {**labels, "outcome": "dropped_shutdown"}) == 0


def test_at_shutdown_what_cannot_be_sent_in_time_is_counted_dropped(
    tmp_path: Path, two_endpoints: tuple[RecordingEndpoint, RecordingEndpoint]
) -> None:
    endpoint, _ = two_endpoints
    endpoint.answer(503, times=None, retry_after="0")
    settings = settings_for(tmp_path, endpoint.url, forward_flush_timeout_s=0.3)
    collector = LiveCollector(settings)
    with collector:
        for index in range(3):
            trace_id, spans = journey(f"call_at_shutdown_{index}")
            assert post(collector, op.proto_body(trace_id, spans), op.PROTOBUF).status_code == 200
        wait_for_count(collector, endpoint.url, "retried", 1)
    # The server is gone; its registry still holds the final counts.
    registry = collector.app.state.ctxledger.metrics.registry
    value = registry.get_sample_value
    labels = {"destination": endpoint.url}
    assert value("ctxledger_forward_requests_total", {**labels, "outcome": "dropped_shutdown"}) == 3
    assert value("ctxledger_forward_requests_total", {**labels, "outcome": "delivered"}) == 0
    assert value("ctxledger_forward_queue_requests", labels) == 0


# --- 5. configured headers ------------------------------------------------------------------


def test_configured_headers_are_sent_and_the_ingest_key_is_not(
    tmp_path: Path, two_endpoints: tuple[RecordingEndpoint, RecordingEndpoint]
) -> None:
    phoenix, langfuse = two_endpoints
    destinations = [
        {"url": phoenix.url, "name": "phoenix", "headers": {"Authorization": "Bearer phx-key"}},
        {
            "url": langfuse.url,
            "name": "langfuse",
            "headers": {"Authorization": "Basic cGstbGY6c2stbGY="},
        },
    ]
    settings = settings_for(
        tmp_path, *destinations, forward_headers="x-team=agents,x-note=two%20words"
    )
    with LiveCollector(settings) as collector:
        trace_id, spans = journey("call_headers")
        assert post(collector, op.proto_body(trace_id, spans), op.PROTOBUF).status_code == 200
        (to_phoenix,) = phoenix.wait_for(1)
        (to_langfuse,) = langfuse.wait_for(1)
        assert forwarded(collector, "phoenix")["delivered"] == 1
        assert forwarded(collector, "langfuse")["delivered"] == 1
    assert to_phoenix.headers["authorization"] == "Bearer phx-key"
    assert to_langfuse.headers["authorization"] == "Basic cGstbGY6c2stbGY="
    for arrived in (to_phoenix, to_langfuse):
        assert arrived.headers["x-team"] == "agents"
        assert arrived.headers["x-note"] == "two words"
        assert API_KEY not in json.dumps(arrived.headers)
        assert arrived.headers["user-agent"].startswith("ctxledger-forwarder/")


def test_without_destinations_nothing_is_forwarded_and_no_series_exist(tmp_path: Path) -> None:
    with LiveCollector(settings_for(tmp_path, forward_to="")) as collector:
        trace_id, spans = journey("call_alone")
        assert post(collector, op.proto_body(trace_id, spans), op.PROTOBUF).status_code == 200
        names = {name for name, _ in metric_samples(collector)}
    assert not {n for n in names if n.startswith("ctxledger_forward_")}


def test_log_exports_go_to_each_destinations_logs_endpoint(
    tmp_path: Path, two_endpoints: tuple[RecordingEndpoint, RecordingEndpoint]
) -> None:
    """A destination given as .../v1/traces gets log exports at .../v1/logs, byte for
    byte; one whose URL does not end so gets traces only."""
    from tests.collector.test_logs_ingest import _proto_body, _proto_record

    first, second = two_endpoints
    bare = second.url.removesuffix("/v1/traces") + "/otlp"
    settings = settings_for(tmp_path, first.url, bare)
    logs = _proto_body([_proto_record(i) for i in range(3)])
    with LiveCollector(settings) as collector:
        trace_id, spans = journey("call_with_logs")
        assert post(collector, op.proto_body(trace_id, spans), op.PROTOBUF).status_code == 200
        headers = {"content-type": op.PROTOBUF, "authorization": f"Bearer {API_KEY}"}
        with collector.client() as http:
            answer = http.post("/v1/logs", content=logs, headers=headers)
        assert answer.status_code == 200, answer.text
        arrived = first.wait_for(2)
        assert sorted(a.path for a in arrived) == ["/v1/logs", "/v1/traces"]
        (log_export,) = [a for a in arrived if a.path == "/v1/logs"]
        assert (log_export.body, log_export.content_type) == (logs, op.PROTOBUF)
        assert [a.path for a in second.wait_for(1)] == ["/otlp"]
        time.sleep(0.5)  # nothing more reaches the destination without a logs endpoint
        assert len(second.arrived) == 1
