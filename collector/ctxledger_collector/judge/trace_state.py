"""The stored traces as the incremental judge asks about them (a
:class:`ctxledger.verdicts.incremental.TraceState` over the database).

Every question is answered for many keys at once, by primary keys and the indexes made
for them (``ix_manifests_step``, ``ix_calls_step``, ``ix_reports_request``, the keys of
``call_issuers``), so what a
batch reads follows the batch, not the length of the run. All keys belong to the traces
of the batch being stored, whose run ids the store resolved first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Table

from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.call_origins import Origin
from ctxledger.verdicts.incremental import (
    CallKey,
    JourneyKey,
    PositionKey,
    PositionRange,
    RequestKey,
)
from ctxledger_collector.judge.stored_stages import STORED_STAGES, StoredStages
from ctxledger_collector.storage.rows import (
    MANIFEST_COLUMNS,
    MEASUREMENT_COLUMNS,
    MEASUREMENT_COPY_KEY,
    MEASUREMENT_KEY,
)
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.stored_records import (
    MANIFEST_LISTS,
    MEASUREMENT_LISTS,
    manifest_of,
    measurement_of,
)
from ctxledger_collector.storage.string_lists import list_refs, read_lists
from ctxledger_collector.storage.tables import COPY_KEY, MANIFESTS, MEASUREMENTS, REPORTS

_RUN = MEASUREMENT_COLUMNS.index("run_id")


class SqlTraceState:
    """Answers from the database, inside the store's transaction."""

    def __init__(
        self,
        connection: Connection,
        run_ids: Mapping[str, int],
        fresh: Mapping[tuple[Any, ...], tuple[tuple[Any, ...], Measurement]] | None = None,
        stored_stages: StoredStages = STORED_STAGES,
    ) -> None:
        self.connection = connection
        self.sql = Statements(connection.dialect.name)
        self.run_ids = dict(run_ids)
        self.trace_ids = {run_id: trace_id for trace_id, run_id in run_ids.items()}
        #: Measurements this transaction just offered to store, with their copy keys, as
        #: reading them back would give them: where the stored copy key is theirs, only the
        #: key is read again.
        self.fresh = dict(fresh or {})
        #: Every manifest read so far (the store dates reports by them).
        self.manifests_read: dict[RequestKey, Manifest] = {}
        self.stored_stages = stored_stages

    def rows_by_keys(
        self,
        table: Table,
        columns: Sequence[str],
        key: Sequence[str],
        keys: Collection[Any],
        index: str | None = None,
    ) -> list[Sequence[Any]]:
        return self.sql.select_keys(self.connection, table, columns, key, sorted(keys), index=index)

    def _measurements(self, keys: Collection[tuple[int, str, str]]) -> list[Measurement]:
        """The stored measurements of many (run, call, request key) groups: which ones
        exist from their keys alone, then whole rows only for those neither just written
        nor read before (:mod:`.stored_stages`)."""
        stored = self.rows_by_keys(
            MEASUREMENTS, (*MEASUREMENT_KEY, *COPY_KEY), MEASUREMENT_KEY[:3], keys
        )
        found: list[Measurement] = []
        missing: list[tuple[Any, ...]] = []
        width = len(MEASUREMENT_KEY)
        for row in stored:
            key, copy = tuple(row[:width]), tuple(row[width:])
            fresh = self.fresh.get(key)
            if fresh is not None and fresh[0] == copy:
                found.append(fresh[1])
                self.stored_stages.put(key, copy, fresh[1])
            elif (seen := self.stored_stages.get(key, copy)) is not None:
                found.append(seen)
            else:
                missing.append(key)
        if missing:
            rows = self.rows_by_keys(MEASUREMENTS, MEASUREMENT_COLUMNS, MEASUREMENT_KEY, missing)
            lists = read_lists(self.connection, self.sql, list_refs(rows, *MEASUREMENT_LISTS))
            for row in rows:
                record = measurement_of(row, self.trace_ids[row[_RUN]], lists)
                values = tuple(row)
                self.stored_stages.put(values[:width], MEASUREMENT_COPY_KEY(values), record)
                found.append(record)
        return found

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
        rows = self.rows_by_keys(MANIFESTS, MANIFEST_COLUMNS, ("run_id", "request_id"), keys)
        run = MANIFEST_COLUMNS.index("run_id")
        lists = read_lists(self.connection, self.sql, list_refs(rows, *MANIFEST_LISTS))
        found = (manifest_of(row, self.trace_ids[row[run]], lists) for row in rows)
        manifests = {(m.trace_id, m.request_id): m for m in found}
        self.manifests_read.update(manifests)
        return manifests

    def _per_key(
        self,
        names: Sequence[str],
        keys: Sequence[Sequence[Any]],
        query: str,
        text_columns: Collection[str] = (),
    ) -> list[Any]:
        return self.sql.per_key(self.connection, names, keys, query, text_columns)

    def issuers(self, calls: Collection[CallKey]) -> Mapping[CallKey, Sequence[Origin]]:
        keys = sorted({(self.run_ids[t], c) for t, c in calls})
        rows = self._per_key(
            ("run_id", "tool_call_id"),
            keys,
            f"SELECT v.run_id, v.tool_call_id, m.conversation, m.position "
            f"FROM v {self.sql.join_keys} call_issuers ci "
            "ON ci.run_id = v.run_id AND ci.tool_call_id = v.tool_call_id "
            "JOIN manifests m ON m.run_id = ci.run_id AND m.request_id = ci.request_id "
            "WHERE m.position IS NOT NULL",
            text_columns=("tool_call_id",),
        )
        found: dict[CallKey, list[Origin]] = defaultdict(list)
        for run_id, call_id, conversation, position in rows:
            found[(self.trace_ids[run_id], call_id)].append((conversation, position))
        return found

    def requests_after(
        self, positions: Collection[PositionKey]
    ) -> Mapping[PositionKey, frozenset[str]]:
        return self._requests_beside(positions, above=True)

    def seen_requests_before(
        self, positions: Collection[PositionKey]
    ) -> Mapping[PositionKey, frozenset[str]]:
        """Per (trace, conversation, position): the requests of that conversation at the
        greatest position below it among those whose input the telemetry showed (not
        :func:`~ctxledger.verdicts.evidence_gaps.unseen`)."""
        return self._requests_beside(positions, above=False, seen=True)

    def compacted_after(
        self, positions: Collection[PositionKey]
    ) -> Mapping[PositionKey, frozenset[str]]:
        """Per (trace, conversation, position): the requests at the first position above it
        among those whose input the telemetry showed, where they declare a compaction."""
        return self._requests_beside(
            positions, above=True, seen=True, only="AND m.compaction IS NOT NULL"
        )

    def _requests_beside(
        self, positions: Collection[PositionKey], above: bool, seen: bool = False, only: str = ""
    ) -> Mapping[PositionKey, frozenset[str]]:
        keys = sorted({(self.run_ids[t], k, p) for t, k, p in positions})
        comparison, direction = (">", "") if above else ("<", " DESC")
        shown = "AND (n.telemetry_cut IS NULL OR n.tool_calls_ref IS NOT NULL) " if seen else ""
        rows = self._per_key(
            ("run_id", "conversation", "position"),
            keys,
            f"SELECT v.run_id, v.conversation, v.position, m.request_id "
            f"FROM v {self.sql.join_keys} manifests m "
            "ON m.run_id = v.run_id AND m.conversation = v.conversation "
            "AND m.position = (SELECT n.position FROM manifests n WHERE n.run_id = v.run_id "
            f"AND n.conversation = v.conversation AND n.position {comparison} v.position "
            f"{shown}ORDER BY n.position{direction} LIMIT 1) {shown.replace('n.', 'm.')}{only}",
            text_columns=("conversation",),
        )
        found: dict[PositionKey, set[str]] = defaultdict(set)
        for run_id, conversation, position, request_id in rows:
            found[(self.trace_ids[run_id], conversation, position)].add(request_id)
        return {key: frozenset(found.get(key, ())) for key in positions}

    def position_below(
        self, positions: Collection[PositionKey]
    ) -> Mapping[PositionKey, int | None]:
        keys = sorted({(self.run_ids[t], k, p) for t, k, p in positions})
        rows = self._per_key(
            ("run_id", "conversation", "position"),
            keys,
            "SELECT v.run_id, v.conversation, v.position, (SELECT m.position FROM manifests m "
            "WHERE m.run_id = v.run_id AND m.conversation = v.conversation "
            "AND m.position < v.position ORDER BY m.position DESC LIMIT 1) FROM v",
            text_columns=("conversation",),
        )
        return {
            (self.trace_ids[run_id], conversation, position): below
            for run_id, conversation, position, below in rows
        }

    def calls_issued(self, ranges: Collection[PositionRange]) -> set[CallKey]:
        lowest = -(2**63)  # below every position: a range open at the bottom
        keys = sorted(
            {
                (self.run_ids[t], k, lowest if low is None else low, high)
                for t, k, low, high in ranges
            }
        )
        rows = self._per_key(
            ("run_id", "conversation", "low", "high"),
            keys,
            f"SELECT v.run_id, c.tool_call_id FROM v {self.sql.join_keys} calls c "
            "ON c.run_id = v.run_id AND c.conversation = v.conversation "
            "AND c.call_step >= v.low AND c.call_step < v.high",
            text_columns=("conversation",),
        )
        return {(self.trace_ids[run_id], call_id) for run_id, call_id in rows}

    def judged_requests(self, calls: Collection[CallKey]) -> Mapping[CallKey, set[str | None]]:
        keys = {(self.run_ids[t], c) for t, c in calls}
        rows = self.rows_by_keys(
            REPORTS, ("run_id", "tool_call_id", "request_key"), ("run_id", "tool_call_id"), keys
        )
        found: dict[CallKey, set[str | None]] = defaultdict(set)
        for run_id, call_id, request_key in rows:
            found[(self.trace_ids[run_id], call_id)].add(request_key or None)
        return found

    def judged_calls(self, requests: Collection[RequestKey]) -> Mapping[RequestKey, set[str]]:
        keys = {(self.run_ids[t], r) for t, r in requests}
        rows = self.rows_by_keys(
            REPORTS,
            ("run_id", "request_key", "tool_call_id"),
            ("run_id", "request_key"),
            keys,
            index="ix_reports_request",
        )
        found: dict[RequestKey, set[str]] = defaultdict(set)
        for run_id, request_key, call_id in rows:
            found[(self.trace_ids[run_id], request_key)].add(call_id)
        return found

    def calls_without_request(self, traces: Collection[str]) -> set[CallKey]:
        rows = self.rows_by_keys(
            REPORTS,
            ("run_id", "tool_call_id"),
            ("run_id", "request_key"),
            {(self.run_ids[t], "") for t in traces},
            index="ix_reports_request",
        )
        return {(self.trace_ids[run_id], call_id) for run_id, call_id in rows}

    def unseen_requests(self, traces: Collection[str]) -> Mapping[str, Manifest]:
        # The run's manifests by their primary key: only traces with a derived call that
        # has no journey in any request are asked about.
        rows = self._per_key(
            ("run_id",),
            sorted({(self.run_ids[t],) for t in traces}),
            "SELECT v.run_id, (SELECT m.request_id FROM manifests m WHERE m.run_id = v.run_id "
            "AND m.telemetry_cut IS NOT NULL AND m.tool_calls_ref IS NULL "
            "ORDER BY m.request_id LIMIT 1) FROM v",
        )
        found = self.manifests({(self.trace_ids[r], q) for r, q in rows if q is not None})
        return {trace_id: manifest for (trace_id, _), manifest in found.items()}
