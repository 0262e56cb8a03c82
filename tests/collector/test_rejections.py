"""Rejections are visible to clients that ignore ``partial_success``: every rejected span
is listed at ``GET /api/v1/rejections`` with its reason and counted by reason in
``/metrics``; the ingest limits (spans per request, attributes, value length, nesting,
request time) each answer with a 4xx or such a counted rejection, the rest kept.
A live collector on SQLite and PostgreSQL, bodies sent over real HTTP."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from sqlalchemy import Engine

from ctxledger import semconv as sc
from ctxledger_collector.decoded.rejection_codes import REASONS, Rejection
from ctxledger_collector.ingest.otlp_decode import decode_export_request
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.rejection_log import read_rejections, record_rejections
from tests.collector import otlp_payloads as op
from tests.collector.live_collector import LiveCollector
from tests.collector.test_ingest import (
    REQUEST,
    assert_reference_journey,
    metric_samples,
    post,
    reports,
)
from tests.reliability.kit import stored_span_ids


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field."""
    size, length = bytearray(), len(payload)
    while True:
        size.append((length & 0x7F) | (0x80 if length > 0x7F else 0))
        length >>= 7
        if not length:
            break
    return bytes([number << 3 | 2]) + bytes(size) + payload


def _deeply_nested_proto_body(trace: bytes, depth: int) -> bytes:
    """A measurement span with an attribute nested ``depth`` arrays deep, written as
    protobuf bytes by hand (the protobuf runtime itself refuses to build it)."""
    value = AnyValue(string_value="leaf").SerializeToString()
    for _ in range(depth):
        value = _field(5, _field(1, value))  # AnyValue.array_value{ values: [value] }
    attribute = KeyValue(key="x.deep").SerializeToString() + _field(2, value)
    request = op.proto_request(trace, [op.Span(_stage("deep"))])
    resource = request.resource_spans[0]
    scope = resource.scope_spans[0]
    span = scope.spans[0].SerializeToString() + _field(9, attribute)
    del scope.spans[:]
    scope_bytes = scope.SerializeToString() + _field(2, span)
    del resource.scope_spans[:]
    return _field(1, resource.SerializeToString() + _field(2, scope_bytes))


def _stage(call_id: str, **extra: Any) -> dict[str, Any]:
    attrs = op.stage_attributes(sc.STAGE_ORIGINAL, call_id, chars=9, tokens=2, items=1, step=1)
    attrs.update(extra)
    return {k: v for k, v in attrs.items() if v is not None}  # None: left out


def _over_the_limits() -> dict[str, op.Span]:
    """One span per per-span limit (the settings below), by expected reason."""
    return {
        "too_many_attributes": op.Span(_stage("c1", **{f"x.{i}": i for i in range(40)})),
        "value_too_long": op.Span(_stage("c2", **{"x.long": "数" * 101})),
        "nesting_too_deep": op.Span(_stage("c3", **{"x.deep": _nested(4)})),
        "contract": op.Span(_stage("c4", **{sc.SIZE_CHARS: "nine"})),
    }


def _rejections(collector: LiveCollector, **params: Any) -> list[dict[str, Any]]:
    """Every rejection kept, page by page (newest first)."""
    found: list[dict[str, Any]] = []
    cursor: int | None = None
    with collector.client() as http:
        while True:
            query = {**params, "limit": 2, **({"before": cursor} if cursor else {})}
            answer = http.get("/api/v1/rejections", params=query)
            assert answer.status_code == 200, answer.text
            page = answer.json()
            found += page["rejections"]
            cursor = page["next_before"]
            if cursor is None:
                return found


def _rejected_by_reason(collector: LiveCollector) -> dict[str, float]:
    samples = metric_samples(collector)
    return {
        reason: samples[("ctxledger_ingest_rejected_spans_total", frozenset({("reason", reason)}))]
        for reason in REASONS
    }


def _limited(database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "auto_migrate": True,
        "sweep_interval_s": 3600.0,
        "max_span_attributes": 32,
        "max_value_chars": 100,
        "max_value_depth": 3,
        "max_spans_per_request": 50,
        **overrides,
    }
    return Settings(**values)


