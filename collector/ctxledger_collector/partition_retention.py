"""Retention by whole partitions (PostgreSQL): a range of run ids whose runs are all
older than the cutoff is emptied at once, its measurements and reports truncated,
instead of deleted row by row.

Row by row, a partition of 100,000 runs means deleting tens of millions of rows, all
written to the WAL and left for VACUUM; ``TRUNCATE`` returns the space at once. A range
qualifies when no new run can be numbered into it (it lies below the highest run id
handed out) and every run in it ended before the cutoff; the journey counters lose its
reports in the same transaction, computed in the database, and the rows of the
unpartitioned run tables and the runs themselves are deleted with it.

Locks are taken without waiting (``NOWAIT``): ingest and the dashboard's queries hold
locks on every partition while they run, and a retention transaction that waited for
one lock while holding another could deadlock them. A range that stays busy for a few
tries is left to the row-by-row pass (:mod:`ctxledger_collector.retention`), which
takes the per-trace locks ingest takes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from ctxledger_collector.journey_counts import uncount_reports
from ctxledger_collector.partitions import Partition, highest_run_id, is_partitioned, partitions

#: The unpartitioned tables keyed by run id (``runs`` itself goes last).
UNPARTITIONED_RUN_TABLES = (
    "manifests",
    "calls",
    "call_issuers",
    "unmatched_tools",
    "run_journey_counts",
)
#: PostgreSQL's SQLSTATE for a lock that NOWAIT could not take.
LOCK_NOT_AVAILABLE = "55P03"
#: Tries per range while its partitions are locked by others, and the pause between.
TRIES = 5
PAUSE_S = 0.2


@dataclass(frozen=True)
class RunRange:
    """One range of run ids and its two partitions."""

    low: int
    high: int
    measurements: str
    reports: str


@dataclass
class EmptiedPartitions:
    partitions: list[str] = field(default_factory=list)
    runs: int = 0
    reports: int = 0
    #: Ranges whose partitions stayed locked by other transactions on every try.
    busy: list[str] = field(default_factory=list)


def closed_ranges(connection: Connection) -> list[RunRange]:
    """The ranges no new run can be numbered into, with both partitions, lowest first."""
    reports = {(p.low, p.high): p for p in partitions(connection, "reports")}
    highest = highest_run_id(connection)
    found = []
    for measurements in partitions(connection, "measurements"):
        twin: Partition | None = reports.get((measurements.low, measurements.high))
        if measurements.low is None or twin is None or measurements.high > highest + 1:
            continue
        found.append(RunRange(measurements.low, measurements.high, measurements.name, twin.name))
    return found


def _all_expired(connection: Connection, run_range: RunRange, cutoff: float, lock: str) -> int:
    """The number of runs in the range when every one ended before ``cutoff``; -1 when
    one did not. ``lock`` ends the query (``FOR UPDATE NOWAIT`` or nothing)."""
    rows = connection.exec_driver_sql(
        f"SELECT last_seen FROM runs WHERE id >= %s AND id < %s {lock}",
        (run_range.low, run_range.high),
    ).all()
    return len(rows) if all(last_seen < cutoff for (last_seen,) in rows) else -1


def _holds_rows(connection: Connection, run_range: RunRange) -> bool:
    return bool(
        connection.exec_driver_sql(
            f"SELECT EXISTS (SELECT 1 FROM {run_range.measurements}) "
            f"OR EXISTS (SELECT 1 FROM {run_range.reports})"
        ).scalar()
    )


def _empty(connection: Connection, run_range: RunRange, cutoff: float) -> tuple[int, int] | None:
    """Empty one range in the caller's transaction: (runs, reports) removed; None when
    a run in it is no longer expired. Raises OperationalError when a lock is taken."""
    connection.exec_driver_sql(
        f"LOCK TABLE {run_range.measurements}, {run_range.reports} IN ACCESS EXCLUSIVE MODE NOWAIT"
    )
    runs = _all_expired(connection, run_range, cutoff, "FOR UPDATE NOWAIT")
    if runs < 0:
        return None
    reports = int(
        connection.exec_driver_sql(f"SELECT count(*) FROM {run_range.reports}").scalar_one()
    )
    uncount_reports(connection, run_range.reports)
    bounds = (run_range.low, run_range.high)
    for table in UNPARTITIONED_RUN_TABLES:
        connection.exec_driver_sql(
            f"DELETE FROM {table} WHERE run_id >= %s AND run_id < %s", bounds
        )
    connection.exec_driver_sql("DELETE FROM runs WHERE id >= %s AND id < %s", bounds)
    connection.exec_driver_sql(f"TRUNCATE {run_range.measurements}, {run_range.reports}")
    return runs, reports


def empty_expired_partitions(engine: Engine, cutoff: float) -> EmptiedPartitions:
    """Empty every closed range whose runs all ended before ``cutoff`` (epoch seconds)."""
    outcome = EmptiedPartitions()
    if engine.dialect.name != "postgresql":
        return outcome
    with engine.connect() as connection:
        if not is_partitioned(connection):
            return outcome
        candidates = [
            r
            for r in closed_ranges(connection)
            if _all_expired(connection, r, cutoff, "") >= 0 and _holds_rows(connection, r)
        ]
    for run_range in candidates:
        for attempt in range(TRIES):
            try:
                with engine.begin() as connection:
                    emptied = _empty(connection, run_range, cutoff)
            except OperationalError as error:
                if getattr(error.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                    raise
                if attempt == TRIES - 1:
                    outcome.busy.append(run_range.measurements)
                else:
                    time.sleep(PAUSE_S)
                continue
            if emptied is not None:
                outcome.partitions += [run_range.measurements, run_range.reports]
                outcome.runs += emptied[0]
                outcome.reports += emptied[1]
            break
    return outcome
