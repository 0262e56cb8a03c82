"""What derivation reads of one OTLP span: its ids, times, status, attributes and events,
independent of the encoding it arrived in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxledger import semconv as sc

#: OTLP ``Status.code`` of a span that failed.
STATUS_ERROR = 2


@dataclass(frozen=True)
class SpanEvent:
    name: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class SourceSpan:
    """One span as received (its attributes and events in memory only, never stored)."""

    trace_id: str
    span_id: str
    name: str
    start_time_unix_nano: int
    end_time_unix_nano: int
    attributes: dict[str, Any]
    dropped_attributes_count: int = 0
    service_name: str | None = None
    parent_span_id: str | None = None
    status_code: int = 0
    events: tuple[SpanEvent, ...] = field(default=())
    #: The instrumentation scope that made the span (which package to configure).
    scope_name: str | None = None

    @property
    def failed(self) -> bool:
        """The operation failed: an error status, or an ``error.type`` (the GenAI
        conventions' sign of a failed request)."""
        return self.status_code == STATUS_ERROR or sc.ERROR_TYPE in self.attributes

    @property
    def started_us(self) -> int:
        return self.start_time_unix_nano // 1000

    @property
    def observed_at(self) -> float:
        """The end time in whole microseconds, as the duplicate rule compares it."""
        return (self.end_time_unix_nano // 1000) / 1e6
