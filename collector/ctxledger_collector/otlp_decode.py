"""Decode an OTLP/HTTP ``ExportTraceServiceRequest`` into measurements and manifests.

Pure: bytes in, records and rejections out. Spans that carry no ctxledger attribute but
follow the GenAI or OpenInference conventions go through :mod:`ctxledger_collector.derive`,
which gives the same kind of records; every other span is ignored (counted). A body that
cannot be decoded at all raises :class:`MalformedRequest`; a span that breaks the
contract is rejected alone, with a reason, and the rest of its batch is kept. Only the
contract is checked here (ids, types, required attributes); what the database can hold
is the storage layer's business (:mod:`ctxledger_collector.rows`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from ctxledger import semconv as sc
from ctxledger.redaction import redact_or_none
from ctxledger.verdicts import Manifest, Measurement
from ctxledger.wire import (
    InvalidSpan,
    is_manifest,
    is_measurement,
    manifest_from_attributes,
    measurement_from_attributes,
)
from ctxledger_collector.derive import (
    IssuedCall,
    SourceSpan,
    SpanEvent,
    UnmatchedTool,
    derive_span,
    may_derive,
)

PROTOBUF = "application/x-protobuf"
JSON_TYPE = "application/json"


class MalformedRequest(ValueError):
    """The body is not an ExportTraceServiceRequest in the declared encoding."""


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
        )


@dataclass(frozen=True)
class DecodedMeasurement:
    """A stage measurement span: its rule record and the attributes as received."""

    measurement: Measurement
    attributes: dict[str, Any]
    service_name: str | None


@dataclass(frozen=True)
class DecodedManifest:
    """A request manifest span: its rule record and the attributes as received."""

    manifest: Manifest
    attributes: dict[str, Any]
    service_name: str | None


@dataclass(frozen=True)
class Rejection:
    trace_id: str
    span_id: str
    reason: str


@dataclass
class DecodedBatch:
    measurements: list[DecodedMeasurement] = field(default_factory=list)
    manifests: list[DecodedManifest] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    ignored: int = 0
    #: Calls LLM responses issued, with their signatures (for tool spans without ids).
    issued: list[IssuedCall] = field(default_factory=list)
    #: Tool outputs whose span named no call id, waiting to be matched to one.
    unmatched: list[UnmatchedTool] = field(default_factory=list)
    #: Spans whose records were derived (GenAI, OpenInference).
    derived: int = 0

    @property
    def error_message(self) -> str:
        if not self.rejected:
            return ""
        shown = "; ".join(f"span {r.span_id or '?'}: {r.reason}" for r in self.rejected[:5])
        more = len(self.rejected) - 5
        return shown + (f"; and {more} more" if more > 0 else "")


# --- protobuf ----------------------------------------------------------------------


def _proto_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":  # most values: tried first
        return value.string_value
    if kind == "array_value":  # mostly strings (item ids, field names): no call for those
        return [
            v.string_value if v.WhichOneof("value") == "string_value" else _proto_value(v)
            for v in value.array_value.values
        ]
    if kind is None:
        return None
    if kind == "kvlist_value":
        return {kv.key: _proto_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def _proto_spans(body: bytes) -> Iterator[RawSpan]:
    """The spans of a protobuf body, parsed whole first (so a malformed body is refused
    before any span is handed out)."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as error:
        raise MalformedRequest(
            f"body is not a protobuf ExportTraceServiceRequest: {error}"
        ) from error
    return _proto_request_spans(request)


def _proto_request_spans(request: ExportTraceServiceRequest) -> Iterator[RawSpan]:
    for resource_spans in request.resource_spans:
        resource = {a.key: _proto_value(a.value) for a in resource_spans.resource.attributes}
        service = resource.get(sc.SERVICE_NAME)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield RawSpan(
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    name=span.name,
                    end_time_unix_nano=span.end_time_unix_nano,
                    attributes={a.key: _proto_value(a.value) for a in span.attributes},
                    dropped_attributes_count=span.dropped_attributes_count,
                    service_name=_service(service),
                    start_time_unix_nano=span.start_time_unix_nano,
                    parent_span_id=span.parent_span_id.hex() or None,
                    status_code=span.status.code,
                    events=tuple(
                        SpanEvent(e.name, {a.key: _proto_value(a.value) for a in e.attributes})
                        for e in span.events
                    ),
                )


