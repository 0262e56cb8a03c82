"""OTLP/HTTP bodies built by hand, as a client in another language would send them.

Protobuf bodies are real ``ExportTraceServiceRequest`` messages; JSON bodies follow the
OTLP JSON encoding (hex trace and span ids, 64-bit integers as strings, arrays as
``arrayValue``). Attribute names come from :mod:`ctxledger.semconv` only.

The reference journey used across the ingest tests: a tool returns 50 rows with ids,
the serializer keeps all 50, the context assembler keeps the first 20 and says nothing,
and those 20 are sent; a request manifest says the request carried the call and its
result. Its verdict is ``silent`` with 30 lost items.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from ctxledger import semconv as sc

PROTOBUF = "application/x-protobuf"
JSON_TYPE = "application/json"

SERVICE_NAME = "billing-agent"
TOOL_NAME = "search_invoices"
TOKENIZER = "cl100k_base"
MODEL = "gpt-4o-2024-08-06"

ITEM_IDS: tuple[str, ...] = tuple(f"inv-{i:04d}" for i in range(50))
KEPT = 20
KEPT_IDS = ITEM_IDS[:KEPT]
LOST_IDS = ITEM_IDS[KEPT:]

#: Expected (stage, chars, tokens, items) of the reference journey, in pipeline order.
JOURNEY_STAGES: tuple[tuple[str, int, int, int], ...] = (
    (sc.STAGE_ORIGINAL, 5000, 1250, 50),
    (sc.STAGE_SERIALIZED, 5150, 1290, 50),
    (sc.STAGE_ASSEMBLED, 2060, 516, KEPT),
    (sc.STAGE_SENT, 2060, 516, KEPT),
)


def new_trace_id() -> bytes:
    return os.urandom(15) + b"\x01"  # never all zeros


def new_span_id() -> bytes:
    return os.urandom(7) + b"\x01"


@dataclass(frozen=True)
class Span:
    """One span of a hand-built request. ``trace_id`` overrides the request's trace id;
    ``json_trace_id`` puts an arbitrary string into the JSON encoding (to break it)."""

    attributes: Mapping[str, Any]
    name: str = sc.SPAN_MEASUREMENT
    span_id: bytes = field(default_factory=new_span_id)
    end_time_unix_nano: int = field(default_factory=time.time_ns)
    dropped_attributes_count: int = 0
    trace_id: bytes | None = None
    json_trace_id: str | None = None


# --- the contract's spans --------------------------------------------------------------


def stage_attributes(
    stage: str,
    call_id: str,
    *,
    chars: int,
    tokens: int,
    items: int,
    ids: Sequence[str] | None = None,
    request_id: str | None = None,
    step: int | None = None,
    tool_name: str | None = TOOL_NAME,
    **extra: Any,
) -> dict[str, Any]:
    """The attributes of one stage measurement span (contract section 2)."""
    attrs: dict[str, Any] = {
        sc.STAGE: stage,
        sc.TOOL_CALL_ID: call_id,
        sc.SIZE_CHARS: chars,
        sc.SIZE_BYTES: chars,
        sc.SIZE_TOKENS: tokens,
        sc.TOKENIZER: TOKENIZER,
        sc.SIZE_ITEMS: items,
    }
    if tool_name is not None:
        attrs[sc.TOOL_NAME] = tool_name
    if ids is not None:
        attrs[sc.ITEMS_IDS] = list(ids)
        attrs[sc.ITEMS_IDS_COMPLETE] = True
    if request_id is not None:
        attrs[sc.REQUEST_ID] = request_id
    if step is not None:
        attrs[sc.STEP] = step
    attrs.update(extra)
    return attrs


def manifest_attributes(
    request_id: str, call_ids: Sequence[str], *, step: int = 2, tokens: int = 3000
) -> dict[str, Any]:
    """The attributes of one request manifest span (contract section 3)."""
    return {
        sc.REQUEST_ID: request_id,
        sc.STEP: step,
        sc.REQUEST_TOOL_CALL_IDS: list(call_ids),
        sc.REQUEST_TOOL_CALLS: list(call_ids),
        sc.REQUEST_TOKENS: tokens,
        sc.REQUEST_CONTEXT_WINDOW: 128_000,
        sc.REQUEST_MODEL: MODEL,
    }


def journey_attributes(call_id: str, request_id: str) -> list[dict[str, Any]]:
    """The reference journey: original 50 -> serialized 50 -> assembled 20 -> sent 20,
    then the manifest of the request (step 2) that followed the call (step 1)."""
    out: list[dict[str, Any]] = []
    for stage, chars, tokens, items in JOURNEY_STAGES:
        in_request = stage in (sc.STAGE_ASSEMBLED, sc.STAGE_SENT)
        out.append(
            stage_attributes(
                stage,
                call_id,
                chars=chars,
                tokens=tokens,
                items=items,
                ids=ITEM_IDS[:items],
                request_id=request_id if in_request else None,
                step=2 if in_request else 1,
            )
        )
    out.append(manifest_attributes(request_id, [call_id]))
    return out


def journey_spans(call_id: str, request_id: str, *, start_ns: int | None = None) -> list[Span]:
    """The reference journey as spans, ending one millisecond apart in pipeline order."""
    start = time.time_ns() if start_ns is None else start_ns
    spans = []
    for index, attrs in enumerate(journey_attributes(call_id, request_id)):
        name = sc.SPAN_MEASUREMENT if sc.STAGE in attrs else sc.SPAN_MANIFEST
        spans.append(Span(attrs, name=name, end_time_unix_nano=start + index * 1_000_000))
    return spans


def with_new_span_ids(spans: Sequence[Span]) -> list[Span]:
    return [replace(span, span_id=new_span_id()) for span in spans]


def plain_span(name: str = "http.client") -> Span:
    """A span of someone else's instrumentation: no ctxledger attribute at all."""
    return Span({"http.request.method": "GET", "server.port": 443}, name=name)


