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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, delete, func, select, text, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import Session

from ctxledger.verdicts import Report, Tolerances, judge_trace
from ctxledger_collector.alerts.events import AlertContext, record_events
from ctxledger_collector.database import is_storage_outage
from ctxledger_collector.otlp_decode import (
    DecodedBatch,
    Rejection,
    StoredMeasurement,
    json_safe,
)
from ctxledger_collector.records import (
    manifest_to_record,
    measurement_to_record,
    record_to_manifest,
    record_to_measurement,
    report_detail,
)
from ctxledger_collector.tables import (
    MANIFESTS,
    MEASUREMENTS,
    REPORTS,
    RUNS,
    ManifestRow,
    MeasurementRow,
    ReportRow,
    table_of,
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


def _pick_key(observed_at: float, span_id: str | None) -> str:
    """Which copy of a duplicated span is kept: the same one whatever the arrival order."""
    return f"{observed_at:020.6f}|{span_id or ''}"


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
        model: type[Any],
        rows: Sequence[dict[str, Any]],
        keys: Sequence[str],
        newer_wins: bool,
    ) -> None:
        if not rows:
            return
        table = table_of(model)
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

    def _upsert_runs(self, session: Session, runs: dict[str, dict[str, Any]]) -> None:
        if not runs:
            return
        table = RUNS
        insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        lowest = func.least if self.dialect == "postgresql" else func.min
        highest = func.greatest if self.dialect == "postgresql" else func.max
        stmt = insert(table).values(list(runs.values()))
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
        measurement_rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        manifest_rows: dict[tuple[str, str], dict[str, Any]] = {}
        runs: dict[str, dict[str, Any]] = {}
        touched: dict[str, set[str] | None] = {}

        def note_run(trace_id: str, service: str | None, agent: str | None, at: float) -> None:
            run = runs.setdefault(
                trace_id,
                {
                    "trace_id": trace_id,
                    "service_name": service,
                    "agent_name": agent,
                    "first_seen": at,
                    "last_seen": at,
                },
            )
            run["first_seen"] = min(run["first_seen"], at)
            run["last_seen"] = max(run["last_seen"], at)
            run["service_name"] = run["service_name"] or service
            run["agent_name"] = run["agent_name"] or agent

        for measurement_item in batch.measurements:
            m = measurement_item.measurement
            row = {
                "trace_id": m.trace_id,
                "tool_call_id": m.tool_call_id,
                "request_key": m.request_id or "",
                "stage": m.stage,
                "stage_order": m.order,
                "tool_name": m.tool_name,
                "step": m.step,
                "span_id": m.span_id,
                "observed_at": m.observed_at,
                "pick_key": _pick_key(m.observed_at, m.span_id),
                "dropped_attributes": m.dropped_attributes,
                "record": measurement_to_record(m),
                "attributes": json_safe(measurement_item.attributes),
            }
            key = (m.trace_id, m.tool_call_id, m.request_id or "", m.stage)
            if key not in measurement_rows or row["pick_key"] > measurement_rows[key]["pick_key"]:
                measurement_rows[key] = row
            note_run(m.trace_id, measurement_item.service_name, m.agent_name, m.observed_at)
            calls = touched.setdefault(m.trace_id, set())
            if calls is not None:
                calls.add(m.tool_call_id)

        for manifest_item in batch.manifests:
            man = manifest_item.manifest
            row = {
                "trace_id": man.trace_id,
                "request_id": man.request_id,
                "step": man.step,
                "model": man.model,
                "tokens": man.tokens,
                "context_window": man.context_window,
                "span_id": man.span_id,
                "observed_at": man.observed_at,
                "pick_key": _pick_key(man.observed_at, man.span_id),
                "record": manifest_to_record(man),
                "attributes": json_safe(manifest_item.attributes),
            }
            request_key = (man.trace_id, man.request_id)
            kept = manifest_rows.get(request_key)
            if kept is None or row["pick_key"] > kept["pick_key"]:
                manifest_rows[request_key] = row
            note_run(man.trace_id, manifest_item.service_name, man.agent_name, man.observed_at)
            touched[man.trace_id] = None  # a manifest can change any journey of its trace

        outcome = IngestOutcome(len(measurement_rows), len(manifest_rows))
        if not touched:
            return outcome
        with Session(self.engine) as session, session.begin():
            self._lock_traces(session, touched)
            self._upsert_runs(session, runs)
            self._upsert(
                session,
                MeasurementRow,
                list(measurement_rows.values()),
                ["trace_id", "tool_call_id", "request_key", "stage"],
                newer_wins=True,
            )
            self._upsert(
                session,
                ManifestRow,
                list(manifest_rows.values()),
                ["trace_id", "request_id"],
                newer_wins=True,
            )
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
                record = (single.measurements or single.manifests)[0]
                span = (
                    record.measurement
                    if isinstance(record, StoredMeasurement)
                    else (record.manifest)
                )
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
                delete(ReportRow).where(
                    REPORTS.c.trace_id == trace_id,
                    tuple_(REPORTS.c.tool_call_id, REPORTS.c.request_key).in_(stale),
                )
            )
        by_request = {m.request_id: m.observed_at for m in manifests}
        rows = [_report_row(r, by_request, now) for r in reports]
        self._upsert(
            session, ReportRow, rows, ["trace_id", "tool_call_id", "request_key"], newer_wins=False
        )
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


def _report_row(report: Report, manifest_times: dict[str, float], now: float) -> dict[str, Any]:
    observed = [m.observed_at for m in report.stages]
    if report.request_id in manifest_times:
        observed.append(manifest_times[report.request_id])
    return {
        "trace_id": report.trace_id,
        "tool_call_id": report.tool_call_id,
        "request_key": report.request_id or "",
        "verdict": report.verdict,
        "tool_name": report.tool_name,
        "agent_name": report.agent_name,
        "step": report.step,
        "settled": report.settled,
        "lost_items": report.lost_items,
        "lost_chars": report.lost_chars,
        "lost_tokens": report.lost_tokens,
        "last_observed_at": max(observed, default=now),
        "judged_at": now,
        "detail": report_detail(report),
    }
