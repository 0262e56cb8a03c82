"""Decode an OTLP/HTTP ``ExportTraceServiceRequest`` into measurements and manifests.

Pure: bytes in, records and rejections out. Spans that carry no ctxledger attribute but
follow the GenAI or OpenInference conventions go through :mod:`ctxledger_collector.derive`,
which gives the same kind of records; every other span is ignored (counted). A body that
cannot be decoded at all raises :class:`MalformedRequest`; a span that breaks the
contract is rejected alone, with a reason, and the rest of its batch is kept. Only the
contract is checked here (ids, types, required attributes); what the database can hold
is the storage layer's business (:mod:`ctxledger_collector.storage.rows`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from ctxledger import semconv as sc
from ctxledger.wire import (
    InvalidSpan,
    is_manifest,
    is_measurement,
    manifest_from_attributes,
    measurement_from_attributes,
)
from ctxledger.wire_received import (
    is_received,
    received_from_attributes,
)
from ctxledger_collector.decoded import rejection_codes as codes
from ctxledger_collector.decoded.batch import (
    DecodedBatch,
    DecodedManifest,
    DecodedMeasurement,
)
from ctxledger_collector.decoded.rejection_codes import Rejection
from ctxledger_collector.derive import derive_span, may_derive
from ctxledger_collector.derive.stage_records import kept_content
from ctxledger_collector.ingest.body_files import BodyFiles
from ctxledger_collector.ingest.derived_records import add_derived, add_received
from ctxledger_collector.ingest.log_decode import NO_BODY_FILES, log_chunks
from ctxledger_collector.ingest.media_types import JSON_TYPE, PROTOBUF, by_media_type
from ctxledger_collector.ingest.otlp_json import json_spans
from ctxledger_collector.ingest.otlp_proto import proto_spans
from ctxledger_collector.ingest.otlp_spans import (
    DecodeLimits,
    MalformedRequest,
    RawSpan,
    TooManySpans,
)

__all__ = [
    "JSON_TYPE",
    "LOGS",
    "PROTOBUF",
    "TRACES",
    "DecodeLimits",
    "MalformedRequest",
    "RawSpan",
    "Signal",
    "TooManySpans",
    "decode_export_chunks",
    "decode_export_request",
]


#: What an export carries: spans (``POST /v1/traces``) or log records (``/v1/logs``).
Signal = Literal["traces", "logs"]
TRACES: Signal = "traces"
LOGS: Signal = "logs"


# --- classification ------------------------------------------------------------------


def _valid_ids(span: RawSpan) -> bool:
    return span.trace_id != "0" * 32 and len(span.trace_id) == 32 and len(span.span_id) == 16


def _derive(span: RawSpan, batch: DecodedBatch, keep_content: bool) -> None:
    """The records of a span that follows the GenAI or OpenInference conventions."""
    derived = derive_span(span.source_span(), keep_content) if _valid_ids(span) else None
    if derived is None:
        batch.ignored += 1
        return
    batch.derived += 1
    add_derived(derived, batch, span.service_name)


def redacted_content(attrs: dict[str, Any]) -> dict[str, Any]:
    """A measurement span's attributes with its captured content (if any) redacted
    again, whatever sent it; content that cannot be redacted is not kept."""
    text = attrs.get(sc.CONTENT_TEXT)
    if text is None:
        return attrs
    kept = {k: v for k, v in attrs.items() if k != sc.CONTENT_TEXT}
    masked = kept_content(text) if isinstance(text, str) else None
    if masked is not None:
        kept[sc.CONTENT_TEXT] = masked
    return kept


def _classify(span: RawSpan, batch: DecodedBatch, keep_content: bool = False) -> None:
    attrs = span.attributes
    service = span.service_name
    if not (is_measurement(attrs) or is_manifest(attrs)):
        if may_derive(attrs, span.events, span.name, service):
            _derive(span, batch, keep_content)
        else:
            batch.ignored += 1
        return
    if span.trace_id == "0" * 32 or not span.trace_id or len(span.trace_id) != 32:
        batch.rejected.append(
            Rejection(span.trace_id, span.span_id, "invalid trace id", codes.INVALID_ID, service)
        )
        return
    if len(span.span_id) != 16:
        reason = f"span id must be 8 bytes, got {len(span.span_id) // 2}"
        batch.rejected.append(
            Rejection(span.trace_id, span.span_id, reason, codes.INVALID_ID, service)
        )
        return
    # Whole microseconds: the resolution the duplicate rule and the database compare at.
    observed_at = (span.end_time_unix_nano // 1000) / 1e6
    try:
        if is_received(attrs):
            _received(span, batch, observed_at)
        elif is_measurement(attrs):
            # The contract names the agent by gen_ai.agent.name, else service.name.
            measurement = measurement_from_attributes(
                attrs,
                trace_id=span.trace_id,
                span_id=span.span_id,
                observed_at=observed_at,
                dropped_attributes=span.dropped_attributes_count,
                default_agent=span.service_name or None,
            )
            batch.measurements.append(
                DecodedMeasurement(measurement, redacted_content(attrs), span.service_name)
            )
        else:
            manifest = manifest_from_attributes(
                attrs,
                trace_id=span.trace_id,
                span_id=span.span_id,
                observed_at=observed_at,
                default_agent=span.service_name or None,
            )
            batch.manifests.append(DecodedManifest(manifest, attrs, span.service_name))
    except InvalidSpan as error:
        batch.rejected.append(
            Rejection(span.trace_id, span.span_id, str(error), codes.CONTRACT, service)
        )


def _received(span: RawSpan, batch: DecodedBatch, observed_at: float) -> None:
    """A ``received`` span: one ``received`` measurement per tool result of its request,
    each stating what the server's count says became of it (contract section 7)."""
    record = received_from_attributes(
        span.attributes,
        trace_id=span.trace_id,
        span_id=span.span_id,
        observed_at=observed_at,
        default_agent=span.service_name or None,
    )
    add_received(batch, record, span.attributes, span.service_name)


