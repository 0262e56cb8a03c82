"""The stored traces as the incremental judge asks about them (a
:class:`ctxledger.verdicts.incremental.TraceState` over the database).

Every question is answered for many keys at once, by primary keys and the indexes made
for them (``ix_manifests_step``, ``ix_calls_step``, ``ix_reports_request``), so what a
batch reads follows the batch, not the length of the run. All keys belong to the traces
of the batch being stored, whose run ids the store resolved first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.incremental import CallKey, JourneyKey, RequestKey, StepKey
from ctxledger_collector.rows import MANIFEST_COLUMNS, MEASUREMENT_COLUMNS
from ctxledger_collector.statements import Statements, chunks
from ctxledger_collector.stored_records import manifest_of, measurement_of

_RUN = MEASUREMENT_COLUMNS.index("run_id")


class SqlTraceState:
    """Answers from the database, inside the store's transaction."""

    def __init__(self, connection: Connection, run_ids: Mapping[str, int]) -> None:
        self.connection = connection
        self.sql = Statements(connection.dialect.name)
        self.run_ids = dict(run_ids)
        self.trace_ids = {run_id: trace_id for trace_id, run_id in run_ids.items()}
        #: Every manifest read so far (the store dates reports by them).
        self.manifests_read: dict[RequestKey, Manifest] = {}

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        return list(self.connection.exec_driver_sql(sql, tuple(params)).fetchall())

    def rows_by_keys(
        self, table: str, columns: Sequence[str], key: Sequence[str], keys: Collection[Any]
    ) -> list[Sequence[Any]]:
        found: list[Sequence[Any]] = []
        for chunk in chunks(sorted(keys)):
            sql = self.sql.select_by_keys(table, columns, key, len(chunk))
            found.extend(self._rows(sql, [value for k in chunk for value in k]))
        return found

    def _measurements(self, keys: Collection[tuple[int, str, str]]) -> list[Measurement]:
        rows = self.rows_by_keys(
            "measurements", MEASUREMENT_COLUMNS, ("run_id", "tool_call_id", "request_key"), keys
        )
        return [measurement_of(row, self.trace_ids[row[_RUN]]) for row in rows]

    # --- TraceState ----------------------------------------------------------------------

    def before_stages(self, calls: Collection[CallKey]) -> Mapping[CallKey, Sequence[Measurement]]:
        found: dict[CallKey, list[Measurement]] = defaultdict(list)
        for m in self._measurements({(self.run_ids[t], c, "") for t, c in calls}):
            found[(m.trace_id, m.tool_call_id)].append(m)
        return found

    def request_stages(
        self, journeys: Collection[JourneyKey]
    ) -> Mapping[JourneyKey, Sequence[Measurement]]:
        found: dict[JourneyKey, list[Measurement]] = defaultdict(list)
        for m in self._measurements({(self.run_ids[t], c, r) for t, c, r in journeys}):
            found[(m.trace_id, m.tool_call_id, m.request_id or "")].append(m)
        return found

    def manifests(self, requests: Collection[RequestKey]) -> Mapping[RequestKey, Manifest]:
        keys = {(self.run_ids[t], r) for t, r in requests}
        rows = self.rows_by_keys("manifests", MANIFEST_COLUMNS, ("run_id", "request_id"), keys)
        run = MANIFEST_COLUMNS.index("run_id")
        found = (manifest_of(row, self.trace_ids[row[run]]) for row in rows)
        manifests = {(m.trace_id, m.request_id): m for m in found}
        self.manifests_read.update(manifests)
        return manifests

    def requests_after(self, steps: Collection[StepKey]) -> Mapping[StepKey, frozenset[str]]:
        mark = self.sql.mark
        sql = (
            f"SELECT request_id FROM manifests WHERE run_id = {mark} AND step = "
            f"(SELECT min(step) FROM manifests WHERE run_id = {mark} AND step > {mark})"
        )
        found: dict[StepKey, frozenset[str]] = {}
        for trace_id, step in steps:
            run_id = self.run_ids[trace_id]
            rows = self._rows(sql, (run_id, run_id, step))
            found[(trace_id, step)] = frozenset(row[0] for row in rows)
        return found

    def step_below(self, steps: Collection[StepKey]) -> Mapping[StepKey, int | None]:
        mark = self.sql.mark
        sql = f"SELECT max(step) FROM manifests WHERE run_id = {mark} AND step < {mark}"
        return {
            (trace_id, step): self._rows(sql, (self.run_ids[trace_id], step))[0][0]
            for trace_id, step in steps
        }

    def calls_issued(self, ranges: Collection[tuple[str, int | None, int]]) -> set[CallKey]:
        mark = self.sql.mark
        bounded = (
            f"SELECT tool_call_id FROM calls WHERE run_id = {mark} "
            f"AND call_step >= {mark} AND call_step < {mark}"
        )
        open_below = f"SELECT tool_call_id FROM calls WHERE run_id = {mark} AND call_step < {mark}"
        issued: set[CallKey] = set()
        for trace_id, low, high in ranges:
            run_id = self.run_ids[trace_id]
            rows = (
                self._rows(open_below, (run_id, high))
                if low is None
                else self._rows(bounded, (run_id, low, high))
            )
            issued.update((trace_id, row[0]) for row in rows)
        return issued

    def judged_requests(self, calls: Collection[CallKey]) -> Mapping[CallKey, set[str | None]]:
        keys = {(self.run_ids[t], c) for t, c in calls}
        rows = self.rows_by_keys(
            "reports", ("run_id", "tool_call_id", "request_key"), ("run_id", "tool_call_id"), keys
        )
        found: dict[CallKey, set[str | None]] = defaultdict(set)
        for run_id, call_id, request_key in rows:
            found[(self.trace_ids[run_id], call_id)].add(request_key or None)
        return found

    def judged_calls(self, requests: Collection[RequestKey]) -> Mapping[RequestKey, set[str]]:
        keys = {(self.run_ids[t], r) for t, r in requests}
        rows = self.rows_by_keys(
            "reports", ("run_id", "request_key", "tool_call_id"), ("run_id", "request_key"), keys
        )
        found: dict[RequestKey, set[str]] = defaultdict(set)
        for run_id, request_key, call_id in rows:
            found[(self.trace_ids[run_id], request_key)].add(call_id)
        return found
