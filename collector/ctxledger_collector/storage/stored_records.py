"""Table rows -> domain records: what the judge and the query API read back.

The reverse of :mod:`ctxledger_collector.storage.rows`. Rows arrive as tuples in the tables'
column order (the queries select ``*_COLUMNS`` explicitly); digests come back as the
16 hex digits of the prefix the database keeps, which is all the rules compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.duplicates import span_id_of
from ctxledger.wire_received import outcome_fields
from ctxledger_collector.storage.column_values import digest_number
from ctxledger_collector.storage.rows import MANIFEST_COLUMNS, MEASUREMENT_COLUMNS
from ctxledger_collector.storage.string_lists import StoredLists

_M = {name: index for index, name in enumerate(MEASUREMENT_COLUMNS)}
_F = {name: index for index, name in enumerate(MANIFEST_COLUMNS)}


def loads(text: str | None) -> Any:
    """A JSON text column's value (None for NULL)."""
    return None if text is None else orjson.loads(text)


def strings(text: str | None) -> tuple[str, ...] | None:
    value = loads(text)
    return None if value is None else tuple(value)


def listed(ref: bytes | memoryview | None, lists: StoredLists) -> tuple[str, ...] | None:
    """The list a row refers to (None for NULL)."""
    return None if ref is None else lists[bytes(ref)]


#: Where the list references of each table's rows are (see ``string_lists``).
MEASUREMENT_LISTS = (
    MEASUREMENT_COLUMNS.index("item_ids_ref"),
    MEASUREMENT_COLUMNS.index("fields_ref"),
)
MANIFEST_LISTS = (
    MANIFEST_COLUMNS.index("tool_call_ids_ref"),
    MANIFEST_COLUMNS.index("tool_calls_ref"),
    MANIFEST_COLUMNS.index("issued_calls_ref"),
)


def _digest(number: int | None) -> str | None:
    return None if number is None else span_id_of(number)


def stored_form(m: Measurement) -> Measurement:
    """A decoded measurement as reading its stored row gives it back (digests kept as
    their 64-bit prefixes): what the judge may use instead of reading the row again."""
    # A copy of the fields, two of them changed: ``dataclasses.replace`` would run the
    # 30-field ``__init__`` again, a tenth of a batch's judging time.
    stored = object.__new__(Measurement)
    stored.__dict__.update(m.__dict__)
    stored.__dict__["sha256"] = _digest(digest_number(m.sha256))
    stored.__dict__["canonical_sha256"] = _digest(digest_number(m.canonical_sha256))
    return stored


def _outcome_or_note(stage: str, extra_text: str | None) -> dict[str, Any]:
    """A received measurement's outcome, or a derived stage's note: the fields its extra
    attributes give back."""
    if extra_text is None:
        return {}
    extra = loads(extra_text)
    if stage == sc.STAGE_RECEIVED:
        return outcome_fields(extra)
    note = extra.get(sc.STAGE_NOTE) if isinstance(extra, dict) else None
    return {"note": note} if isinstance(note, str) else {}


def measurement_of(row: Sequence[Any], trace_id: str, lists: StoredLists) -> Measurement:
    """A measurement row (all of ``MEASUREMENT_COLUMNS``) as the rules' record."""
    request_key = row[_M["request_key"]]
    tokens = row[_M["tokens"]]
    stage = row[_M["stage"]]
    # A received measurement states its outcome; it is kept among the extra attributes.
    received = _outcome_or_note(stage, row[_M["extra"]])
    return Measurement(
        trace_id=trace_id,
        tool_call_id=row[_M["tool_call_id"]],
        stage=stage,
        order=row[_M["stage_order"]],
        chars=row[_M["chars"]],
        request_id=request_key or None,
        tool_name=row[_M["tool_name"]],
        agent_name=row[_M["agent_name"]],
        step=row[_M["step"]],
        bytes=row[_M["bytes"]],
        tokens=tokens,
        tokenizer=row[_M["tokenizer"]] if tokens is not None else None,
        tokens_estimated=bool(row[_M["tokens_estimated"]]),
        canonical_chars=row[_M["canonical_chars"]],
        items=row[_M["items"]],
        item_ids=listed(row[_M["item_ids_ref"]], lists),
        ids_complete=bool(row[_M["ids_complete"]]),
        fields=listed(row[_M["fields_ref"]], lists),
        fields_complete=bool(row[_M["fields_complete"]]),
        priority_items=row[_M["priority_items"]],
        sha256=_digest(row[_M["sha256"]]),
        canonical_sha256=_digest(row[_M["canonical_sha256"]]),
        json_valid=None if row[_M["json_valid"]] is None else bool(row[_M["json_valid"]]),
        declared=bool(row[_M["declared"]]),
        strategy=row[_M["strategy"]],
        marker=bool(row[_M["marker"]]),
        markers_found=strings(row[_M["markers_found"]]) or (),
        ref=row[_M["ref"]],
        dropped_attributes=row[_M["dropped_attributes"]],
        observed_at=row[_M["observed_us"]] / 1_000_000,
        span_id=span_id_of(row[_M["span_number"]]),
        source=row[_M["source"]],
        telemetry_cut=row[_M["telemetry_cut"]],
        inferred=bool(row[_M["inferred"]]),
        **received,
    )


def manifest_of(row: Sequence[Any], trace_id: str, lists: StoredLists) -> Manifest:
    """A manifest row (all of ``MANIFEST_COLUMNS``) as the rules' record."""
    return Manifest(
        trace_id=trace_id,
        request_id=row[_F["request_id"]],
        step=row[_F["step"]],
        tool_call_ids=listed(row[_F["tool_call_ids_ref"]], lists) or (),
        tool_calls=listed(row[_F["tool_calls_ref"]], lists),
        tokens=row[_F["tokens"]],
        tokenizer=row[_F["tokenizer"]],
        context_window=row[_F["context_window"]],
        model=row[_F["model"]],
        agent_name=row[_F["agent_name"]],
        sdk_dropped_spans=row[_F["sdk_dropped_spans"]],
        observed_at=row[_F["observed_us"]] / 1_000_000,
        span_id=span_id_of(row[_F["span_number"]]),
        source=row[_F["source"]],
        conversation=row[_F["conversation"]] or None,
        sequence=row[_F["sequence"]],
        issued_calls=listed(row[_F["issued_calls_ref"]], lists),
        telemetry_cut=row[_F["telemetry_cut"]],
        compaction=row[_F["compaction"]],
    )
