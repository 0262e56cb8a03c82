"""One derived stage record: a tool result's measurement as the SDK's stage span would
give it, the agent a span names, and what of a text the operator's opt-in keeps."""

from __future__ import annotations

from ctxledger import semconv as sc
from ctxledger.redaction import redact_or_none
from ctxledger.text import TextMeasurement
from ctxledger.verdicts import Measurement
from ctxledger_collector.derive.spans import SourceSpan

#: The most content kept per derived stage when the operator opted in (as the SDK's).
MAX_CONTENT_CHARS = 65_536


def kept_content(text: str) -> str | None:
    """What the operator's opt-in keeps of a text: redacted, cut; None (nothing kept)
    when it cannot be redacted."""
    return redact_or_none(text, MAX_CONTENT_CHARS)


def agent_of(span: SourceSpan) -> str | None:
    name = span.attributes.get(sc.AGENT_NAME)
    return name if isinstance(name, str) and name else span.service_name


def stage_measurement(
    span: SourceSpan,
    measured: TextMeasurement,
    *,
    call_id: str,
    stage: str,
    order: int,
    source: str,
    request_id: str | None = None,
    tool_name: str | None = None,
    step: int | None = None,
    cut: str | None = None,
    inferred: bool = False,
) -> Measurement:
    return Measurement(
        trace_id=span.trace_id,
        tool_call_id=call_id,
        stage=stage,
        order=order,
        chars=measured.chars,
        request_id=request_id,
        tool_name=tool_name,
        agent_name=agent_of(span),
        step=step,
        bytes=measured.bytes,
        tokens=measured.tokens,
        tokenizer=measured.tokenizer,
        tokens_estimated=measured.tokens_estimated,
        canonical_chars=measured.canonical_chars,
        items=measured.items,
        item_ids=measured.item_ids,
        ids_complete=measured.ids_complete,
        fields=measured.fields,
        fields_complete=measured.fields_complete,
        priority_items=measured.priority_items,
        sha256=measured.sha256,
        canonical_sha256=measured.canonical_sha256,
        json_valid=measured.json_valid_attribute,
        marker=bool(measured.markers_found),
        markers_found=measured.markers_found,
        observed_at=span.observed_at,
        span_id=span.span_id,
        source=source,
        telemetry_cut=cut,
        inferred=inferred,
    )