def test_every_rejection_is_listed_and_counted_by_reason(database_url: str) -> None:
    with LiveCollector(_limited(database_url)) as collector:
        assert set(_rejected_by_reason(collector).values()) == {0.0}  # exported from the start
        sent: dict[tuple[str, str], str] = {}
        for encoding in (op.PROTOBUF, op.JSON_TYPE):
            trace = op.new_trace_id()
            bad = _over_the_limits()
            # More than the 5 spans partial_success names: the API lists them all.
            bad |= {
                f"contract-{i}": op.Span(_stage(f"d{i}", **{sc.SIZE_CHARS: None})) for i in range(4)
            }
            good = op.journey_spans(f"call_{encoding[-4:]}", REQUEST)
            spans = [*good[:2], *bad.values(), *good[2:]]
            make = op.proto_body if encoding == op.PROTOBUF else op.json_body
            answer = post(collector, make(trace, spans), encoding)
            assert answer.status_code == 200, answer.text
            if encoding == op.PROTOBUF:
                partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
                assert partial.rejected_spans == len(bad)
            else:
                assert int(answer.json()["partialSuccess"]["rejectedSpans"]) == len(bad)
            assert_reference_journey(
                reports(collector, trace), trace.hex(), f"call_{encoding[-4:]}"
            )
            for label, span in bad.items():
                sent[(trace.hex(), span.span_id.hex())] = label.split("-")[0]

        listed = _rejections(collector)
        assert {(r["trace_id"], r["span_id"]): r["reason"] for r in listed} == sent
        assert all(r["service_name"] == op.SERVICE_NAME and r["detail"] for r in listed)
        assert [r["id"] for r in listed] == sorted((r["id"] for r in listed), reverse=True)
        only_deep = _rejections(collector, reason="nesting_too_deep")
        assert len(only_deep) == 2 and "deeper than 3" in only_deep[0]["detail"]

        counted = _rejected_by_reason(collector)
        assert counted["too_many_attributes"] == counted["value_too_long"] == 2
        assert counted["nesting_too_deep"] == 2 and counted["contract"] == 10

        # A replayed export lists each rejected span once, not twice.
        trace = op.new_trace_id()
        body = op.proto_body(trace, list(_over_the_limits().values()))
        assert post(collector, body).status_code == post(collector, body).status_code == 200
        assert len(_rejections(collector, trace_id=trace.hex())) == 4


def test_request_limits_answer_413_and_bad_values_never_500(database_url: str) -> None:
    with LiveCollector(_limited(database_url)) as collector:
        trace = op.new_trace_id()
        many = [op.plain_span() for _ in range(51)]
        for encoding, make in ((op.PROTOBUF, op.proto_body), (op.JSON_TYPE, op.json_body)):
            answer = post(collector, make(trace, many), encoding)
            assert answer.status_code == 413, answer.text
            assert "51 spans, over the limit of 50" in answer.text

        # Nesting far past any recursion limit: refused, never a RecursionError (500).
        answer = post(collector, _deeply_nested_proto_body(trace, 5_000))
        assert answer.status_code == 400, answer.text
        answer = post(collector, _deeply_nested_proto_body(trace, 40))
        assert answer.status_code == 200, answer.text
        assert _rejections(collector)[0]["reason"] == "nesting_too_deep"
        value: dict[str, Any] = {"stringValue": "leaf"}
        for _ in range(300):
            value = {"arrayValue": {"values": [value]}}
        document = json.loads(op.json_body(trace, [op.Span(_stage("deep"))]))
        span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        span["attributes"].append({"key": "x.deep", "value": value})
        answer = post(collector, json.dumps(document).encode(), op.JSON_TYPE)
        assert answer.status_code == 200, answer.text
        assert _rejections(collector)[0]["reason"] == "nesting_too_deep"
        # Numbers no span can hold are a malformed span, not a crash.
        span["attributes"] = [{"key": sc.SIZE_CHARS, "value": {"intValue": "1" * 5000}}]
        answer = post(collector, json.dumps(document).encode(), op.JSON_TYPE)
        assert answer.status_code == 200, answer.text
        assert _rejections(collector)[0]["reason"] == "malformed_span"


