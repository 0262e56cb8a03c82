"""Domain records -> table rows.

The one module that maps a decoded span or a report to the row it is stored as (the
records' lengths were fitted to the columns before, by :mod:`.column_limits`); values
that go into JSON text columns are made JSON-safe by :mod:`.column_values`. Rows are
tuples in the tables' column order (``*_COLUMNS``), ready for ``executemany``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, TypeVar

from ctxledger.verdicts import Report
from ctxledger.verdicts.duplicates import (
    content_digest,
    observed_microseconds,
    span_number,
)
from ctxledger.wire import MANIFEST_ATTRIBUTES, MEASUREMENT_ATTRIBUTES
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedManifest, DecodedMeasurement
from ctxledger_collector.storage.column_values import digest_number, extra_text, json_text
from ctxledger_collector.storage.string_lists import ListWriter
from ctxledger_collector.storage.tables import (
    CALLS,
    COPY_KEY,
    MANIFESTS,
    MEASUREMENTS,
    REPORTS,
)


def _columns(table: Any) -> tuple[str, ...]:
    """The columns a row writes: all but a rowid the database numbers itself."""
    return tuple(c.name for c in table.columns if c.name != "id")


RUN_COLUMNS = ("trace_id", "service_name", "agent_name", "first_seen", "last_seen")
MEASUREMENT_COLUMNS = _columns(MEASUREMENTS)
MANIFEST_COLUMNS = _columns(MANIFESTS)
CALL_COLUMNS = _columns(CALLS)
REPORT_COLUMNS = _columns(REPORTS)
#: Natural keys: what each upsert resolves its conflicts on.
MEASUREMENT_KEY = ("run_id", "tool_call_id", "request_key", "stage")
MANIFEST_KEY = ("run_id", "request_id")
CALL_KEY = ("run_id", "tool_call_id")
REPORT_KEY = ("run_id", "tool_call_id", "request_key")


def measurement_row(item: DecodedMeasurement, run_id: int, lists: ListWriter) -> tuple[Any, ...]:
    m = item.measurement
    extra = extra_text(item.attributes, MEASUREMENT_ATTRIBUTES)
    return (
        run_id,
        m.tool_call_id,
        m.request_id or "",
        m.stage,
        m.order,
        m.tool_name,
        m.agent_name,
        m.step,
        span_number(m.span_id),
        observed_microseconds(m.observed_at),
        content_digest(m, extra),
        m.dropped_attributes,
        m.chars,
        m.bytes,
        m.tokens,
        m.tokenizer,
        m.tokens_estimated,
        m.canonical_chars,
        m.items,
        lists.ref(m.item_ids),
        m.ids_complete,
        lists.ref(m.fields),
        m.fields_complete,
        m.priority_items,
        digest_number(m.sha256),
        digest_number(m.canonical_sha256),
        m.json_valid,
        m.declared,
        m.strategy,
        m.marker,
        json_text(m.markers_found) if m.markers_found else None,
        m.ref,
        extra,
        m.source,
        m.telemetry_cut,
        m.inferred,
    )


def manifest_row(item: DecodedManifest, run_id: int, lists: ListWriter) -> tuple[Any, ...]:
    man = item.manifest
    extra = extra_text(item.attributes, MANIFEST_ATTRIBUTES)
    return (
        run_id,
        man.request_id,
        man.step,
        man.model,
        man.agent_name,
        man.tokens,
        man.tokenizer,
        man.context_window,
        man.sdk_dropped_spans,
        lists.ref(man.tool_call_ids),
        lists.ref(man.tool_calls),
        span_number(man.span_id),
        observed_microseconds(man.observed_at),
        content_digest(man, extra),
        extra,
        man.source,
        man.conversation_key,
        man.sequence,
        man.position,
        lists.ref(man.issued_calls),
        man.telemetry_cut,
        man.compaction,
    )


def _copy_key_of(columns: tuple[str, ...]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    return itemgetter(*(columns.index(name) for name in COPY_KEY))


MEASUREMENT_COPY_KEY = _copy_key_of(MEASUREMENT_COLUMNS)
MANIFEST_COPY_KEY = _copy_key_of(MANIFEST_COLUMNS)


def preferred_rows(
    rows: Iterable[tuple[Any, ...]],
    key_width: int,
    copy_key: Callable[[tuple[Any, ...]], tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    """One row per key (its first ``key_width`` values): the copy the duplicate rule
    prefers, as the upsert keeps it against stored rows."""
    kept: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in rows:
        held = kept.setdefault(row[:key_width], row)
        if row is not held and copy_key(row) > copy_key(held):
            kept[row[:key_width]] = row
    return list(kept.values())


Record = TypeVar("Record")


def preferred_copies(
    pairs: Iterable[tuple[tuple[Any, ...], Record]],
    key_width: int,
    copy_key: Callable[[tuple[Any, ...]], tuple[Any, ...]],
) -> dict[tuple[Any, ...], tuple[tuple[Any, ...], Record]]:
    """Per key (a row's first ``key_width`` values), the preferred copy's row and record."""
    kept: dict[tuple[Any, ...], tuple[tuple[Any, ...], Record]] = {}
    for row, record in pairs:
        key = row[:key_width]
        held = kept.get(key)
        if held is None or copy_key(row) > copy_key(held[0]):
            kept[key] = (row, record)
    return kept


@dataclass
class RunSighting:
    """One trace as a batch saw it: when first and last, and who ran it."""

    trace_id: str
    service_name: str | None
    agent_name: str | None
    first_seen: float
    last_seen: float

    def values(self) -> tuple[Any, ...]:
        return (self.trace_id, self.service_name, self.agent_name, self.first_seen, self.last_seen)


def run_sightings(batch: DecodedBatch) -> dict[str, RunSighting]:
    """Per trace of the batch: when it was seen first and last, and who ran it."""
    runs: dict[str, RunSighting] = {}
    seen = [(i.measurement, i.service_name) for i in batch.measurements] + [
        (i.manifest, i.service_name) for i in batch.manifests
    ]
    seen += [(u.stage.measurement, None) for u in batch.unmatched]
    for record, service in seen:
        at = record.observed_at
        run = runs.get(record.trace_id)
        if run is None:
            runs[record.trace_id] = RunSighting(record.trace_id, service, record.agent_name, at, at)
            continue
        run.first_seen = min(run.first_seen, at)
        run.last_seen = max(run.last_seen, at)
        run.service_name = run.service_name or service
        run.agent_name = run.agent_name or record.agent_name
    return runs


def _lossy_transitions(report: Report) -> list[dict[str, Any]] | None:
    lossy = [
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
        if t.lost or t.reasons
    ]
    return lossy or None


def report_row(
    report: Report, run_id: int, manifest_time: float | None, now: float
) -> tuple[Any, ...]:
    """A judged journey; ``manifest_time`` is when its request's manifest arrived."""
    observed = [m.observed_at for m in report.stages]
    if manifest_time is not None:
        observed.append(manifest_time)
    return (
        run_id,
        report.tool_call_id,
        report.request_id or "",
        report.verdict,
        report.tool_name,
        report.agent_name,
        report.step,
        report.settled,
        report.lost_items,
        report.lost_chars,
        report.lost_tokens,
        report.lost_priority_items,
        max(observed, default=now),
        now,
        json_text(report.lost_item_ids) if report.lost_item_ids else None,
        json_text(report.lost_fields) if report.lost_fields else None,
        json_text(report.notes) if report.notes else None,
        json_text(_lossy_transitions(report)),
        report.source,
        report.layer,
        False,  # first_lost: set by the store, which sees the call's other journeys
        report.lost_tokens_unknown,
    )
