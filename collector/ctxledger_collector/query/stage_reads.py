"""The stages of many journeys as the query API shows them, read straight from the
measurement rows by the key's (run, call) prefix: only the columns a stage summary
shows (no item ids or field names, which can be long), no rule records built."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, case, select

from ctxledger import semconv as sc
from ctxledger.wire_received import outcome_fields
from ctxledger_collector.storage.stored_records import loads
from ctxledger_collector.storage.tables import MEASUREMENTS

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
    "canonical_chars",
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
        "canonical_chars": row.canonical_chars,
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
        "received": received_summary(loads(row.received_extra)) if row.received_extra else None,
    }


def received_summary(extra: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What a ``received`` stage's stored attributes say the server did with the result
    (contract section 7): the outcome, the server's and our token counts, the loss."""
    outcome = outcome_fields(extra)
    if not outcome or extra is None:
        return None
    return {
        "outcome": outcome["received"],
        "input_tokens": extra.get(sc.RECEIVED_INPUT_TOKENS),
        "counted_tokens": extra.get(sc.RECEIVED_COUNTED_TOKENS),
        "exact": extra.get(sc.TOKENIZER_EXACT),
        "policy": extra.get(sc.RECEIVED_POLICY),
        "unreported": extra.get(sc.RECEIVED_UNREPORTED),
        "lost_tokens": outcome["lost_tokens"],
        "lost_chars": outcome["lost_chars"],
        "note": outcome["note"],
    }


def _rows(connection: Connection, run_id: int, calls: list[str]) -> list[Any]:
    m = MEASUREMENTS.c
    # Only a received stage's extra attributes are read: they hold its outcome.
    received_extra = case((m.stage == sc.STAGE_RECEIVED, m.extra), else_=None)
    columns = [*(m[name] for name in _COLUMNS), received_extra.label("received_extra")]
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
