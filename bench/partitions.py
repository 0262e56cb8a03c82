"""Ingest and query speed on PostgreSQL as partitions roll: rounds of new runs go in,
retention removes the rounds older than ``--keep`` and drops their partitions, and each
round prints spans/s, the query API's latencies and the partitions that exist.

Run from the repository root::

    .venv/bin/python bench/partitions.py                  # 8 rounds of 3,000 spans
    .venv/bin/python bench/partitions.py --rounds 20 --spans 10000 --partition-runs 50
    .venv/bin/python bench/partitions.py --row-by-row     # retention without dropping ranges whole

One ``ctxledger serve`` on a fresh database (``CTXLEDGER_PARTITION_RUNS`` small, so a
round spans several partitions; sweeps every second keep partitions ahead). Each round
builds fresh SDK-shaped runs (``benchkit.workload``, a new seed per round), exports them
with the stock ``OTLPSpanExporter``, times the reports list, the runs list and the
timeline (median of 5 calls each), then prunes with a cutoff between the rounds, as
``CTXLEDGER_RETENTION_DAYS`` would, timing the prune and counting the ranges it
detached and dropped whole and the WAL it wrote (``--row-by-row``: none, every run deleted row by
row, for comparison), the stage and report rows it removed per second, and its longest
transaction: how long ingest could wait on it (a range detached holds both parents for
all of its transaction). Flat columns mean speed does not depend on how much history has
rolled through. This is a benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
from sqlalchemy import Engine

from benchkit import workload
from benchkit.collector_process import collector
from benchkit.databases import fresh_postgres, pg_admin_url_from_env
from benchkit.exporting import batches_of, feed, quiet_exporter_logs
from benchkit.tables import print_table
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.partitions import partitions
from ctxledger_collector.storage.retention import prune


def median_ms(http: httpx.Client, path: str, params: dict[str, str | int]) -> float:
    times = []
    for _ in range(5):
        started = time.perf_counter()
        answer = http.get(path, params=params)
        answer.raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def wal_position(engine: Engine) -> str:
    with engine.connect() as connection:
        return str(connection.exec_driver_sql("SELECT pg_current_wal_lsn()").scalar_one())


def stage_and_report_rows(engine: Engine) -> int:
    """The rows of the two partitioned tables (what retention removes the most of)."""
    with engine.connect() as connection:
        return int(
            connection.exec_driver_sql(
                "SELECT (SELECT count(*) FROM measurements) + (SELECT count(*) FROM reports)"
            ).scalar_one()
        )


def wal_bytes_since(engine: Engine, position: str) -> int:
    """WAL bytes the server wrote since ``position`` (all sessions)."""
    with engine.connect() as connection:
        return int(
            connection.exec_driver_sql(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)", (position,)
            ).scalar_one()
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--spans", type=int, default=3_000, help="spans per round")
    parser.add_argument("--trace-spans", type=int, default=100)
    parser.add_argument("--partition-runs", type=int, default=20)
    parser.add_argument("--keep", type=int, default=2, help="rounds kept by retention")
    parser.add_argument(
        "--row-by-row",
        action="store_true",
        help="retention deletes every run row by row (no range dropped whole)",
    )
    args = parser.parse_args()
    quiet_exporter_logs()
    rows = []
    settings = {
        "CTXLEDGER_PARTITION_RUNS": str(args.partition_runs),
        "CTXLEDGER_SWEEP_INTERVAL_S": "1",
    }
    with (
        tempfile.TemporaryDirectory() as tmp,
        fresh_postgres(pg_admin_url_from_env(), settings) as url,
    ):
        engine = make_engine(url)
        starts: list[float] = []
        with (
            collector(url, Path(tmp) / "serve.log", settings) as live,
            httpx.Client(base_url=live.base_url, timeout=60) as http,
        ):
            for round_number in range(args.rounds):
                # A round's runs take a fraction of a second, so each round is older than the
                # next one's start, the cutoff retention is given.
                spans = workload.build(
                    args.spans, args.trace_spans, seed=1000 + round_number, time_scale=1e-4
                )
                # The round's first span: retention's cutoff when this is the oldest round kept.
                starts.append(min(span.start_time or 0 for span in spans.spans) / 1e9)
                fed = feed(live.traces_endpoint, batches_of(spans.spans, 512), threads=2)
                reports = median_ms(http, "/api/v1/reports", {"limit": 100})
                runs = median_ms(http, "/api/v1/runs", {"limit": 50})
                timeline = median_ms(http, "/api/v1/stats/timeline", {})
                pruned = dropped = emptied = wal = removed = 0
                prune_ms = longest_ms = 0.0
                if round_number >= args.keep:
                    rows_before = stage_and_report_rows(engine)
                    wal_before = wal_position(engine)
                    started = time.perf_counter()
                    outcome = prune(
                        engine,
                        starts[round_number - args.keep + 1],
                        whole_ranges=not args.row_by_row,
                    )
                    prune_ms = (time.perf_counter() - started) * 1000
                    # Includes what the collector wrote meanwhile (its sweeps; no ingest).
                    wal = wal_bytes_since(engine, wal_before)
                    pruned, dropped = outcome.runs, len(outcome.partitions_dropped)
                    emptied = len(outcome.partitions_detached) // 2
                    longest_ms = outcome.longest_transaction_s * 1000
                    removed = rows_before - stage_and_report_rows(engine)
                time.sleep(1.2)  # a sweep: partitions ahead of the next round
                with engine.connect() as connection:
                    count = len(partitions(connection, "measurements"))
                    overflow = connection.exec_driver_sql(
                        "SELECT count(*) FROM measurements_overflow"
                    ).scalar_one()
                rows.append(
                    [
                        str(round_number + 1),
                        f"{len(spans.spans) / fed.seconds:,.0f}",
                        f"{reports:.1f}",
                        f"{runs:.1f}",
                        f"{timeline:.1f}",
                        str(pruned),
                        f"{prune_ms:,.0f}",
                        f"{removed:,}",
                        f"{removed / (prune_ms / 1000):,.0f}" if prune_ms else "-",
                        f"{longest_ms:,.0f}",
                        f"{wal / 1024:,.0f}",
                        str(emptied),
                        str(dropped),
                        str(count),
                        str(overflow),
                        str(len(fed.failed)),
                    ]
                )
        engine.dispose()
        libpq = url.replace("postgresql+psycopg://", "postgresql://", 1)
        with psycopg.connect(libpq) as connection:
            left = connection.execute("SELECT count(*) FROM runs").fetchone()
    print(
        f"{args.rounds} rounds of ~{args.spans} spans, partitions of {args.partition_runs} "
        f"runs, retention keeps {args.keep} rounds"
        + (" (row by row)" if args.row_by_row else "")
        + f"; runs left: {left[0] if left else '?'}"
    )
    print_table(
        [
            "round",
            "ingest spans/s",
            "reports ms",
            "runs ms",
            "timeline ms",
            "runs pruned",
            "prune ms",
            "rows removed",
            "rows/s",
            "longest lock ms",
            "prune WAL KiB",
            "ranges dropped whole",
            "partitions dropped",
            "partitions",
            "overflow rows",
            "failed batches",
        ],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
