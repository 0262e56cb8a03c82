"""Writing: idempotent upserts of a decoded batch, then re-judging the journeys the batch
can change (:mod:`ctxledger.verdicts.incremental`), all in one transaction that commits
before the exporter gets its answer. What a batch reads and writes follows the batch,
not the length of its runs.

Concurrency: on PostgreSQL each touched trace is locked with a transaction-scoped
advisory lock (in sorted order), so two collector processes judging the same trace
take turns and the second sees the first's rows. On SQLite writers queue on the
database lock (``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import Session

from ctxledger.verdicts import Manifest, Measurement, Tolerances
from ctxledger.verdicts.incremental import plan_rejudging, plan_sweep, rejudge
from ctxledger_collector.alerts.events import AlertContext, record_events
from ctxledger_collector.decoded.batch import DecodedBatch
from ctxledger_collector.decoded.rejection_codes import DATABASE_REFUSED, Rejection
from ctxledger_collector.judge.call_records import write_issuers, write_origins
from ctxledger_collector.judge.compaction import compaction_stages, write_compaction_stages
from ctxledger_collector.judge.judgments import IngestOutcome, write_judgments
from ctxledger_collector.judge.quiet_resends import ResendMemory, without_quiet_resends
from ctxledger_collector.judge.tool_matching import match_tools
from ctxledger_collector.judge.trace_state import SqlTraceState
from ctxledger_collector.storage.database import is_storage_outage
from ctxledger_collector.storage.lookup_plans import plan_lookups_by_index
from ctxledger_collector.storage.rows import (
    MANIFEST_COLUMNS,
    MANIFEST_COPY_KEY,
    MANIFEST_KEY,
    MEASUREMENT_COLUMNS,
    MEASUREMENT_COPY_KEY,
    MEASUREMENT_KEY,
    RunSighting,
    manifest_row,
    measurement_row,
    preferred_copies,
    preferred_rows,
    run_sightings,
)
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.stored_records import stored_form
from ctxledger_collector.storage.string_lists import ListWriter
from ctxledger_collector.storage.tables import MANIFESTS, MEASUREMENTS
from ctxledger_collector.storage.trace_locks import lock_traces


def _record_of(single: DecodedBatch) -> Measurement | Manifest:
    """The one record of a batch made of one span."""
    if single.measurements:
        return single.measurements[0].measurement
    if single.manifests:
        return single.manifests[0].manifest
    return single.unmatched[0].stage.measurement


class Store:
    """The collector's writes. Thread-safe: every call opens its own connection."""

    def __init__(
        self, engine: Engine, tolerances: Tolerances, alerts: AlertContext | None = None
    ) -> None:
        self.engine = engine
        self.tolerances = tolerances
        self.alerts = alerts
        self.dialect = engine.dialect.name
        self.sql = Statements(self.dialect)
        self.resends = ResendMemory()  # what tells quiet re-sends, kept between batches
        # SQLite has one writer at a time. Threads of this process queue here, and the next
        # starts the moment the last commits; queued on the database lock instead, they
        # would sleep in SQLite's busy handler's growing steps (up to 100 ms) after it is free.
        self.writer: contextlib.AbstractContextManager[Any] = (
            threading.Lock() if self.dialect == "sqlite" else contextlib.nullcontext()
        )

    # --- ingest --------------------------------------------------------------------

    def ingest(self, batch: DecodedBatch, now: float | None = None) -> IngestOutcome:
        """Store a batch and re-judge what it can change; commits before returning."""
        now = time.time() if now is None else now
        runs = run_sightings(batch)
        outcome = IngestOutcome()
        if not runs:
            return outcome
        with self.writer, self.engine.begin() as connection:
            lock_traces(connection, runs)
            plan_lookups_by_index(connection)
            run_ids = self._upsert_runs(connection, list(runs.values()))
            state = SqlTraceState(connection, run_ids)
            replaced = state.manifests(
                {(i.manifest.trace_id, i.manifest.request_id) for i in batch.manifests}
            )
            lists = ListWriter()
            built = [
                (i, manifest_row(i, run_ids[i.manifest.trace_id], lists)) for i in batch.manifests
            ]
            manifests = preferred_rows(
                (row for _, row in built), len(MANIFEST_KEY), MANIFEST_COPY_KEY
            )
            self.sql.upsert(
                connection, MANIFESTS, MANIFEST_COLUMNS, MANIFEST_KEY, manifests, preferred=True
            )
            keyed = [(i, MANIFEST_COPY_KEY(row)) for i, row in built]
            write_issuers(connection, self.sql, run_ids, batch, keyed, replaced)
            inferred, matched_calls = match_tools(connection, self.sql, run_ids, batch)
            lists.store(connection, self.sql)  # the manifests' lists, read back just below
            compacted = compaction_stages(state, [i.manifest for i in batch.manifests], replaced)
            decoded = [*batch.measurements, *inferred]
            decoded, quiet = without_quiet_resends(state, decoded, batch.manifests, self.resends)
            chosen = preferred_copies(
                (
                    (measurement_row(i, run_ids[i.measurement.trace_id], lists), i.measurement)
                    for i in decoded
                ),
                len(MEASUREMENT_KEY),
                MEASUREMENT_COPY_KEY,
            )
            measurements = [row for row, _ in chosen.values()]
            lists.store(connection, self.sql)
            self.sql.upsert(
                connection,
                MEASUREMENTS,
                MEASUREMENT_COLUMNS,
                MEASUREMENT_KEY,
                measurements,
                preferred=True,
            )
            chosen.update(write_compaction_stages(connection, self.sql, run_ids, compacted))
            # What the judge reads back of these rows it may take from the batch, where the
            # stored copy is the batch's own (the copy key tells).
            state.fresh = {
                key: (MEASUREMENT_COPY_KEY(row), stored_form(m)) for key, (row, m) in chosen.items()
            }
            outcome.measurements, outcome.manifests = len(measurements), len(manifests)
            plan = plan_rejudging(
                [*(i.measurement for i in decoded), *compacted.written],
                [i.manifest for i in batch.manifests],
                state,
                replaced,
                quiet,
            )
            plan.whole |= matched_calls
            for trace_id, call_id, request_id in compacted.deleted:
                plan.add_journey(trace_id, call_id, request_id)
            judgments = rejudge(plan, state, tolerances=self.tolerances, now=now)
            write_judgments(connection, self.sql, self.tolerances, state, judgments, now, outcome)
            write_origins(connection, self.sql, state.run_ids, judgments, plan.whole)
            self._record_alerts(connection, outcome, now)
        return outcome

    def ingest_each(self, batch: DecodedBatch, now: float | None = None) -> list[Rejection]:
        """Store a batch span by span, each in its own transaction; the spans the
        database refuses are returned as rejections (outages still raise)."""
        rejected: list[Rejection] = []
        singles = [DecodedBatch(measurements=[m]) for m in batch.measurements] + [
            DecodedBatch(
                manifests=[m],
                issued=[
                    i
                    for i in batch.issued
                    if (i.trace_id, i.request_id) == (m.manifest.trace_id, m.manifest.request_id)
                ],
            )
            for m in batch.manifests
        ]
        singles += [DecodedBatch(unmatched=[u]) for u in batch.unmatched]
        for single in singles:
            try:
                self.ingest(single, now)
            except StatementError as error:
                if is_storage_outage(error):
                    raise
                span = _record_of(single)
                reason = str(getattr(error, "orig", None) or error).splitlines()[0]
                rejected.append(
                    Rejection(
                        span.trace_id,
                        span.span_id or "",
                        f"could not be stored: {reason}",
                        DATABASE_REFUSED,
                    )
                )
        return rejected

    def sweep_unsettled(self, now: float | None = None, limit: int = 5_000) -> IngestOutcome:
        """Re-judge journeys still waiting for later stages once their grace period has
        passed, so they become ``incomplete``: each journey alone, not its trace."""
        now = time.time() if now is None else now
        cutoff = now - self.tolerances.incomplete_after_s
        mark = self.sql.mark
        with self.engine.connect() as connection:
            due = connection.exec_driver_sql(
                "SELECT runs.trace_id, runs.id, reports.tool_call_id, reports.request_key "
                "FROM reports JOIN runs ON runs.id = reports.run_id "
                f"WHERE reports.settled = {mark} AND reports.last_observed_at <= {mark} "
                f"ORDER BY reports.last_observed_at LIMIT {int(limit)}",
                (False, cutoff),
            ).fetchall()
        outcome = IngestOutcome()
        if not due:
            return outcome
        with self.writer, self.engine.begin() as connection:
            lock_traces(connection, {row[0] for row in due})
            plan_lookups_by_index(connection)
            state = SqlTraceState(connection, {row[0]: row[1] for row in due})
            plan = plan_sweep((row[0], row[2], row[3] or None) for row in due)
            judgments = rejudge(plan, state, tolerances=self.tolerances, now=now)
            write_judgments(connection, self.sql, self.tolerances, state, judgments, now, outcome)
            self._record_alerts(connection, outcome, now)
        return outcome

    # --- writing -------------------------------------------------------------------

    def _upsert_runs(self, connection: Connection, runs: Sequence[RunSighting]) -> dict[str, int]:
        """Each run's integer id, made on its first sighting."""
        ordered = [run.values() for run in sorted(runs, key=lambda r: r.trace_id)]
        return {trace_id: run_id for run_id, trace_id in self.sql.upsert_runs(connection, ordered)}

    def _record_alerts(self, connection: Connection, outcome: IngestOutcome, now: float) -> None:
        if self.alerts is None or not outcome.reports:
            return
        with Session(bind=connection) as session:
            outcome.alert_events += record_events(
                session, outcome.reports, self.alerts, now, outcome.still_missing
            )
            session.flush()
