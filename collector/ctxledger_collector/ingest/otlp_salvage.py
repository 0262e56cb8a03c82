"""Exports whose text is not all valid Unicode: the spans that hold the bad text are
rejected alone, the rest of the export is kept.

Only called when a whole-body parse failed. A protobuf string field with invalid UTF-8
fails the parse of the whole message in the protobuf runtime, and invalid UTF-8 bytes or
a lone surrogate (``\\ud800``) fail a JSON body's parse. Here the body is split instead:
protobuf at the wire level (``resource_spans`` → ``scope_spans`` → ``spans``), each part
parsed on its own; JSON read leniently, each span checked for text that is not Unicode.
What survives is an ordinary request, decoded as usual; a body that is malformed beyond
its text still raises :class:`MalformedRequest`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

from ctxledger_collector.decoded import rejection_codes as codes
from ctxledger_collector.decoded.rejection_codes import Rejection
from ctxledger_collector.ingest.otlp_resource import json_service, proto_service
from ctxledger_collector.ingest.otlp_spans import MalformedRequest

_LEN = 2  # the wire type of bytes, strings and embedded messages
_BAD_TEXT = "a string is not valid UTF-8 text (invalid bytes or a lone surrogate)"


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise MalformedRequest("body is not a protobuf ExportTraceServiceRequest")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        shift += 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes) -> Iterator[tuple[int, bytes | None]]:
    """(field number, bytes of a length-delimited field, else None) in wire order."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, at = _varint(data, at)
            yield number, None
        elif wire_type == _LEN:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise MalformedRequest("body is not a protobuf ExportTraceServiceRequest")
            yield number, data[at : at + length]
            at += length
        elif wire_type in (1, 5) and at + (8 if wire_type == 1 else 4) <= len(data):
            at += 8 if wire_type == 1 else 4  # fixed64, fixed32
            yield number, None
        else:
            raise MalformedRequest("body is not a protobuf ExportTraceServiceRequest")
    if at != len(data):
        raise MalformedRequest("body is not a protobuf ExportTraceServiceRequest")


def _span_ids(span: bytes) -> tuple[str, str]:
    ids = {1: "", 2: ""}
    for number, value in _fields(span):
        if number in ids and value is not None:
            ids[number] = value.hex()
    return ids[1], ids[2]


def salvage_proto(body: bytes) -> tuple[ExportTraceServiceRequest, list[Rejection]]:
    """The request without its unparsable spans, and their rejections."""
    request = ExportTraceServiceRequest()
    rejected: list[Rejection] = []
    for number, resource_bytes in _fields(body):
        if number != 1 or resource_bytes is None:
            continue
        resource_spans = request.resource_spans.add()
        problem = _merge_resource(resource_spans, resource_bytes)
        for field, scope_bytes in _fields(resource_bytes):
            if field == 2 and scope_bytes is not None:
                _add_scope(resource_spans, scope_bytes, problem, rejected)
    return request, rejected


def _merge_resource(resource_spans: ResourceSpans, data: bytes) -> str | None:
    """Parse the resource and schema URL (every field but the scopes); why not, or None."""
    rest = ResourceSpans()
    try:
        for field, value in _fields(data):
            if field != 2 and value is not None:
                rest.MergeFromString(_encoded(field, value))
    except DecodeError:
        return f"its resource: {_BAD_TEXT}"
    resource_spans.MergeFrom(rest)
    return None


def _add_scope(
    resource_spans: ResourceSpans, data: bytes, problem: str | None, rejected: list[Rejection]
) -> None:
    scope_spans = resource_spans.scope_spans.add()
    header = ScopeSpans()
    try:
        for field, value in _fields(data):
            if field != 2 and value is not None:
                header.MergeFromString(_encoded(field, value))
    except DecodeError:
        problem = problem or f"its instrumentation scope: {_BAD_TEXT}"
    scope_spans.MergeFrom(header)
    service = proto_service(resource_spans.resource.attributes)
    for field, span_bytes in _fields(data):
        if field != 2 or span_bytes is None:
            continue
        span = scope_spans.spans.add()
        reason = problem
        if reason is None:
            try:
                span.MergeFromString(span_bytes)
            except DecodeError as error:
                reason = _BAD_TEXT if "UTF-8" in str(error) else f"not an OTLP span: {error}"
        if reason is not None:
            del scope_spans.spans[-1]
            trace_id, span_id = _span_ids(span_bytes)
            rejected.append(Rejection(trace_id, span_id, reason, codes.MALFORMED_SPAN, service))


def _encoded(field: int, value: bytes) -> bytes:
    return _varint_bytes(field << 3 | _LEN) + _varint_bytes(len(value)) + value


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


# --- JSON -----------------------------------------------------------------------------


def _is_text(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate somewhere inside
        return False
    return True


def salvage_json(body: bytes) -> tuple[dict[str, Any], list[Rejection]] | None:
    """The document without the spans holding text that is not Unicode, and their
    rejections; None when the body is not JSON even so."""
    try:
        document = json.loads(body.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None
    rejected: list[Rejection] = []
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans"), list):
        return None
    for resource_spans in document["resourceSpans"]:
        if not isinstance(resource_spans, dict):
            continue
        outer = {k: v for k, v in resource_spans.items() if k != "scopeSpans"}
        problem = None if _is_text(outer) else f"its resource: {_BAD_TEXT}"
        service = None if problem else _service_or_none(outer)
        for scope_spans in resource_spans.get("scopeSpans") or []:
            if not isinstance(scope_spans, dict) or not isinstance(scope_spans.get("spans"), list):
                continue
            header = {k: v for k, v in scope_spans.items() if k != "spans"}
            reason = problem or (None if _is_text(header) else f"its scope: {_BAD_TEXT}")
            kept = []
            for span in scope_spans["spans"]:
                span_reason = reason or (None if _is_text(span) else _BAD_TEXT)
                if span_reason is None:
                    kept.append(span)
                else:
                    rejected.append(_json_rejection(span, span_reason, service))
            scope_spans["spans"] = kept
        if problem is not None:
            resource_spans.pop("resource", None)
    return document, rejected


def _service_or_none(resource_spans: dict[str, Any]) -> str | None:
    try:
        return json_service(resource_spans)
    except (ValueError, AttributeError):
        return None


def _json_rejection(span: Any, reason: str, service: str | None) -> Rejection:
    ids = span if isinstance(span, dict) else {}

    def shown(name: str) -> str:
        value = ids.get(name)
        return value if isinstance(value, str) and _is_text(value) else ""

    return Rejection(shown("traceId"), shown("spanId"), reason, codes.MALFORMED_SPAN, service)