def test_past_the_request_time_limit_the_export_is_kept_in_the_spool_and_stored_whole(
    database_url: str, tmp_path: Path
) -> None:
    # Any export takes longer than a nanosecond: the first chunk is stored in the request,
    # then the whole export goes to the spool, and the replayer stores the rest.
    settings = _limited(
        database_url,
        ingest_chunk_spans=4,
        ingest_request_timeout_s=1e-9,
        ingest_spool_dir=str(tmp_path / "spool"),
    )
    with LiveCollector(settings) as collector:
        trace = op.new_trace_id()
        spans = [s for i in range(3) for s in op.journey_spans(f"call_{i}", f"req_{i}")]
        answer = post(collector, op.proto_body(trace, spans))
        assert answer.status_code == 200, answer.text
        partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
        assert partial.rejected_spans == 0
        sent = {s.span_id.hex() for s in spans}
        deadline = time.monotonic() + 30
        while stored_span_ids(database_url) != sent:
            assert time.monotonic() < deadline, "the spooled export was not stored"
            time.sleep(0.05)
        assert {r["tool_call_id"] for r in reports(collector, trace)} == {
            "call_0",
            "call_1",
            "call_2",
        }
        assert _rejections(collector) == []
        kept = ("ctxledger_ingest_spooled_total", frozenset({("outcome", "kept")}))
        assert metric_samples(collector)[kept] == 1


def test_past_the_request_time_limit_without_a_spool_the_export_is_stored_in_the_request(
    database_url: str,
) -> None:
    settings = _limited(
        database_url, ingest_chunk_spans=4, ingest_request_timeout_s=1e-9, ingest_spool_dir="off"
    )
    with LiveCollector(settings) as collector:
        trace = op.new_trace_id()
        spans = [s for i in range(3) for s in op.journey_spans(f"call_{i}", f"req_{i}")]
        answer = post(collector, op.proto_body(trace, spans))
        assert answer.status_code == 200, answer.text
        partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
        assert partial.rejected_spans == 0
        assert stored_span_ids(database_url) == {s.span_id.hex() for s in spans}  # answered
        assert _rejections(collector) == []


def test_only_the_newest_rejections_are_kept(database_url: str) -> None:
    with LiveCollector(_limited(database_url, rejections_kept=3)) as collector:
        trace = op.new_trace_id()
        for batch in range(3):
            bad = [op.Span(_stage(f"b{batch}{i}", **{sc.SIZE_CHARS: None})) for i in range(2)]
            assert post(collector, op.proto_body(trace, bad)).status_code == 200
        kept = _rejections(collector)
        assert [r["span_id"] for r in kept] == [s.span_id.hex() for s in reversed(bad)] + [
            kept[-1]["span_id"]
        ]
        assert len(kept) == 3
        assert _rejected_by_reason(collector)["contract"] == 6  # the metric counts them all


#: Stands in a span's attribute for text replaced, in the body's bytes, by what is not text.
_PLACEHOLDER = "XXXX"


def _with_bad_text(encoding: str, trace: bytes, bad: bytes) -> tuple[bytes, op.Span]:
    """The reference journey and one span whose attribute value is ``bad``: bytes that
    are not UTF-8 (or, in JSON, a lone surrogate's escape), written into the body."""
    spoilt = op.Span(_stage("bad_text", **{"x.text": _PLACEHOLDER}))
    spans = [*op.journey_spans("call_text", REQUEST), spoilt]
    make = op.proto_body if encoding == op.PROTOBUF else op.json_body
    body = make(trace, spans)
    assert body.count(_PLACEHOLDER.encode()) == 1
    return body.replace(_PLACEHOLDER.encode(), bad), spoilt


def test_a_span_with_text_that_is_not_unicode_is_rejected_alone(database_url: str) -> None:
    cases = [
        (op.PROTOBUF, b"\xff\xfe\xfd\xfc"),  # same length: the protobuf framing holds
        (op.PROTOBUF, b"\xed\xa0\x80A"),  # a surrogate encoded in UTF-8
        (op.JSON_TYPE, b"\xff\xfe\xfd\xfc"),
        (op.JSON_TYPE, b"\\ud800"),  # a lone surrogate, escaped
    ]
    with LiveCollector(_limited(database_url)) as collector:
        for encoding, bad in cases:
            trace = op.new_trace_id()
            body, spoilt = _with_bad_text(encoding, trace, bad)
            answer = post(collector, body, encoding)
            assert answer.status_code == 200, (encoding, bad, answer.text)
            if encoding == op.PROTOBUF:
                partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
                rejected, message = partial.rejected_spans, partial.error_message
            else:
                partial_json = answer.json()["partialSuccess"]
                rejected, message = int(partial_json["rejectedSpans"]), partial_json["errorMessage"]
            assert rejected == 1 and "not valid UTF-8" in message, (encoding, bad)
            assert_reference_journey(reports(collector, trace), trace.hex(), "call_text")
            (listed,) = _rejections(collector, trace_id=trace.hex())
            assert listed["span_id"] == spoilt.span_id.hex()
            assert listed["reason"] == "malformed_span" and "UTF-8" in listed["detail"]
            assert listed["service_name"] == op.SERVICE_NAME


