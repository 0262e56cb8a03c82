"""Retention: runs (traces) whose newest span is older than a cutoff are removed with
everything stored for them, in small batches so ingest keeps its turn; so are the OTLP
log records received before the cutoff.

A run goes as a whole, when its ``last_seen`` (the newest observation of any of its
spans) is before the cutoff, so a long run is never cut in half. Each batch is one
short transaction: on PostgreSQL it takes the same per-trace advisory locks as ingest
and checks ``last_seen`` again under them, so a run that received a span meanwhile is
kept; on SQLite the batch queues with ingest on the one writer lock, and ingest runs
between batches. The journey counters move by the removed reports, in the same
transaction, so every aggregate stays exact for what remains. Alert events and
notifications are history and stay; so do the shared ``string_lists`` (each list is
stored once, whichever runs refer to it).

On PostgreSQL, measurements and reports are partitioned by run id
(:mod:`ctxledger_collector.storage.partitions`): a range whose runs are all past the cutoff is
detached and dropped whole first (:mod:`ctxledger_collector.storage.partition_retention`), the
counters moved in SQL, before any run goes row by row; partitions that the row-by-row pass
left empty are dropped afterwards.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine

from ctxledger_collector.storage.journey_counts import COUNTED_COLUMNS, count_journeys
from ctxledger_collector.storage.partition_retention import detach_expired_partitions
from ctxledger_collector.storage.statements import chunks
from ctxledger_collector.storage.trace_locks import lock_traces

#: The tables keyed by run id, children first; ``runs`` goes last.
RUN_TABLES = (
    "measurements",
    "manifests",
    "calls",
    "call_issuers",
    "unmatched_tools",
    "run_journey_counts",
)
DAY_S = 86_400.0


@dataclass
class PruneOutcome:
    runs: int = 0
    reports: int = 0
    batches: int = 0
    partitions_dropped: list[str] = field(default_factory=list)
    #: Partitions detached and dropped whole (PostgreSQL), their runs and reports counted
    #: above; ``partitions_dropped`` are those the row-by-row pass left empty.
    partitions_detached: list[str] = field(default_factory=list)
    #: The longest transaction (seconds): how long ingest of the runs it held, or of any
    #: run while a range was detached (the parents locked), could wait on retention.
    longest_transaction_s: float = 0.0
    #: OTLP log records received before the cutoff, removed.
    log_records: int = 0


def parse_age(text_value: str) -> float:
    """``30d``, ``12h``, ``90m``, ``45s`` or a number of days, as seconds."""
    value = text_value.strip().lower()
    units = {"d": DAY_S, "h": 3600.0, "m": 60.0, "s": 1.0}
    try:
        if value and value[-1] in units:
            seconds = float(value[:-1]) * units[value[-1]]
        else:
            seconds = float(value) * DAY_S
    except ValueError:
        raise ValueError(f"expected an age such as 30d, 12h or 90m, got {text_value!r}") from None
    if seconds <= 0:
        raise ValueError(f"the age must be positive, got {text_value!r}")
    return seconds


def _in_list(connection: Connection, column: str, ids: Sequence[int]) -> tuple[str, Any]:
    if connection.dialect.name == "postgresql":
        return f"{column} = ANY(%s)", (list(ids),)
    return f"{column} IN ({', '.join('?' * len(ids))})", tuple(ids)


def _remove_runs(
    connection: Connection, candidates: Sequence[Any], cutoff: float
) -> tuple[int, int]:
    """Remove the ``candidates`` (id, trace id) still older than ``cutoff``: (runs, reports)."""
    postgres = connection.dialect.name == "postgresql"
    mark = "%s" if postgres else "?"
    if postgres:
        lock_traces(connection, [trace_id for _, trace_id in candidates])
    where, params = _in_list(connection, "id", [run_id for run_id, _ in candidates])
    ids = list(
        connection.exec_driver_sql(
            f"SELECT id FROM runs WHERE {where} AND last_seen < {mark}", (*params, cutoff)
        ).scalars()
    )
    if not ids:
        return 0, 0
    where, params = _in_list(connection, "run_id", ids)
    reports = list(
        connection.exec_driver_sql(
            f"SELECT {', '.join(COUNTED_COLUMNS)} FROM reports WHERE {where}", params
        )
    )
    count_journeys(connection, reports, [])
    connection.exec_driver_sql(f"DELETE FROM reports WHERE {where}", params)
    for table in RUN_TABLES:
        connection.exec_driver_sql(f"DELETE FROM {table} WHERE {where}", params)
    where, params = _in_list(connection, "id", ids)
    connection.exec_driver_sql(f"DELETE FROM runs WHERE {where}", params)
    return len(ids), len(reports)


def prune(
    engine: Engine,
    cutoff: float,
    *,
    batch_runs: int = 200,
    writer: contextlib.AbstractContextManager[Any] | None = None,
    pause_s: float = 0.0,
    whole_ranges: bool = True,
) -> PruneOutcome:
    """Remove every run whose newest span is older than ``cutoff`` (epoch seconds),
    ``batch_runs`` runs per transaction. ``writer`` is held around each batch (the
    store's SQLite writer lock, when pruning inside a collector). On PostgreSQL, ranges
    of run ids all past the cutoff are detached and dropped whole first, unless
    ``whole_ranges`` is false (the benchmark's comparison)."""
    outcome = PruneOutcome()
    mark = "%s" if engine.dialect.name == "postgresql" else "?"
    # Ranges of runs all past the cutoff go whole first; the rest go row by row.
    if whole_ranges:
        with writer or contextlib.nullcontext():
            detached = detach_expired_partitions(engine, cutoff)
        outcome.partitions_detached = detached.partitions
        outcome.runs, outcome.reports = detached.runs, detached.reports
        outcome.longest_transaction_s = detached.longest_transaction_s
    after = 0
    while True:
        with engine.connect() as connection:
            candidates = connection.exec_driver_sql(
                f"SELECT id, trace_id FROM runs WHERE last_seen < {mark} AND id > {mark} "
                f"ORDER BY id LIMIT {int(batch_runs)}",
                (cutoff, after),
            ).fetchall()
        if not candidates:
            break
        after = candidates[-1][0]
        for batch in chunks(candidates, batch_runs):
            with writer or contextlib.nullcontext(), engine.begin() as connection:
                started = time.perf_counter()
                runs, reports = _remove_runs(connection, batch, cutoff)
            took = time.perf_counter() - started
            outcome.longest_transaction_s = max(outcome.longest_transaction_s, took)
            outcome.runs += runs
            outcome.reports += reports
            outcome.batches += 1
            if pause_s:
                time.sleep(pause_s)
    outcome.log_records = _remove_log_records(engine, cutoff, batch_runs, writer, pause_s)
    if engine.dialect.name == "postgresql":
        from ctxledger_collector.storage.partitions import drop_empty_partitions

        outcome.partitions_dropped = drop_empty_partitions(engine)
    return outcome


def _remove_log_records(
    engine: Engine,
    cutoff: float,
    batch: int,
    writer: contextlib.AbstractContextManager[Any] | None,
    pause_s: float,
) -> int:
    """Remove the log records the collector received before ``cutoff``, ``batch`` per
    transaction (by when they arrived: a record's own time may be missing or wrong)."""
    mark = "%s" if engine.dialect.name == "postgresql" else "?"
    removed = 0
    while True:
        with writer or contextlib.nullcontext(), engine.begin() as connection:
            gone = connection.exec_driver_sql(
                "DELETE FROM log_records WHERE record_key IN (SELECT record_key FROM "
                f"log_records WHERE received_at < {mark} LIMIT {int(batch)})",
                (cutoff,),
            ).rowcount
        removed += gone
        if gone < batch:
            return removed
        if pause_s:
            time.sleep(pause_s)


def retention_cutoff(retention_days: float | None, now: float | None = None) -> float | None:
    """The cutoff a retention of ``retention_days`` means now (None: keep everything)."""
    if not retention_days:
        return None
    return (time.time() if now is None else now) - retention_days * DAY_S
