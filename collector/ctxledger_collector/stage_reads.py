"""The stages of many journeys as the query API shows them, read straight from the
measurement rows by the key's (run, call) prefix: only the columns a stage summary
shows (no item ids or field names, which can be long), no rule records built."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, select

from ctxledger_collector.stored_records import loads
from ctxledger_collector.tables import MEASUREMENTS

StageKey = tuple[int, str, str]
StageIndex = Mapping[StageKey, Sequence[dict[str, Any]]]

_COLUMNS = (
    "run_id",
    "tool_call_id",
    "request_key",
    "stage",
    "stage_order",
    "step",
    "chars",
    "bytes",
    "tokens",
    "tokenizer",
    "tokens_estimated",
    "items",
    "priority_items",
    "json_valid",
    "declared",
    "strategy",
    "marker",
    "markers_found",
    "ref",
    "observed_us",
    "dropped_attributes",
    "source",
    "telemetry_cut",
    "inferred",
)
#: A run with more calls to read than this is read whole (one range of the key).
_WHOLE_RUN = 200
_CHUNK = 500


def stage_summary(row: Any) -> dict[str, Any]:
    """One measurement row (``_COLUMNS``) as the query API shows its stage."""
    markers = loads(row.markers_found) or []
    return {
        "stage": row.stage,
        "order": row.stage_order,
        "request_id": row.request_key or None,
        "step": row.step,
        "chars": row.chars,
        "bytes": row.bytes,
        "tokens": row.tokens,
        "tokenizer": row.tokenizer if row.tokens is not None else None,
        "tokens_estimated": bool(row.tokens_estimated),
        "items": row.items,
        "priority_items": row.priority_items,
        "json_valid": None if row.json_valid is None else bool(row.json_valid),
        "declared": bool(row.declared),
        "strategy": row.strategy,
        "marker": bool(row.marker) or bool(markers),
        "markers_found": markers,
        "ref": row.ref,
        "observed_at": row.observed_us / 1_000_000,
        "trusted": row.dropped_attributes == 0,
        "source": row.source,
        "telemetry_cut": row.telemetry_cut,
        "inferred": bool(row.inferred),
    }


def _rows(connection: Connection, run_id: int, calls: list[str]) -> list[Any]:
    m = MEASUREMENTS.c
    columns = [m[name] for name in _COLUMNS]
    if len(calls) > _WHOLE_RUN:
        return list(connection.execute(select(*columns).where(m.run_id == run_id)))
    rows: list[Any] = []
    for start in range(0, len(calls), _CHUNK):
        chunk = calls[start : start + _CHUNK]
        query = select(*columns).where(m.run_id == run_id, m.tool_call_id.in_(chunk))
        rows.extend(connection.execute(query))
    return rows


def read_stages(connection: Connection, keys: set[StageKey]) -> StageIndex:
    """The stage summaries of many (run, call, request key) groups."""
    found: dict[StageKey, list[dict[str, Any]]] = defaultdict(list)
    calls: dict[int, set[str]] = defaultdict(set)
    for run_id, call_id, _ in keys:
        calls[run_id].add(call_id)
    for run_id, wanted in sorted(calls.items()):
        for row in _rows(connection, run_id, sorted(wanted)):
            key = (row.run_id, row.tool_call_id, row.request_key)
            if key in keys:
                found[key].append(stage_summary(row))
    return found
