"""OTLP spans, protobuf or JSON, read into :class:`RawSpan` within the ingest limits.

Pure. A body that is not an ``ExportTraceServiceRequest`` raises
:class:`MalformedRequest`; one with more spans than allowed raises :class:`TooManySpans`
(the route answers 413 and stores nothing). A span over a per-span limit (attributes,
events, value length, ``AnyValue`` nesting) comes out as a :class:`Rejection` instead, so
the rest of its batch is kept. Values are read with explicit depth accounting, so no
input can drive the readers into a ``RecursionError``. This module holds what both
readers share: :mod:`ctxledger_collector.ingest.otlp_proto` and
:mod:`ctxledger_collector.ingest.otlp_json` read the two encodings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxledger_collector.decoded import rejection_codes as codes
from ctxledger_collector.derive import SourceSpan, SpanEvent


class MalformedRequest(ValueError):
    """The body is not an ExportTraceServiceRequest in the declared encoding."""


class TooManySpans(ValueError):
    """The export holds more spans than one request may."""


@dataclass(frozen=True)
class DecodeLimits:
    """What one export request and one span may hold (see ``docs/collector.md``)."""

    max_spans: int = 100_000
    max_attributes: int = 1_024
    max_events: int = 1_024
    max_value_chars: int = 8 * 1024 * 1024
    max_value_items: int = 100_000
    max_depth: int = 16


class Refused(Exception):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass(frozen=True)
class RawSpan:
    """The parts of an OTLP span the collector reads, encoding-independent."""

    trace_id: str
    span_id: str
    name: str
    end_time_unix_nano: int
    attributes: dict[str, Any]
    dropped_attributes_count: int
    service_name: str | None
    start_time_unix_nano: int = 0
    parent_span_id: str | None = None
    status_code: int = 0
    events: tuple[SpanEvent, ...] = ()
    scope_name: str | None = None

    def source_span(self) -> SourceSpan:
        return SourceSpan(
            trace_id=self.trace_id,
            span_id=self.span_id,
            name=self.name,
            start_time_unix_nano=self.start_time_unix_nano,
            end_time_unix_nano=self.end_time_unix_nano,
            attributes=self.attributes,
            dropped_attributes_count=self.dropped_attributes_count,
            service_name=self.service_name,
            parent_span_id=self.parent_span_id,
            status_code=self.status_code,
            events=self.events,
            scope_name=self.scope_name,
        )


def check_count(count: int, limit: int, what: str) -> None:
    if count > limit:
        raise Refused(codes.TOO_MANY_ATTRIBUTES, f"{count} {what}, over the limit of {limit}")


def check_length(length: int, limit: int, what: str) -> None:
    if length > limit:
        raise Refused(codes.VALUE_TOO_LONG, f"{what} of length {length}, over the limit of {limit}")


def check_nesting(level: int, limits: DecodeLimits) -> None:
    if level > limits.max_depth:
        raise Refused(
            codes.NESTING_TOO_DEEP,
            f"attribute value nested deeper than {limits.max_depth} arrays or key/value lists",
        )


def too_many_spans(count: int, limits: DecodeLimits, what: str = "spans") -> None:
    if count > limits.max_spans:
        raise TooManySpans(
            f"the export holds {count} {what}, over the limit of {limits.max_spans} per "
            "request: send smaller batches"
        )
