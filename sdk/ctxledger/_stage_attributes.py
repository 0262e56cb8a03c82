"""The contract's span attributes for one stage measurement: sizes, counts, digests and
ids, never the text itself unless content capture is opted in (and then redacted:
``ctxledger.redaction``)."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from ctxledger import semconv as sc
from ctxledger._analysis import TextMeasurement
from ctxledger._jobs import StageJob
from ctxledger.redaction import redact_or_none

#: Captured content (opt-in) is cut here, so one huge result cannot fill a span.
_CONTENT_LIMIT = 65_536


def measurement_attributes(measured: TextMeasurement) -> dict[str, AttributeValue]:
    """The attributes that depend on the measured text only: the stages of a journey
    that saw the same text share them."""
    attrs: dict[str, AttributeValue] = {
        sc.SIZE_CHARS: measured.chars,
        sc.SIZE_BYTES: measured.bytes,
        sc.CONTENT_SHA256: measured.sha256,
        sc.CONTENT_FORMAT: measured.format,
    }
    optional: dict[str, AttributeValue | None] = {
        sc.SIZE_TOKENS: measured.tokens,
        sc.TOKENIZER: measured.tokenizer,
        sc.SIZE_ITEMS: measured.items,
        sc.ITEMS_PRIORITY: measured.priority_items,
        sc.CONTENT_CANONICAL_SHA256: measured.canonical_sha256,
        sc.SIZE_CANONICAL_CHARS: measured.canonical_chars,
        sc.JSON_VALID: measured.json_valid_attribute,
    }
    attrs.update({k: v for k, v in optional.items() if v is not None})
    if measured.tokens_estimated:
        attrs[sc.SIZE_TOKENS_ESTIMATED] = True
    # Tuples as they are: immutable, so the stages that share them cannot change them.
    if measured.item_ids is not None:
        attrs[sc.ITEMS_IDS] = measured.item_ids
        attrs[sc.ITEMS_IDS_COMPLETE] = measured.ids_complete
    if measured.fields is not None:
        attrs[sc.ITEMS_FIELDS] = measured.fields
        attrs[sc.ITEMS_FIELDS_COMPLETE] = measured.fields_complete
    if measured.markers_found:
        attrs[sc.TRUNCATION_MARKERS_FOUND] = measured.markers_found
    return attrs


def stage_attributes(
    job: StageJob,
    measured: TextMeasurement,
    capture_content: bool,
    measured_attributes: dict[str, AttributeValue] | None = None,
) -> dict[str, AttributeValue]:
    """The contract's attributes for one measurement (no content unless opted in).
    ``measured_attributes`` are :func:`measurement_attributes` of ``measured``, when the
    caller has them already."""
    attrs: dict[str, AttributeValue] = {
        sc.STAGE: job.stage,
        sc.STAGE_ORDER: job.order,
        sc.TOOL_CALL_ID: job.tool_call_id,
    }
    # Plain ifs: this runs for every stage on the worker.
    if job.tool_name is not None:
        attrs[sc.TOOL_NAME] = job.tool_name
    if job.request_id is not None:
        attrs[sc.REQUEST_ID] = job.request_id
    if job.step is not None:
        attrs[sc.STEP] = job.step
    if job.agent_name is not None:
        attrs[sc.AGENT_NAME] = job.agent_name
    if job.strategy is not None:
        attrs[sc.TRUNCATION_STRATEGY] = job.strategy
    if job.ref is not None:
        attrs[sc.TRUNCATION_REF] = job.ref
    attrs.update(measured_attributes or measurement_attributes(measured))
    if job.declared:
        attrs[sc.TRUNCATION_DECLARED] = True
    marker = job.marker if job.marker is not None else bool(measured.markers_found)
    attrs[sc.TRUNCATION_MARKER] = marker
    if capture_content:
        # Redacted before it leaves the process; on a redaction error no content at all.
        content = redact_or_none(job.text, _CONTENT_LIMIT)
        if content is not None:
            attrs[sc.CONTENT_TEXT] = content
    attrs.update(job.extra)
    return attrs
