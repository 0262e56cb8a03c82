"""Exports whose text is not all valid Unicode, or (JSON) holding a number no span can
hold: the spans (or log records) that hold it are rejected alone, the rest of the export
is kept.

Only called when a whole-body parse failed. A protobuf string field with invalid UTF-8
fails the parse of the whole message in the protobuf runtime, and invalid UTF-8 bytes, a
lone surrogate (``\\ud800``), a number past a double's range (``1e400``), a bare integer
of thousands of digits or ``NaN`` fail a JSON body's parse. Here the body is split instead:
protobuf at the wire level (``resource_spans`` → ``scope_spans`` → ``spans``, or
``resource_logs`` → ``scope_logs`` → ``log_records``: the same field numbers), each part
parsed on its own; JSON read leniently, each item checked for text that is not Unicode.
What survives is an ordinary request, decoded as usual; a body that is malformed beyond
its text still raises :class:`MalformedRequest`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs, ScopeLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

from ctxledger_collector.decoded import rejection_codes as codes
from ctxledger_collector.decoded.rejection_codes import Rejection
from ctxledger_collector.ingest.json_numbers import json_problem, lenient_loads
from ctxledger_collector.ingest.otlp_resource import json_service, proto_service
from ctxledger_collector.ingest.otlp_spans import MalformedRequest

_LEN = 2  # the wire type of bytes, strings and embedded messages
_BAD_TEXT = "a string is not valid UTF-8 text (invalid bytes or a lone surrogate)"


@dataclass(frozen=True)
class Signal:
    """What differs between a trace export and a logs export, for the salvage: the
    messages, where an item holds its trace and span ids, and the JSON keys."""

    request: type[Message]
    resource: type[Message]
    scope: type[Message]
    #: The item's trace id and span id fields (a span: 1, 2; a log record: 9, 10).
    id_fields: tuple[int, int]
    resources_key: str
    scopes_key: str
    items_key: str
    item: str
    #: Items may have no ids (a log record outside any trace): such an item's rejection
    #: is named by this prefix and a digest of the item, so each is listed on its own.
    anonymous_prefix: str | None = None


def anonymous_id(prefix: str, data: bytes) -> str:
    """The name of an item that has no span id: ``prefix`` and a digest of its bytes."""
    return prefix + hashlib.blake2b(data, digest_size=8).hexdigest()


TRACES = Signal(
    ExportTraceServiceRequest,
    ResourceSpans,
    ScopeSpans,
    (1, 2),
    "resourceSpans",
    "scopeSpans",
    "spans",
    "span",
)
LOGS = Signal(
    ExportLogsServiceRequest,
    ResourceLogs,
    ScopeLogs,
    (9, 10),
    "resourceLogs",
    "scopeLogs",
    "logRecords",
    "log record",
    "log:",
)


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


def _item_ids(item: bytes, signal: Signal) -> tuple[str, str]:
    ids = dict.fromkeys(signal.id_fields, "")
    for number, value in _fields(item):
        if number in ids and value is not None:
            ids[number] = value.hex()
    trace_field, span_field = signal.id_fields
    return ids[trace_field], ids[span_field]


def salvage_proto(body: bytes, signal: Signal = TRACES) -> tuple[Any, list[Rejection]]:
    """The request (``signal.request``) without its unparsable items, and their
    rejections."""
    request = signal.request()
    rejected: list[Rejection] = []
    # Field 1 of either request holds its resources, field 2 of a resource its scopes.
    resources = getattr(request, signal.request.DESCRIPTOR.fields_by_number[1].name)
    for number, resource_bytes in _fields(body):
        if number != 1 or resource_bytes is None:
            continue
        resource = resources.add()
        problem = _merge_resource(resource, resource_bytes, signal)
        for field, scope_bytes in _fields(resource_bytes):
            if field == 2 and scope_bytes is not None:
                _add_scope(resource, scope_bytes, problem, rejected, signal)
    return request, rejected


def _merge_resource(resource: Any, data: bytes, signal: Signal) -> str | None:
    """Parse the resource and schema URL (every field but the scopes); why not, or None."""
    rest = signal.resource()
    try:
        for field, value in _fields(data):
            if field != 2 and value is not None:
                rest.MergeFromString(_encoded(field, value))
    except DecodeError:
        return f"its resource: {_BAD_TEXT}"
    resource.MergeFrom(rest)
    return None


def _add_scope(
    resource: Any, data: bytes, problem: str | None, rejected: list[Rejection], signal: Signal
) -> None:
    scope = getattr(resource, signal.resource.DESCRIPTOR.fields_by_number[2].name).add()
    header = signal.scope()
    try:
        for field, value in _fields(data):
            if field != 2 and value is not None:
                header.MergeFromString(_encoded(field, value))
    except DecodeError:
        problem = problem or f"its instrumentation scope: {_BAD_TEXT}"
    scope.MergeFrom(header)
    items = getattr(scope, signal.scope.DESCRIPTOR.fields_by_number[2].name)
    service = proto_service(resource.resource.attributes)
    for field, item_bytes in _fields(data):
        if field != 2 or item_bytes is None:
            continue
        item = items.add()
        reason = problem
        if reason is None:
            try:
                item.MergeFromString(item_bytes)
            except DecodeError as error:
                bad = "UTF-8" in str(error)
                reason = _BAD_TEXT if bad else f"not an OTLP {signal.item}: {error}"
        if reason is not None:
            del items[-1]
            trace_id, span_id = _item_ids(item_bytes, signal)
            if not span_id and signal.anonymous_prefix:
                span_id = anonymous_id(signal.anonymous_prefix, item_bytes)
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


def _problem(value: Any) -> str | None:
    return json_problem(value, _BAD_TEXT)


def _is_text(value: Any) -> bool:
    return _problem(value) is None


def salvage_json(
    body: bytes, signal: Signal = TRACES
) -> tuple[dict[str, Any], list[Rejection]] | None:
    """The document without the items holding text that is not Unicode, and their
    rejections; None when the body is not JSON even so."""
    try:
        document = lenient_loads(body.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None
    rejected: list[Rejection] = []
    if not isinstance(document, dict) or not isinstance(document.get(signal.resources_key), list):
        return None
    for resource in document[signal.resources_key]:
        if not isinstance(resource, dict):
            continue
        outer = {k: v for k, v in resource.items() if k != signal.scopes_key}
        problem = _in("its resource", _problem(outer))
        service = None if problem else _service_or_none(outer)
        for scope in resource.get(signal.scopes_key) or []:
            if not isinstance(scope, dict) or not isinstance(scope.get(signal.items_key), list):
                continue
            header = {k: v for k, v in scope.items() if k != signal.items_key}
            reason = problem or _in("its scope", _problem(header))
            kept = []
            for item in scope[signal.items_key]:
                item_reason = reason or _problem(item)
                if item_reason is None:
                    kept.append(item)
                else:
                    rejected.append(_json_rejection(item, item_reason, service, signal))
            scope[signal.items_key] = kept
        if problem is not None:
            resource.pop("resource", None)
    return document, rejected


def _in(where: str, problem: str | None) -> str | None:
    return None if problem is None else f"{where}: {problem}"


def _service_or_none(resource_spans: dict[str, Any]) -> str | None:
    try:
        return json_service(resource_spans)
    except (ValueError, AttributeError):
        return None


def _json_rejection(span: Any, reason: str, service: str | None, signal: Signal) -> Rejection:
    ids = span if isinstance(span, dict) else {}

    def shown(name: str) -> str:
        value = ids.get(name)
        return value if isinstance(value, str) and _is_text(value) else ""

    span_id = shown("spanId")
    if not span_id and signal.anonymous_prefix:
        data = repr(span).encode("utf-8", "surrogatepass")
        span_id = anonymous_id(signal.anonymous_prefix, data)
    return Rejection(shown("traceId"), span_id, reason, codes.MALFORMED_SPAN, service)
