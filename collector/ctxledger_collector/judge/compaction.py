"""Keep the ``compacted`` stages (:mod:`ctxledger.verdicts.compaction`) a trace's stored
requests call for, as a batch changes them.

The stages of a request that declares a compaction are a function of it and of the seen
request just below it. A batch can change that pair for: its own requests; the compacted
requests just above any of its requests (new or replaced copies: a request that arrives
late, or moves, becomes another's previous one). Each such request's stages are worked
out again from the stored copies and written over the old ones; the old ones it no
longer calls for are deleted, and their journeys re-judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.compaction import removal_stage, removed_by
from ctxledger.verdicts.evidence_gaps import unseen
from ctxledger.verdicts.incremental import JourneyKey, PositionKey, RequestKey
from ctxledger_collector.decoded.batch import DecodedMeasurement
from ctxledger_collector.judge.trace_state import SqlTraceState
from ctxledger_collector.storage.rows import (
    MEASUREMENT_COLUMNS,
    MEASUREMENT_COPY_KEY,
    MEASUREMENT_KEY,
    measurement_row,
    preferred_copies,
)
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.string_lists import ListWriter
from ctxledger_collector.storage.tables import MEASUREMENTS


@dataclass
class CompactionStages:
    """The stages to write over the stored ones, and the journeys whose stage goes."""

    written: list[Measurement] = field(default_factory=list)
    deleted: set[JourneyKey] = field(default_factory=set)


def _position(m: Manifest) -> PositionKey | None:
    return None if m.position is None else (m.trace_id, m.conversation_key, m.position)


def compaction_stages(
    state: SqlTraceState, manifests: Iterable[Manifest], replaced: Mapping[RequestKey, Manifest]
) -> CompactionStages:
    """What the batch's manifests (stored, with ``replaced`` the copies they replaced)
    change of the trace's ``compacted`` stages."""
    batch = [*manifests, *replaced.values()]
    positions = {p for m in batch if (p := _position(m)) is not None}
    above = state.compacted_after(positions) if positions else {}
    if not any(m.compaction for m in batch) and not any(above.values()):
        return CompactionStages()  # no compaction near: nothing to read (the usual case)
    requests = {(m.trace_id, m.request_id) for m in batch}
    requests |= {(p[0], r) for p, found in above.items() for r in found}
    stored = state.manifests(requests)
    was_compacted = {key for key, m in replaced.items() if m.compaction is not None}
    involved = [m for key, m in stored.items() if m.compaction or key in was_compacted]
    if not involved:
        return CompactionStages()
    after = {
        (m.trace_id, m.request_id): position
        for m in involved
        if m.compaction and not unseen(m) and (position := _position(m)) is not None
    }
    below = state.seen_requests_before(set(after.values()))
    previous = {key: {(p[0], r) for r in below.get(p, ())} for key, p in after.items()}
    neighbours = state.manifests({key for keys in previous.values() for key in keys})
    changes = CompactionStages()
    judged = state.judged_calls({(m.trace_id, m.request_id) for m in involved})
    for m in involved:
        key = (m.trace_id, m.request_id)
        calls = {
            call_id
            for before in previous.get(key, ())
            if before in neighbours
            for call_id in removed_by(neighbours[before], m)
        }
        changes.written += [removal_stage(m, call_id) for call_id in sorted(calls)]
        changes.deleted |= {(m.trace_id, c, m.request_id) for c in judged.get(key, set()) - calls}
    return changes


def write_compaction_stages(
    connection: Connection,
    sql: Statements,
    run_ids: Mapping[str, int],
    changes: CompactionStages,
) -> dict[tuple[Any, ...], tuple[tuple[Any, ...], Measurement]]:
    """Write the stages over the stored ones (a compacted stage follows its request's
    stored copy, never kept by the duplicate rule) and delete the ones gone; the rows
    written, by key, as the store keeps what it just wrote."""
    lists = ListWriter()  # a compacted stage refers to no list
    written = preferred_copies(
        (
            (measurement_row(DecodedMeasurement(m, {}, None), run_ids[m.trace_id], lists), m)
            for m in changes.written
        ),
        len(MEASUREMENT_KEY),
        MEASUREMENT_COPY_KEY,
    )
    assert not lists.texts, "a compacted stage's row refers to a list"
    rows = [row for row, _ in written.values()]
    sql.upsert(connection, MEASUREMENTS, MEASUREMENT_COLUMNS, MEASUREMENT_KEY, rows)
    gone = [(run_ids[t], c, r, sc.STAGE_COMPACTED) for t, c, r in changes.deleted]
    sql.delete_keys(connection, MEASUREMENTS, MEASUREMENT_KEY, gone)
    return written
