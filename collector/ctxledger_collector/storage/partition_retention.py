"""Retention by whole partitions (PostgreSQL): a range of run ids whose runs are all
older than the cutoff is detached from ``measurements`` and ``reports`` and dropped,
before any run is deleted row by row.

Row by row, a partition of 100,000 runs means deleting tens of millions of rows, all
written to the WAL and left for VACUUM; dropping the partition returns its files at
once and writes next to nothing. A range qualifies when no new run can be numbered into
it (it lies below the highest run id handed out) and every run in it ended before the
cutoff. In the same transaction, first the journey counters lose its reports (computed
in the database, :func:`~ctxledger_collector.storage.journey_counts.uncount_reports`),
then the rows of the unpartitioned run tables and the runs themselves are deleted, then
both partitions are detached and dropped.

``DETACH PARTITION`` takes ``ACCESS EXCLUSIVE`` on the parent tables. ``CONCURRENTLY``
would take less, but PostgreSQL refuses it on a table with a default partition (the
``_overflow`` ones) and inside a transaction, and the counters must move in the same
transaction as the reports go. So the locks are taken in the order every other
partition change takes them (:func:`~ctxledger_collector.storage.partitions.lock_parents`:
the maintenance advisory lock, then both parents, waiting at most ``lock_timeout``, well
under ``deadlock_timeout``), and the runs' rows last, without waiting (``NOWAIT``): ingest
locks a run's row before it writes into the parents, so retention never waits for a row
while holding the parents, and an ingest that waits behind retention for at most the
lock timeout is never the one a deadlock check would cancel. A range that stays busy
for a few tries is left to the row-by-row pass
(:mod:`ctxledger_collector.storage.retention`), which takes the per-trace locks ingest
takes (:mod:`~ctxledger_collector.storage.trace_locks`; far too many for a whole range).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from ctxledger_collector.storage.journey_counts import uncount_reports
from ctxledger_collector.storage.partitions import (
    LOCK_NOT_AVAILABLE,
    PARTITIONED,
    Partition,
    highest_run_id,
    is_partitioned,
    lock_parents,
    partitions,
)

#: The unpartitioned tables keyed by run id (``runs`` itself goes last).
UNPARTITIONED_RUN_TABLES = (
    "manifests",
    "calls",
    "call_issuers",
    "unmatched_tools",
    "run_journey_counts",
)
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
class DetachedPartitions:
    #: Detached and dropped, measurements' and reports' of each range.
    partitions: list[str] = field(default_factory=list)
    runs: int = 0
    reports: int = 0
    #: Ranges whose partitions stayed locked by other transactions on every try.
    busy: list[str] = field(default_factory=list)
    #: The longest transaction that removed a range (seconds): the parents stay locked
    #: for all of it.
    longest_transaction_s: float = 0.0


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


def _detach(connection: Connection, run_range: RunRange, cutoff: float) -> tuple[int, int] | None:
    """Remove one range in the caller's transaction: (runs, reports) removed; None when
    it is gone already or a run in it is no longer expired. Raises OperationalError
    (``LOCK_NOT_AVAILABLE``) when a lock is held by others."""
    lock_parents(connection)
    attached = {p.name for table in PARTITIONED for p in partitions(connection, table)}
    if not {run_range.measurements, run_range.reports} <= attached:
        return None  # another collector's retention took it meanwhile
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
    for table, name in (("measurements", run_range.measurements), ("reports", run_range.reports)):
        connection.exec_driver_sql(f"ALTER TABLE {table} DETACH PARTITION {name}")
        connection.exec_driver_sql(f"DROP TABLE {name}")
    return runs, reports


def detach_expired_partitions(engine: Engine, cutoff: float) -> DetachedPartitions:
    """Detach and drop every closed range whose runs all ended before ``cutoff`` (epoch
    seconds), with the runs in it; an empty closed range goes too."""
    outcome = DetachedPartitions()
    if engine.dialect.name != "postgresql":
        return outcome
    with engine.connect() as connection:
        if not is_partitioned(connection):
            return outcome
        candidates = [
            r for r in closed_ranges(connection) if _all_expired(connection, r, cutoff, "") >= 0
        ]
    for run_range in candidates:
        for attempt in range(TRIES):
            started = time.perf_counter()
            try:
                with engine.begin() as connection:
                    removed = _detach(connection, run_range, cutoff)
            except OperationalError as error:
                if getattr(error.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                    raise
                if attempt == TRIES - 1:
                    outcome.busy.append(run_range.measurements)
                else:
                    time.sleep(PAUSE_S)
                continue
            took = time.perf_counter() - started
            outcome.longest_transaction_s = max(outcome.longest_transaction_s, took)
            if removed is not None:
                outcome.partitions += [run_range.measurements, run_range.reports]
                outcome.runs += removed[0]
                outcome.reports += removed[1]
            break
    return outcome
