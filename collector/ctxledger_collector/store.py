"""Writing: idempotent upserts of a decoded batch, then re-judging the journeys it
touched, all in one transaction that commits before the exporter gets its answer.

Concurrency: on PostgreSQL each touched trace is locked with a transaction-scoped
advisory lock (in sorted order), so two collector processes judging the same trace
take turns and the second sees the first's rows. On SQLite writers queue on the
database lock (``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, Table, delete, func, select, text, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import Session

from ctxledger.verdicts import Report, Tolerances, judge_trace
from ctxledger_collector.alerts.events import AlertContext, record_events
from ctxledger_collector.database import is_storage_outage
from ctxledger_collector.otlp_decode import DecodedBatch, DecodedMeasurement, Rejection
from ctxledger_collector.records import record_to_manifest, record_to_measurement
from ctxledger_collector.rows import (
    manifest_row,
    measurement_row,
    preferred_rows,
    report_row,
    run_rows,
)
from ctxledger_collector.tables import (
    MANIFEST_KEY,
    MANIFESTS,
    MEASUREMENT_KEY,
    MEASUREMENTS,
    REPORT_KEY,
    REPORTS,
    RUNS,
    RunValues,
)


@dataclass(frozen=True)
class VerdictChange:
    """A journey whose verdict is new (``previous`` None) or changed."""

    report: Report
    previous: str | None
    previous_lost_tokens: int


@dataclass
class IngestOutcome:
    measurements: int = 0
    manifests: int = 0
    reports: list[Report] = field(default_factory=list)
    changes: list[VerdictChange] = field(default_factory=list)
    alert_events: int = 0


def _advisory_key(trace_id: str) -> int:
    digest = hashlib.blake2b(trace_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Store:
    """The collector's writes. Thread-safe: every call opens its own session."""

    def __init__(
        self, engine: Engine, tolerances: Tolerances, alerts: AlertContext | None = None
    ) -> None:
        self.engine = engine
        self.tolerances = tolerances
        self.alerts = alerts
        self.dialect = engine.dialect.name

    # --- upserts -------------------------------------------------------------------

    def _upsert(
        self,
        session: Session,
        table: Table,
        rows: Sequence[Mapping[str, Any]],
        keys: Sequence[str],
        newer_wins: bool,
    ) -> None:
        """Insert ``rows``; on a key already stored, update it (only with a greater
        ``pick_key`` when ``newer_wins``: the copy the verdicts' duplicate rule prefers)."""
        if not rows:
            return
        insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        stmt = insert(table)
        updates = {
            c.name: stmt.excluded[c.name]
            for c in table.columns
            if c.name not in keys and not c.primary_key
        }
        stmt = stmt.on_conflict_do_update(
            index_elements=list(keys),
            set_=updates,
            where=(stmt.excluded.pick_key > table.c.pick_key) if newer_wins else None,
        )
        # One compiled statement, many parameter sets: SQLAlchemy batches them
        # ("insertmanyvalues") instead of compiling new SQL for every chunk.
        session.execute(stmt, list(rows))

    def _upsert_runs(self, session: Session, runs: Sequence[RunValues]) -> None:
        if not runs:
            return
        table = RUNS
        insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        lowest = func.least if self.dialect == "postgresql" else func.min
        highest = func.greatest if self.dialect == "postgresql" else func.max
        stmt = insert(table).values(list(runs))
        stmt = stmt.on_conflict_do_update(
            index_elements=["trace_id"],
            set_={
                "first_seen": lowest(table.c.first_seen, stmt.excluded.first_seen),
                "last_seen": highest(table.c.last_seen, stmt.excluded.last_seen),
                "service_name": func.coalesce(stmt.excluded.service_name, table.c.service_name),
                "agent_name": func.coalesce(stmt.excluded.agent_name, table.c.agent_name),
            },
        )
        session.execute(stmt)

    # --- ingest --------------------------------------------------------------------

    def ingest(self, batch: DecodedBatch, now: float | None = None) -> IngestOutcome:
        """Store a batch and re-judge what it touched; commits before returning."""
        now = time.time() if now is None else now
        measurements = preferred_rows(map(measurement_row, batch.measurements), MEASUREMENT_KEY)
        manifests = preferred_rows(map(manifest_row, batch.manifests), MANIFEST_KEY)
        outcome = IngestOutcome(len(measurements), len(manifests))
        touched = _journeys_touched(batch)
        if not touched:
            return outcome
        with Session(self.engine) as session, session.begin():
            self._lock_traces(session, touched)
            self._upsert_runs(session, run_rows(batch))
            self._upsert(session, MEASUREMENTS, measurements, MEASUREMENT_KEY, newer_wins=True)
            self._upsert(session, MANIFESTS, manifests, MANIFEST_KEY, newer_wins=True)
            for trace_id in sorted(touched):
                self._rejudge(session, trace_id, touched[trace_id], now, outcome)
            if self.alerts is not None:
                outcome.alert_events = record_events(session, outcome.reports, self.alerts, now)
        return outcome

    def ingest_each(self, batch: DecodedBatch, now: float | None = None) -> list[Rejection]:
        """Store a batch span by span, each in its own transaction; the spans the
        database refuses are returned as rejections (outages still raise)."""
        rejected: list[Rejection] = []
        singles = [DecodedBatch(measurements=[m]) for m in batch.measurements] + [
            DecodedBatch(manifests=[m]) for m in batch.manifests
        ]
        for single in singles:
            try:
                self.ingest(single, now)
            except StatementError as error:
                if is_storage_outage(error):
                    raise
                item = (single.measurements or single.manifests)[0]
                span = item.measurement if isinstance(item, DecodedMeasurement) else item.manifest
                reason = str(getattr(error, "orig", None) or error).splitlines()[0]
                rejected.append(
                    Rejection(span.trace_id, span.span_id or "", f"could not be stored: {reason}")
                )
        return rejected

    def _lock_traces(self, session: Session, trace_ids: Iterable[str]) -> None:
        if self.dialect != "postgresql":
            return
        for trace_id in sorted(trace_ids):
            session.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": _advisory_key(trace_id)}
            )

    # --- judging -------------------------------------------------------------------

    def _rejudge(
        self,
        session: Session,
        trace_id: str,
        call_ids: set[str] | None,
        now: float,
        outcome: IngestOutcome,
    ) -> None:
        measurements = [
            record_to_measurement(record)
            for record in session.scalars(
                select(MEASUREMENTS.c.record).where(MEASUREMENTS.c.trace_id == trace_id)
            )
        ]
        manifests = [
            record_to_manifest(record)
            for record in session.scalars(
                select(MANIFESTS.c.record).where(MANIFESTS.c.trace_id == trace_id)
            )
        ]
        reports = judge_trace(
            measurements, manifests, tolerances=self.tolerances, now=now, tool_call_ids=call_ids
        )
        fresh = {(r.tool_call_id, r.request_id or "") for r in reports}
        judged_calls = {r.tool_call_id for r in reports} | (call_ids or set())
        existing_query = select(
            REPORTS.c.tool_call_id, REPORTS.c.request_key, REPORTS.c.verdict, REPORTS.c.lost_tokens
        ).where(REPORTS.c.trace_id == trace_id)
        if call_ids is not None:
            existing_query = existing_query.where(REPORTS.c.tool_call_id.in_(judged_calls))
        existing = {(row[0], row[1]): (row[2], row[3]) for row in session.execute(existing_query)}
        stale = [key for key in existing if key not in fresh]
        if stale:
            session.execute(
                delete(REPORTS).where(
                    REPORTS.c.trace_id == trace_id,
                    tuple_(REPORTS.c.tool_call_id, REPORTS.c.request_key).in_(stale),
                )
            )
        by_request = {m.request_id: m.observed_at for m in manifests}
        rows = [report_row(r, by_request, now) for r in reports]
        self._upsert(session, REPORTS, rows, REPORT_KEY, newer_wins=False)
        outcome.reports.extend(reports)
        for report in reports:
            previous, previous_tokens = existing.get(
                (report.tool_call_id, report.request_id or ""), (None, 0)
            )
            if previous != report.verdict:
                outcome.changes.append(VerdictChange(report, previous, previous_tokens))

    def sweep_unsettled(self, now: float | None = None) -> IngestOutcome:
        """Re-judge journeys still waiting for later stages once their grace period has
        passed, so they become ``incomplete``."""
        now = time.time() if now is None else now
        cutoff = now - self.tolerances.incomplete_after_s
        with Session(self.engine) as session:
            trace_ids = sorted(
                set(
                    session.scalars(
                        select(REPORTS.c.trace_id).where(
                            REPORTS.c.settled.is_(False),
                            REPORTS.c.last_observed_at <= cutoff,
                        )
                    )
                )
            )
        outcome = IngestOutcome()
        for trace_id in trace_ids:
            with Session(self.engine) as session, session.begin():
                self._lock_traces(session, [trace_id])
                before = len(outcome.reports)
                self._rejudge(session, trace_id, None, now, outcome)
                if self.alerts is not None:
                    outcome.alert_events += record_events(
                        session, outcome.reports[before:], self.alerts, now
                    )
        return outcome


def _journeys_touched(batch: DecodedBatch) -> dict[str, set[str] | None]:
    """Per trace, the tool calls whose journeys the batch can change; ``None`` for all of
    the trace's journeys (a manifest can change any of them)."""
    touched: dict[str, set[str] | None] = {}
    for item in batch.measurements:
        calls = touched.setdefault(item.measurement.trace_id, set())
        if calls is not None:
            calls.add(item.measurement.tool_call_id)
    for manifest_item in batch.manifests:
        touched[manifest_item.manifest.trace_id] = None
    return touched
