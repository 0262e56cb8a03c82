"""OTLP log records, protobuf or JSON, read into :class:`RawLogRecord` within the ingest
limits (contract section 8): the same readers, limits and salvage as spans
(:mod:`.otlp_spans`). A body that is not an ``ExportLogsServiceRequest`` raises
:class:`MalformedRequest`; a record over a per-record limit, or holding text that is not
Unicode, comes out as a :class:`Rejection` and the rest of the export is kept."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from ctxledger_collector.decoded import rejection_codes as codes
from ctxledger_collector.decoded.rejection_codes import Rejection
from ctxledger_collector.ingest.otlp_json import (
    MALFORMED,
    UINT64,
    json_attributes,
    json_int,
    json_value,
)
from ctxledger_collector.ingest.otlp_proto import proto_attributes, proto_value
from ctxledger_collector.ingest.otlp_resource import json_service, proto_service
from ctxledger_collector.ingest.otlp_salvage import LOGS, anonymous_id, salvage_json, salvage_proto
from ctxledger_collector.ingest.otlp_spans import (
    DecodeLimits,
    MalformedRequest,
    Refused,
    check_count,
    too_many_spans,
)

_WHAT = "log records"
_ANONYMOUS = LOGS.anonymous_prefix or ""


@dataclass(frozen=True)
class RawLogRecord:
    """The parts of an OTLP log record the collector reads, encoding-independent."""

    time_unix_nano: int
    observed_time_unix_nano: int
    event_name: str
    body: Any
    attributes: dict[str, Any]
    dropped_attributes_count: int
    trace_id: str
    span_id: str
    service_name: str | None
    scope_name: str | None


def proto_log_records(body: bytes, limits: DecodeLimits) -> Iterator[RawLogRecord | Rejection]:
    """The records of a protobuf body, parsed whole first (so a malformed or oversized
    body is refused before any record is handed out)."""
    request = ExportLogsServiceRequest()
    rejected: list[Rejection] = []
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as error:
        if "UTF-8" not in str(error):
            raise MalformedRequest(
                f"body is not a protobuf ExportLogsServiceRequest: {error}"
            ) from error
        request, rejected = salvage_proto(body, LOGS)
    count = sum(len(s.log_records) for r in request.resource_logs for s in r.scope_logs)
    too_many_spans(count + len(rejected), limits, _WHAT)
    return itertools.chain(rejected, _proto_records(request, limits))


def _proto_records(
    request: ExportLogsServiceRequest, limits: DecodeLimits
) -> Iterator[RawLogRecord | Rejection]:
    for resource_logs in request.resource_logs:
        service = proto_service(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            scope = scope_logs.scope.name[:256] or None
            for record in scope_logs.log_records:
                try:
                    check_count(len(record.attributes), limits.max_attributes, "attributes")
                    yield RawLogRecord(
                        time_unix_nano=record.time_unix_nano,
                        observed_time_unix_nano=record.observed_time_unix_nano,
                        event_name=record.event_name[:256],
                        body=proto_value(record.body, limits),
                        attributes=proto_attributes(record.attributes, limits),
                        dropped_attributes_count=record.dropped_attributes_count,
                        trace_id=record.trace_id.hex(),
                        span_id=record.span_id.hex(),
                        service_name=service,
                        scope_name=scope,
                    )
                except Refused as refused:
                    span_id = record.span_id.hex() or anonymous_id(
                        _ANONYMOUS, record.SerializeToString()
                    )
                    yield Rejection(
                        record.trace_id.hex(),
                        span_id,
                        f"log record: {refused.detail}",
                        refused.code,
                        service,
                    )


def json_log_records(body: bytes, limits: DecodeLimits) -> Iterator[RawLogRecord | Rejection]:
    """The records of an OTLP JSON body; its structure is checked as it is walked."""
    rejected: list[Rejection] = []
    try:
        document = orjson.loads(body)
    except (UnicodeDecodeError, ValueError) as error:
        salvaged = salvage_json(body, LOGS)
        if salvaged is None or not salvaged[1]:
            raise MalformedRequest(f"body is not valid JSON: {error}") from error
        document, rejected = salvaged
    if not isinstance(document, dict) or not isinstance(document.get("resourceLogs", []), list):
        raise MalformedRequest("body is not an OTLP JSON ExportLogsServiceRequest")
    lists = list(_json_record_lists(document))
    too_many_spans(sum(len(records) for _, _, records in lists) + len(rejected), limits, _WHAT)
    return itertools.chain(rejected, _json_records(lists, limits))


def _json_record_lists(
    document: dict[str, Any],
) -> Iterator[tuple[str | None, str | None, list[Any]]]:
    for resource_logs in document.get("resourceLogs", []):
        try:
            service = json_service(resource_logs)
            scopes = resource_logs.get("scopeLogs", [])
            iter(scopes)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise MalformedRequest(f"malformed resourceLogs entry: {error}") from error
        for scope_logs in scopes:
            records = scope_logs.get("logRecords", []) if isinstance(scope_logs, dict) else []
            scope = scope_logs.get("scope") if isinstance(scope_logs, dict) else None
            name = scope.get("name") if isinstance(scope, dict) else None
            scope_name = name[:256] if isinstance(name, str) and name else None
            yield scope_name, service, records if isinstance(records, list) else []


def _json_records(
    lists: list[tuple[str | None, str | None, list[Any]]], limits: DecodeLimits
) -> Iterator[RawLogRecord | Rejection]:
    for scope, service, records in lists:
        for record in records:
            try:
                yield _json_record(record, service, scope, limits)
            except Refused as refused:
                yield _json_rejection(record, refused.detail, refused.code, service)
            except MALFORMED as error:
                detail = f"malformed log record: {error}"
                yield _json_rejection(record, detail, codes.MALFORMED_SPAN, service)


def _hex_or_empty(value: Any, length: int, name: str) -> str:
    """An optional id (a record outside any trace has none) as lower-case hex."""
    if value in (None, ""):
        return ""
    if not isinstance(value, str) or len(value) != length * 2:
        raise ValueError(f"{name} must be {length * 2} hex characters")
    bytes.fromhex(value)
    return value.lower()


def _json_record(
    record: Any, service: str | None, scope: str | None, limits: DecodeLimits
) -> RawLogRecord:
    attributes = record.get("attributes", [])
    if isinstance(attributes, list):
        check_count(len(attributes), limits.max_attributes, "attributes")
    event_name = record.get("eventName", "")
    if not isinstance(event_name, str):
        raise ValueError("eventName must be a string")
    return RawLogRecord(
        time_unix_nano=json_int(record.get("timeUnixNano", 0), UINT64),
        observed_time_unix_nano=json_int(record.get("observedTimeUnixNano", 0), UINT64),
        event_name=event_name[:256],
        body=json_value(record["body"], limits) if "body" in record else None,
        attributes=json_attributes(attributes, limits),
        dropped_attributes_count=json_int(record.get("droppedAttributesCount", 0)),
        trace_id=_hex_or_empty(record.get("traceId"), 16, "traceId"),
        span_id=_hex_or_empty(record.get("spanId"), 8, "spanId"),
        service_name=service,
        scope_name=scope,
    )


def _json_rejection(record: Any, detail: str, code: str, service: str | None) -> Rejection:
    ids = record if isinstance(record, dict) else {}

    def shown(name: str) -> str:
        value = ids.get(name)
        return value if isinstance(value, str) else ""

    span_id = shown("spanId") or anonymous_id(
        _ANONYMOUS, repr(record).encode("utf-8", "surrogatepass")
    )
    return Rejection(shown("traceId"), span_id, f"log record: {detail}", code, service)