def _service(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# --- OTLP JSON ---------------------------------------------------------------------


#: The protobuf ranges of the OTLP integers read here (JSON carries them as strings).
_INT64 = (-(2**63), 2**63 - 1)
_UINT64 = (0, 2**64 - 1)
_UINT32 = (0, 2**32 - 1)


def _json_int(value: Any, bounds: tuple[int, int] = _INT64) -> int:
    # OTLP JSON encodes 64-bit integers as strings; numbers are accepted too.
    if isinstance(value, bool):
        raise ValueError("boolean where an integer was expected")
    number = int(value)
    low, high = bounds
    if not low <= number <= high:
        raise ValueError(f"integer {number} is out of range [{low}, {high}]")
    return number


def _json_value(value: Mapping[str, Any]) -> Any:
    if not isinstance(value, Mapping):
        raise ValueError(f"attribute value must be an AnyValue object, got {value!r}")
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return _json_int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [_json_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return _json_attributes(value["kvlistValue"].get("values", []))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    return None


def _json_attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        raise ValueError("attributes must be a list of key/value objects")
    return {str(item["key"]): _json_value(item.get("value", {})) for item in items}


def _json_id(value: Any, length: int, name: str) -> str:
    text = str(value or "")
    if len(text) != length * 2:
        raise ValueError(f"{name} must be {length * 2} hex characters, got {text!r}")
    try:
        bytes.fromhex(text)
    except ValueError as error:
        raise ValueError(f"{name} is not hex: {text!r}") from error
    return text.lower()


def _json_spans(body: bytes, rejected: list[Rejection]) -> Iterator[RawSpan]:
    try:
        document = orjson.loads(body)
    except (UnicodeDecodeError, ValueError) as error:
        raise MalformedRequest(f"body is not valid JSON: {error}") from error
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans", []), list):
        raise MalformedRequest("body is not an OTLP JSON ExportTraceServiceRequest")
    for resource_spans in document.get("resourceSpans", []):
        try:
            resource = _json_attributes(resource_spans.get("resource", {}).get("attributes", []))
            service = resource.get(sc.SERVICE_NAME)
            scopes = resource_spans.get("scopeSpans", [])
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise MalformedRequest(f"malformed resourceSpans entry: {error}") from error
        for scope_spans in scopes:
            for span in scope_spans.get("spans", []) if isinstance(scope_spans, dict) else []:
                try:
                    yield RawSpan(
                        trace_id=_json_id(span.get("traceId"), 16, "traceId"),
                        span_id=_json_id(span.get("spanId"), 8, "spanId"),
                        name=str(span.get("name", "")),
                        end_time_unix_nano=_json_int(span.get("endTimeUnixNano", 0), _UINT64),
                        attributes=_json_attributes(span.get("attributes", [])),
                        dropped_attributes_count=_json_int(
                            span.get("droppedAttributesCount", 0), _UINT32
                        ),
                        service_name=_service(service),
                        start_time_unix_nano=_json_int(span.get("startTimeUnixNano", 0), _UINT64),
                        parent_span_id=str(span.get("parentSpanId") or "").lower() or None,
                        status_code=_json_int((span.get("status") or {}).get("code", 0), _UINT32),
                        events=tuple(
                            SpanEvent(
                                str(e.get("name", "")), _json_attributes(e.get("attributes", []))
                            )
                            for e in span.get("events", [])
                        ),
                    )
                except (AttributeError, KeyError, TypeError, ValueError, binascii.Error) as error:
                    span_id = str(span.get("spanId", "")) if isinstance(span, dict) else ""
                    trace_id = str(span.get("traceId", "")) if isinstance(span, dict) else ""
                    rejected.append(Rejection(trace_id, span_id, f"malformed span: {error}"))


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
    for stage in derived.stages:
        content = {sc.CONTENT_TEXT: stage.text[:_MAX_CONTENT]} if stage.text is not None else {}
        batch.measurements.append(DecodedMeasurement(stage.measurement, content, span.service_name))
    if derived.manifest is not None:
        batch.manifests.append(DecodedManifest(derived.manifest, {}, span.service_name))
    batch.issued.extend(derived.issued)
    batch.unmatched.extend(derived.unmatched)


#: The most content kept per derived stage when the operator opted in (as the SDK's).
_MAX_CONTENT = 65_536


def redacted_content(attrs: dict[str, Any]) -> dict[str, Any]:
    """A measurement span's attributes with its captured content (if any) redacted
    again, whatever sent it; content that cannot be redacted is not kept."""
    text = attrs.get(sc.CONTENT_TEXT)
    if text is None:
        return attrs
    kept = {k: v for k, v in attrs.items() if k != sc.CONTENT_TEXT}
    masked = redact_or_none(text, _MAX_CONTENT) if isinstance(text, str) else None
    if masked is not None:
        kept[sc.CONTENT_TEXT] = masked
    return kept


def _classify(span: RawSpan, batch: DecodedBatch, keep_content: bool = False) -> None:
    attrs = span.attributes
    if not (is_measurement(attrs) or is_manifest(attrs)):
        if may_derive(attrs):
            _derive(span, batch, keep_content)
        else:
            batch.ignored += 1
        return
    if span.trace_id == "0" * 32 or not span.trace_id or len(span.trace_id) != 32:
        batch.rejected.append(Rejection(span.trace_id, span.span_id, "invalid trace id"))
        return
    if len(span.span_id) != 16:
        reason = f"span id must be 8 bytes, got {len(span.span_id) // 2}"
        batch.rejected.append(Rejection(span.trace_id, span.span_id, reason))
        return
    # Whole microseconds: the resolution the duplicate rule and the database compare at.
    observed_at = (span.end_time_unix_nano // 1000) / 1e6
    try:
        if is_measurement(attrs):
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
        batch.rejected.append(Rejection(span.trace_id, span.span_id, str(error)))


def decode_export_chunks(
    body: bytes, content_type: str, chunk_spans: int = 2_048, keep_content: bool = False
) -> Iterator[DecodedBatch]:
    """Decode one OTLP/HTTP export body (already decompressed) in batches of about
    ``chunk_spans`` measurements and manifests, so a large export never holds all its
    records at once. A malformed body raises :class:`MalformedRequest` before the first
    batch; rejections and ignored spans are counted in the batch they occur in.
    ``keep_content`` keeps the text of derived stages (the operator's opt-in)."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == PROTOBUF:
        spans = _proto_spans(body)
        batch = DecodedBatch()
        for span in spans:
            _classify(span, batch, keep_content)
            if len(batch.measurements) + len(batch.manifests) >= chunk_spans:
                yield batch
                batch = DecodedBatch()
        yield batch
    elif media_type == JSON_TYPE:
        # Its structure is checked as it is walked: walked whole before handing anything out.
        yield decode_export_request(body, content_type, keep_content)
    else:
        raise ValueError(f"unsupported content type {content_type!r}")


def decode_export_request(
    body: bytes, content_type: str, keep_content: bool = False
) -> DecodedBatch:
    """Decode one OTLP/HTTP export body (already decompressed) at once."""
    batch = DecodedBatch()
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == PROTOBUF:
        spans: Iterator[RawSpan] = _proto_spans(body)
    elif media_type == JSON_TYPE:
        spans = _json_spans(body, batch.rejected)
    else:
        raise ValueError(f"unsupported content type {content_type!r}")
    for span in spans:
        _classify(span, batch, keep_content)
    return batch