def test_bad_text_in_a_resource_rejects_its_spans_and_keeps_the_other_resources() -> None:
    trace = op.new_trace_id()
    good, spoilt = op.journey_spans("call_kept", REQUEST), op.journey_spans("call_x", "req_x")
    for encoding, make in ((op.PROTOBUF, op.proto_body), (op.JSON_TYPE, op.json_body)):
        kept = make(trace, good)
        lost = make(trace, spoilt, service_name=_PLACEHOLDER).replace(
            _PLACEHOLDER.encode(), b"\xff\xfe\xfd\xfc"
        )
        if encoding == op.PROTOBUF:  # two requests' resource_spans, concatenated: one request
            body = lost + kept
        else:
            documents = [json.loads(kept), json.loads(lost.decode("utf-8", "surrogateescape"))]
            documents[0]["resourceSpans"] = (
                documents[1]["resourceSpans"] + documents[0]["resourceSpans"]
            )
            body = json.dumps(documents[0], ensure_ascii=False).encode("utf-8", "surrogateescape")
        batch = decode_export_request(body, encoding)
        assert sorted(r.span_id for r in batch.rejected) == sorted(s.span_id.hex() for s in spoilt)
        assert all("its resource" in r.reason for r in batch.rejected)
        stored = {m.measurement.span_id for m in batch.measurements}
        stored |= {m.manifest.span_id for m in batch.manifests}
        assert stored == {s.span_id.hex() for s in good}, encoding


def test_rejections_are_listed_until_they_age_out_however_many(database_engine: Engine) -> None:
    """No count bound by default: 12,000 refused spans (more than the 10,000 kept before)
    all stay listed; a row leaves only once older than the age limit."""
    week = 7 * 86_400.0
    old = [Rejection(f"{i:032x}", f"{i:016x}", "missing x", "contract") for i in range(12_000)]
    record_rejections(database_engine, old, None, now=1_000.0, max_age_s=week)
    fresh = [
        Rejection(f"{i:032x}", f"{i:016x}", "missing y", "contract") for i in range(12_000, 12_010)
    ]
    record_rejections(database_engine, fresh, None, now=1_000.0 + week - 1, max_age_s=week)
    with database_engine.connect() as connection:
        assert read_rejections(connection, 1).total == 12_010  # none old enough yet
    later = [
        Rejection(f"{i:032x}", f"{i:016x}", "missing z", "contract") for i in range(12_010, 12_011)
    ]
    record_rejections(database_engine, later, None, now=1_000.0 + week + 120, max_age_s=week)
    with database_engine.connect() as connection:
        page = read_rejections(connection, 1000)
    assert page.total == 11  # the first 12,000 aged out; the newer 11 stay
    assert {row["span_id"] for row in page.rows} == {f"{i:016x}" for i in range(12_000, 12_011)}


@pytest.mark.parametrize(
    ("field", "number"),
    [("doubleValue", "1e400"), ("intValue", "1e400"), ("intValue", "9" * 100_000)],
)
def test_a_json_span_holding_a_number_no_span_can_hold_is_rejected_alone(
    database_url: str, field: str, number: str
) -> None:
    settings = _limited(database_url, max_spans_per_request=1_000)
    with LiveCollector(settings) as collector:
        trace = op.new_trace_id()
        spans = [s for i in range(20) for s in op.journey_spans(f"call_{i}", f"req_{i}")]
        document = json.loads(op.json_body(trace, spans))
        listed = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert len(listed) == 100
        listed[37]["attributes"].append({"key": "x.big", "value": {field: "BIG"}})
        body = json.dumps(document).replace('"BIG"', number).encode()
        answer = post(collector, body, op.JSON_TYPE)
        assert answer.status_code == 200, answer.text
        assert answer.json()["partialSuccess"]["rejectedSpans"] == "1"
        rejected = _rejections(collector)
        assert [(r["span_id"], r["reason"]) for r in rejected] == [
            (listed[37]["spanId"], "malformed_span")
        ]
        assert stored_span_ids(database_url) == {s.span_id.hex() for s in spans} - {
            listed[37]["spanId"]
        }
