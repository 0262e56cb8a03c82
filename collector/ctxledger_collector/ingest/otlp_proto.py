"""Protobuf OTLP bodies read into spans within the ingest limits (see :mod:`.otlp_spans`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from ctxledger_collector.decoded.rejection_codes import Rejection
from ctxledger_collector.derive import SpanEvent
from ctxledger_collector.ingest.otlp_resource import proto_service
from ctxledger_collector.ingest.otlp_salvage import salvage_proto
from ctxledger_collector.ingest.otlp_spans import (
    DecodeLimits,
    MalformedRequest,
    RawSpan,
    Refused,
    check_count,
    check_length,
    check_nesting,
    too_many_spans,
)

#: The value kinds read as they are, with no limit to check.
_SCALARS = frozenset({"int_value", "bool_value", "double_value"})


def proto_string(text: str, limits: DecodeLimits) -> str:
    check_length(len(text), limits.max_value_chars, "string value")
    return text


def _proto_strings(values: Sequence[AnyValue], limits: DecodeLimits, level: int) -> list[Any]:
    """An array's values. Most arrays hold only strings (item ids, field names): those are
    read in one pass and measured at once; an empty string may be another kind's default,
    so those elements alone are read by kind."""
    strings: list[Any] = [v.string_value for v in values]
    if strings and max(map(len, strings)) > limits.max_value_chars:
        proto_string(max(strings, key=len), limits)
    for index, text in enumerate(strings):
        if not text and values[index].WhichOneof("value") != "string_value":
            strings[index] = proto_value(values[index], limits, level)
    return strings


def proto_value(value: AnyValue, limits: DecodeLimits, level: int = 0) -> Any:
    """One value; ``level`` counts the arrays and key/value lists around it."""
    kind = value.WhichOneof("value")
    if kind == "string_value":  # most values: tried first
        return proto_string(value.string_value, limits)
    if kind == "array_value":
        check_nesting(level + 1, limits)
        values = value.array_value.values
        check_length(len(values), limits.max_value_items, "array")
        return _proto_strings(values, limits, level + 1)
    if kind is None:
        return None
    if kind == "kvlist_value":
        check_nesting(level + 1, limits)
        entries = value.kvlist_value.values
        check_length(len(entries), limits.max_value_items, "key/value list")
        return proto_attributes(entries, limits, level + 1)
    if kind == "bytes_value":
        check_length(len(value.bytes_value), limits.max_value_chars, "bytes value")
    return getattr(value, kind)


def proto_attributes(
    entries: Sequence[KeyValue], limits: DecodeLimits, level: int = 0
) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    longest = limits.max_value_chars
    for kv in entries:
        key = kv.key
        if len(key) > longest:
            proto_string(key, limits)
        value = kv.value
        kind = value.WhichOneof("value")
        if kind == "string_value":  # most values, then numbers and flags: no call for those
            text = value.string_value
            attributes[key] = text if len(text) <= longest else proto_string(text, limits)
        elif kind in _SCALARS:
            attributes[key] = getattr(value, kind)
        else:
            attributes[key] = proto_value(value, limits, level)
    return attributes


def proto_spans(body: bytes, limits: DecodeLimits) -> Iterator[RawSpan | Rejection]:
    """The spans of a protobuf body, parsed whole first (so a malformed or oversized
    body is refused before any span is handed out)."""
    request = ExportTraceServiceRequest()
    rejected: list[Rejection] = []
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as error:
        if "UTF-8" not in str(error):
            raise MalformedRequest(
                f"body is not a protobuf ExportTraceServiceRequest: {error}"
            ) from error
        request, rejected = salvage_proto(body)  # the spans with bad text rejected alone
    spans = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
    too_many_spans(spans + len(rejected), limits)
    return itertools.chain(rejected, _proto_request_spans(request, limits))


def _proto_request_spans(
    request: ExportTraceServiceRequest, limits: DecodeLimits
) -> Iterator[RawSpan | Rejection]:
    for resource_spans in request.resource_spans:
        service = proto_service(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name[:256] or None
            for span in scope_spans.spans:
                try:
                    check_count(len(span.attributes), limits.max_attributes, "attributes")
                    check_count(len(span.events), limits.max_events, "events")
                    for event in span.events:
                        check_count(
                            len(event.attributes), limits.max_attributes, "event attributes"
                        )
                    yield RawSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        name=proto_string(span.name, limits),
                        end_time_unix_nano=span.end_time_unix_nano,
                        attributes=proto_attributes(span.attributes, limits),
                        dropped_attributes_count=span.dropped_attributes_count,
                        service_name=service,
                        scope_name=scope,
                        start_time_unix_nano=span.start_time_unix_nano,
                        parent_span_id=span.parent_span_id.hex() or None,
                        status_code=span.status.code,
                        events=tuple(
                            SpanEvent(
                                proto_string(e.name, limits),
                                proto_attributes(e.attributes, limits),
                            )
                            for e in span.events
                        ),
                    )
                except Refused as refused:
                    yield Rejection(
                        span.trace_id.hex(),
                        span.span_id.hex(),
                        refused.detail,
                        refused.code,
                        service,
                    )
