"""Serialized OTLP trace requests: encoding a batch, and halving one the collector found
too large (413), so that one oversized span does not cost the whole batch."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan


def encode(spans: Sequence[ReadableSpan]) -> bytes:
    """The ``ExportTraceServiceRequest`` body of ``spans``, as OTLP/HTTP sends it."""
    return bytes(encode_spans(spans).SerializePartialToString())


def _span_slots(request: ExportTraceServiceRequest) -> list[tuple[int, int, int]]:
    return [
        (r, s, i)
        for r, resource_spans in enumerate(request.resource_spans)
        for s, scope_spans in enumerate(resource_spans.scope_spans)
        for i in range(len(scope_spans.spans))
    ]


def _subset(
    request: ExportTraceServiceRequest, slots: Sequence[tuple[int, int, int]]
) -> ExportTraceServiceRequest:
    """A request with only the spans at ``slots``, each under its own resource and scope."""
    part = ExportTraceServiceRequest()
    chosen: dict[tuple[int, int], list[int]] = {}
    for r, s, i in slots:
        chosen.setdefault((r, s), []).append(i)
    last_resource = -1
    for (r, s), indexes in chosen.items():
        source_resource = request.resource_spans[r]
        if r != last_resource:
            target_resource = part.resource_spans.add()
            target_resource.resource.CopyFrom(source_resource.resource)
            target_resource.schema_url = source_resource.schema_url
            last_resource = r
        source_scope = source_resource.scope_spans[s]
        target_scope = target_resource.scope_spans.add()
        target_scope.scope.CopyFrom(source_scope.scope)
        target_scope.schema_url = source_scope.schema_url
        for i in indexes:
            target_scope.spans.add().CopyFrom(source_scope.spans[i])
    return part


def halve(body: bytes) -> list[tuple[bytes, int]] | None:
    """Two requests holding the spans of ``body`` between them, in order, with their span
    counts; None when it holds fewer than two spans (or cannot be read)."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except Exception:
        return None
    slots = _span_slots(request)
    if len(slots) < 2:
        return None
    middle = len(slots) // 2
    return [
        (bytes(_subset(request, half).SerializeToString()), len(half))
        for half in (slots[:middle], slots[middle:])
    ]
