"""OTLP JSON bodies read into spans within the ingest limits (see :mod:`.otlp_spans`)."""

from __future__ import annotations

import base64
import binascii
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from ctxledger_collector.decoded import rejection_codes as codes
from ctxledger_collector.decoded.rejection_codes import Rejection
from ctxledger_collector.derive import SpanEvent
from ctxledger_collector.ingest.otlp_resource import json_service
from ctxledger_collector.ingest.otlp_salvage import salvage_json
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

#: The protobuf ranges of the OTLP integers read here (JSON carries them as strings).
_INT64 = (-(2**63), 2**63 - 1)
UINT64 = (0, 2**64 - 1)
_UINT32 = (0, 2**32 - 1)
#: What a malformed JSON span raises while it is read: it is rejected alone.
MALFORMED = (AttributeError, KeyError, TypeError, ValueError, OverflowError, binascii.Error)


def json_int(value: Any, bounds: tuple[int, int] = _INT64) -> int:
    # OTLP JSON encodes 64-bit integers as strings; numbers are accepted too.
    if isinstance(value, bool):
        raise ValueError("boolean where an integer was expected")
    number = int(value)
    low, high = bounds
    if not low <= number <= high:
        raise ValueError(f"integer {number} is out of range [{low}, {high}]")
    return number


def _text(value: Any) -> str:
    """A JSON scalar as text; anything else (an object or a list, however deep) is an
    error, never turned into text by ``str``."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return "" if value is None else str(value)
    raise ValueError(f"expected a string, got a JSON {type(value).__name__}")


def json_string(value: Any, limits: DecodeLimits) -> str:
    text = _text(value)
    check_length(len(text), limits.max_value_chars, "string value")
    return text


def _json_list(value: Any, limits: DecodeLimits, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list")
    check_length(len(value), limits.max_value_items, what)
    return value


def json_value(value: Mapping[str, Any], limits: DecodeLimits, level: int = 0) -> Any:
    if not isinstance(value, Mapping):
        raise ValueError(f"attribute value must be an AnyValue object, got {type(value).__name__}")
    if "stringValue" in value:
        return json_string(value["stringValue"], limits)
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return json_int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        check_nesting(level + 1, limits)
        values = _json_list(value["arrayValue"].get("values", []), limits, "array")
        return [json_value(v, limits, level + 1) for v in values]
    if "kvlistValue" in value:
        check_nesting(level + 1, limits)
        entries = _json_list(value["kvlistValue"].get("values", []), limits, "key/value list")
        return json_attributes(entries, limits, level + 1)
    if "bytesValue" in value:
        data = base64.b64decode(value["bytesValue"])
        check_length(len(data), limits.max_value_chars, "bytes value")
        return data
    return None


def json_attributes(items: Any, limits: DecodeLimits, level: int = 0) -> dict[str, Any]:
    if not isinstance(items, list):
        raise ValueError("attributes must be a list of key/value objects")
    return {
        json_string(item["key"], limits): json_value(item.get("value", {}), limits, level)
        for item in items
    }


def json_id(value: Any, length: int, name: str) -> str:
    text = _text(value)
    if len(text) != length * 2:
        raise ValueError(f"{name} must be {length * 2} hex characters, got {text!r:.80}")
    try:
        bytes.fromhex(text)
    except ValueError as error:
        raise ValueError(f"{name} is not hex: {text!r}") from error
    return text.lower()


def _json_span_lists(
    document: dict[str, Any],
) -> Iterator[tuple[str | None, str | None, list[Any]]]:
    for resource_spans in document.get("resourceSpans", []):
        try:
            service = json_service(resource_spans)
            scopes = resource_spans.get("scopeSpans", [])
            iter(scopes)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise MalformedRequest(f"malformed resourceSpans entry: {error}") from error
        for scope_spans in scopes:
            spans = scope_spans.get("spans", []) if isinstance(scope_spans, dict) else []
            yield _json_scope(scope_spans), service, spans if isinstance(spans, list) else []


def _json_scope(scope_spans: Any) -> str | None:
    """The instrumentation scope's name (which library made the spans)."""
    scope = scope_spans.get("scope") if isinstance(scope_spans, dict) else None
    name = scope.get("name") if isinstance(scope, dict) else None
    return name[:256] if isinstance(name, str) and name else None


def json_spans(body: bytes, limits: DecodeLimits) -> Iterator[RawSpan | Rejection]:
    """The spans of an OTLP JSON body; its structure is checked as it is walked."""
    rejected: list[Rejection] = []
    try:
        document = orjson.loads(body)
    except (UnicodeDecodeError, ValueError) as error:
        salvaged = salvage_json(body)  # invalid UTF-8 or a lone surrogate: those spans alone
        if salvaged is None or not salvaged[1]:
            raise MalformedRequest(f"body is not valid JSON: {error}") from error
        document, rejected = salvaged
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans", []), list):
        raise MalformedRequest("body is not an OTLP JSON ExportTraceServiceRequest")
    span_lists = list(_json_span_lists(document))
    too_many_spans(sum(len(spans) for _, _, spans in span_lists) + len(rejected), limits)
    return itertools.chain(rejected, _json_request_spans(span_lists, limits))


def _json_request_spans(
    span_lists: list[tuple[str | None, str | None, list[Any]]], limits: DecodeLimits
) -> Iterator[RawSpan | Rejection]:
    for scope, service, spans in span_lists:
        for span in spans:
            try:
                yield _json_span(span, service, limits, scope)
            except Refused as refused:
                yield _json_rejection(span, refused.detail, refused.code, service)
            except MALFORMED as error:
                detail = f"malformed span: {error}"
                yield _json_rejection(span, detail, codes.MALFORMED_SPAN, service)


def _json_rejection(span: Any, detail: str, code: str, service: str | None) -> Rejection:
    ids = span if isinstance(span, dict) else {}

    def shown(name: str) -> str:
        try:
            return _text(ids.get(name))
        except ValueError:
            return "?"

    return Rejection(shown("traceId"), shown("spanId"), detail, code, service)


def _json_span(
    span: Any, service: str | None, limits: DecodeLimits, scope: str | None = None
) -> RawSpan:
    attributes = span.get("attributes", [])
    events = span.get("events", [])
    if isinstance(attributes, list):
        check_count(len(attributes), limits.max_attributes, "attributes")
    if isinstance(events, list):
        check_count(len(events), limits.max_events, "events")
        for event in events:
            listed = event.get("attributes", []) if isinstance(event, dict) else None
            if isinstance(listed, list):
                check_count(len(listed), limits.max_attributes, "event attributes")
    return RawSpan(
        trace_id=json_id(span.get("traceId"), 16, "traceId"),
        span_id=json_id(span.get("spanId"), 8, "spanId"),
        name=json_string(span.get("name", ""), limits),
        end_time_unix_nano=json_int(span.get("endTimeUnixNano", 0), UINT64),
        attributes=json_attributes(attributes, limits),
        dropped_attributes_count=json_int(span.get("droppedAttributesCount", 0), _UINT32),
        service_name=service,
        scope_name=scope,
        start_time_unix_nano=json_int(span.get("startTimeUnixNano", 0), UINT64),
        parent_span_id=_text(span.get("parentSpanId")).lower() or None,
        status_code=json_int((span.get("status") or {}).get("code", 0), _UINT32),
        events=tuple(
            SpanEvent(
                json_string(e.get("name", ""), limits),
                json_attributes(e.get("attributes", []), limits),
            )
            for e in events
        ),
    )