DEFAULT_LIMITS = DecodeLimits()


def _spans(body: bytes, content_type: str, limits: DecodeLimits) -> Iterator[RawSpan | Rejection]:
    return by_media_type(
        content_type, lambda: proto_spans(body, limits), lambda: json_spans(body, limits)
    )


def decode_export_chunks(
    body: bytes,
    content_type: str,
    chunk_spans: int = 2_048,
    keep_content: bool = False,
    limits: DecodeLimits = DEFAULT_LIMITS,
    signal: Signal = TRACES,
    body_files: BodyFiles = NO_BODY_FILES,
) -> Iterator[DecodedBatch]:
    """Decode one OTLP/HTTP export body (already decompressed) in batches of about
    ``chunk_spans`` measurements and manifests (or log records), so a large export never
    holds all its records at once. A malformed body raises :class:`MalformedRequest`, one
    with too many spans :class:`TooManySpans`, both before the first batch; rejections and
    ignored spans are counted in the batch they occur in. ``keep_content`` keeps the text
    of derived stages and log bodies (the operator's opt-in); ``body_files`` says which
    request body files a log event may have its body read from."""
    if signal == LOGS:
        return log_chunks(body, content_type, limits, chunk_spans, keep_content, body_files)
    spans = _spans(body, content_type, limits)  # parsed and counted here, not lazily
    return _chunks(spans, chunk_spans, keep_content)


def _chunks(
    spans: Iterator[RawSpan | Rejection], chunk_spans: int, keep_content: bool
) -> Iterator[DecodedBatch]:
    batch = DecodedBatch()
    for span in spans:
        if isinstance(span, Rejection):
            batch.rejected.append(span)
            continue
        _classify(span, batch, keep_content)
        if len(batch.measurements) + len(batch.manifests) >= chunk_spans:
            yield batch
            batch = DecodedBatch()
    yield batch


def decode_export_request(
    body: bytes,
    content_type: str,
    keep_content: bool = False,
    limits: DecodeLimits = DEFAULT_LIMITS,
) -> DecodedBatch:
    """Decode one OTLP/HTTP export body (already decompressed) at once."""
    batch = DecodedBatch()
    for span in _spans(body, content_type, limits):
        if isinstance(span, Rejection):
            batch.rejected.append(span)
        else:
            _classify(span, batch, keep_content)
    return batch
