"""Rule records <-> JSON documents, for the ``record`` and ``detail`` columns."""

from __future__ import annotations

import dataclasses
from typing import Any

from ctxledger.verdicts import Manifest, Measurement, Report

_MEASUREMENT_TUPLES = ("item_ids", "fields", "markers_found")
_MANIFEST_TUPLES = ("tool_call_ids", "tool_calls")


def _tuples(document: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {
        key: tuple(value) if key in names and isinstance(value, list) else value
        for key, value in document.items()
    }


_MEASUREMENT_FIELDS = tuple(f.name for f in dataclasses.fields(Measurement))
_MANIFEST_FIELDS = tuple(f.name for f in dataclasses.fields(Manifest))


def measurement_to_record(measurement: Measurement) -> dict[str, Any]:
    # Shallow on purpose: dataclasses.asdict deep-copies every id tuple (slow on ingest).
    return {name: getattr(measurement, name) for name in _MEASUREMENT_FIELDS}


def record_to_measurement(record: dict[str, Any]) -> Measurement:
    known = set(_MEASUREMENT_FIELDS)
    return Measurement(
        **_tuples({k: v for k, v in record.items() if k in known}, _MEASUREMENT_TUPLES)
    )


def manifest_to_record(manifest: Manifest) -> dict[str, Any]:
    return {name: getattr(manifest, name) for name in _MANIFEST_FIELDS}


def record_to_manifest(record: dict[str, Any]) -> Manifest:
    known = set(_MANIFEST_FIELDS)
    return Manifest(**_tuples({k: v for k, v in record.items() if k in known}, _MANIFEST_TUPLES))


def stage_summary(m: Measurement) -> dict[str, Any]:
    """One stage as the query API shows it (item ids left out: they can be long)."""
    return {
        "stage": m.stage,
        "order": m.order,
        "request_id": m.request_id,
        "step": m.step,
        "chars": m.chars,
        "bytes": m.bytes,
        "tokens": m.tokens,
        "tokenizer": m.tokenizer,
        "tokens_estimated": m.tokens_estimated,
        "items": m.items,
        "priority_items": m.priority_items,
        "json_valid": m.json_valid,
        "declared": m.declared,
        "strategy": m.strategy,
        "marker": m.sees_marker,
        "markers_found": list(m.markers_found),
        "ref": m.ref,
        "observed_at": m.observed_at,
        "trusted": m.trusted,
    }


def report_detail(report: Report) -> dict[str, Any]:
    """Everything about a report that is not a column of its own."""
    return {
        "request_id": report.request_id,
        "lost_item_ids": list(report.lost_item_ids),
        "lost_fields": list(report.lost_fields),
        "lost_priority_items": report.lost_priority_items,
        "notes": list(report.notes),
        "stages": [stage_summary(m) for m in report.stages],
        "transitions": [
            {
                "from_stage": t.from_stage,
                "to_stage": t.to_stage,
                "verdict": t.verdict,
                "lost_items": t.lost_items,
                "lost_item_ids": list(t.lost_item_ids),
                "lost_fields": list(t.lost_fields),
                "lost_chars": t.lost_chars,
                "lost_tokens": t.lost_tokens,
                "lost_priority_items": t.lost_priority_items,
                "reasons": list(t.reasons),
            }
            for t in report.transitions
        ],
    }