# --- protobuf ------------------------------------------------------------------------------


def proto_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, Mapping):
        out = AnyValue()
        out.kvlist_value.values.extend(
            KeyValue(key=k, value=proto_value(v)) for k, v in value.items()
        )
        return out
    if isinstance(value, Sequence):
        out = AnyValue()
        out.array_value.values.extend(proto_value(v) for v in value)
        return out
    raise TypeError(f"no AnyValue for {value!r}")


def proto_request(
    trace_id: bytes, spans: Sequence[Span], *, service_name: str = SERVICE_NAME
) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.add(key=sc.SERVICE_NAME, value=proto_value(service_name))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "hand-built"
    for span in spans:
        end = span.end_time_unix_nano
        proto = ProtoSpan(
            trace_id=span.trace_id if span.trace_id is not None else trace_id,
            span_id=span.span_id,
            name=span.name,
            kind=ProtoSpan.SPAN_KIND_INTERNAL,
            start_time_unix_nano=end - 500_000,
            end_time_unix_nano=end,
            dropped_attributes_count=span.dropped_attributes_count,
        )
        proto.attributes.extend(
            KeyValue(key=k, value=proto_value(v)) for k, v in span.attributes.items()
        )
        scope_spans.spans.append(proto)
    return request


def proto_body(
    trace_id: bytes, spans: Sequence[Span], *, service_name: str = SERVICE_NAME
) -> bytes:
    body: bytes = proto_request(trace_id, spans, service_name=service_name).SerializeToString()
    return body


# --- OTLP JSON -----------------------------------------------------------------------------


def json_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # 64-bit integers are strings in OTLP JSON
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode()}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": json_attributes(value)}}
    if isinstance(value, Sequence):
        return {"arrayValue": {"values": [json_value(v) for v in value]}}
    raise TypeError(f"no AnyValue for {value!r}")


def json_attributes(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": json_value(v)} for k, v in attributes.items()]


def json_request(
    trace_id: bytes,
    spans: Sequence[Span],
    *,
    service_name: str = SERVICE_NAME,
    upper_hex: bool = False,
) -> dict[str, Any]:
    def hex_id(raw: bytes) -> str:
        return raw.hex().upper() if upper_hex else raw.hex()

    json_spans = []
    for span in spans:
        end = span.end_time_unix_nano
        if span.json_trace_id is not None:
            span_trace = span.json_trace_id
        else:
            span_trace = hex_id(span.trace_id if span.trace_id is not None else trace_id)
        document: dict[str, Any] = {
            "traceId": span_trace,
            "spanId": hex_id(span.span_id),
            "name": span.name,
            "kind": 1,  # enum values are integers in OTLP JSON
            "startTimeUnixNano": str(end - 500_000),
            "endTimeUnixNano": str(end),
            "attributes": json_attributes(span.attributes),
            "status": {},
        }
        if span.dropped_attributes_count:
            document["droppedAttributesCount"] = span.dropped_attributes_count
        json_spans.append(document)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": json_attributes({sc.SERVICE_NAME: service_name})},
                "scopeSpans": [{"scope": {"name": "hand-built"}, "spans": json_spans}],
            }
        ]
    }


def json_body(
    trace_id: bytes,
    spans: Sequence[Span],
    *,
    service_name: str = SERVICE_NAME,
    upper_hex: bool = False,
) -> bytes:
    document = json_request(trace_id, spans, service_name=service_name, upper_hex=upper_hex)
    return json.dumps(document).encode()


def gzipped(body: bytes) -> bytes:
    return gzip.compress(body)
