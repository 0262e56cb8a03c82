"""The contract's span attributes for one stage measurement: sizes, counts, digests and
ids, never the text itself unless content capture is opted in."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from ctxledger import semconv as sc
from ctxledger._analysis import TextMeasurement
from ctxledger._jobs import StageJob

#: Captured content (opt-in) is cut here, so one huge result cannot fill a span.
_CONTENT_LIMIT = 65_536


def stage_attributes(
    job: StageJob, measured: TextMeasurement, capture_content: bool
) -> dict[str, AttributeValue]:
    """The contract's attributes for one measurement (no content unless opted in)."""
    attrs: dict[str, AttributeValue] = {
        sc.STAGE: job.stage,
        sc.STAGE_ORDER: job.order,
        sc.TOOL_CALL_ID: job.tool_call_id,
        sc.SIZE_CHARS: measured.chars,
        sc.SIZE_BYTES: measured.bytes,
        sc.CONTENT_SHA256: measured.sha256,
        sc.JSON_VALID: measured.json_valid,
    }
    optional: dict[str, AttributeValue | None] = {
        sc.TOOL_NAME: job.tool_name,
        sc.REQUEST_ID: job.request_id,
        sc.STEP: job.step,
        sc.AGENT_NAME: job.agent_name,
        sc.SIZE_TOKENS: measured.tokens,
        sc.TOKENIZER: measured.tokenizer,
        sc.SIZE_ITEMS: measured.items,
        sc.ITEMS_PRIORITY: measured.priority_items,
        sc.CONTENT_CANONICAL_SHA256: measured.canonical_sha256,
        sc.SIZE_CANONICAL_CHARS: measured.canonical_chars,
        sc.TRUNCATION_STRATEGY: job.strategy,
        sc.TRUNCATION_REF: job.ref,
    }
    attrs.update({k: v for k, v in optional.items() if v is not None})
    if measured.tokens_estimated:
        attrs[sc.SIZE_TOKENS_ESTIMATED] = True
    if measured.item_ids is not None:
        attrs[sc.ITEMS_IDS] = list(measured.item_ids)
        attrs[sc.ITEMS_IDS_COMPLETE] = measured.ids_complete
    if measured.fields is not None:
        attrs[sc.ITEMS_FIELDS] = list(measured.fields)
        attrs[sc.ITEMS_FIELDS_COMPLETE] = measured.fields_complete
    if measured.markers_found:
        attrs[sc.TRUNCATION_MARKERS_FOUND] = list(measured.markers_found)
    if job.declared:
        attrs[sc.TRUNCATION_DECLARED] = True
    marker = job.marker if job.marker is not None else bool(measured.markers_found)
    attrs[sc.TRUNCATION_MARKER] = marker
    if capture_content:
        attrs[sc.CONTENT_TEXT] = job.text[:_CONTENT_LIMIT]
    attrs.update(job.extra)
    return attrs
