"""A batch's judgments written: each considered journey's report replaced, what changed
noted for the metrics and alerts, and each lost result's first lost journey flagged
(re-judging a stored journey that becomes it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection

from ctxledger.verdicts import Report, Tolerances
from ctxledger.verdicts.incremental import RejudgePlan, rejudge
from ctxledger.verdicts.journeys import CallJudgment
from ctxledger_collector.judge.lost_results import mark_first_losses
from ctxledger_collector.judge.trace_state import SqlTraceState
from ctxledger_collector.storage.journey_counts import COUNTED_COLUMNS, count_journeys
from ctxledger_collector.storage.rows import REPORT_COLUMNS, REPORT_KEY, report_row
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.tables import REPORTS


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
    #: Journeys (trace, call, request key) losing, but not where their result was first
    #: lost: the result still missing, which alerts only once, at its first lost journey.
    still_missing: set[tuple[str, str, str]] = field(default_factory=set)


def write_judgments(
    connection: Connection,
    sql: Statements,
    tolerances: Tolerances,
    state: SqlTraceState,
    judgments: Sequence[CallJudgment],
    now: float,
    outcome: IngestOutcome,
    follow_first_losses: bool = True,
) -> None:
    """Replace the reports each judgment considered, and note what changed. A stored
    journey that becomes where its result was first lost is re-judged and written
    too (once), so its report reaches the alerts like any judged in the batch."""
    considered = {
        (state.run_ids[j.trace_id], j.call_id, request_id or "")
        for j in judgments
        for request_id in j.considered
    }
    replaced = state.rows_by_keys(REPORTS, COUNTED_COLUMNS, REPORT_KEY, considered)
    existing = {
        (run_id, call_id, request_key): (verdict, lost_tokens)
        for run_id, call_id, request_key, verdict, lost_tokens, *_ in replaced
    }
    rows = []
    written = set()
    for judgment in judgments:
        run_id = state.run_ids[judgment.trace_id]
        for report in judgment.reports:
            key = (run_id, report.tool_call_id, report.request_id or "")
            manifest = state.manifests_read.get((report.trace_id, report.request_id or ""))
            arrived = manifest.observed_at if manifest is not None else None
            rows.append(report_row(report, run_id, arrived, now))
            written.add(key)
            previous, previous_tokens = existing.get(key, (None, 0))
            if previous != report.verdict:
                outcome.changes.append(VerdictChange(report, previous, previous_tokens))
            outcome.reports.append(report)
    flags = mark_first_losses(connection, sql, considered | written, rows)
    sql.upsert(connection, REPORTS, REPORT_COLUMNS, REPORT_KEY, flags.rows)
    stale = [k for k in existing if k not in written]
    sql.delete_keys(connection, REPORTS, REPORT_KEY, stale)
    count_journeys(connection, replaced, flags.rows, flags.reflagged)
    outcome.still_missing |= {
        (state.trace_ids[run_id], call_id, request_key)
        for run_id, call_id, request_key in flags.still_missing
    }
    if flags.became_first and follow_first_losses:
        plan = RejudgePlan()
        for run_id, call_id, request_key in flags.became_first:
            if request_key:
                plan.add_journey(state.trace_ids[run_id], call_id, request_key)
            else:
                plan.whole.add((state.trace_ids[run_id], call_id))
        again = rejudge(plan, state, tolerances=tolerances, now=now)
        write_judgments(connection, sql, tolerances, state, again, now, outcome, False)
