"""Ingest throughput of the collector, stored *and judged*, against the floor, as traces grow.

Run from the repository root (``make bench`` runs the default)::

    .venv/bin/python bench/ingest.py                    # both databases, ~11 min today
    .venv/bin/python bench/ingest.py --quick            # 4,000 spans, traces of 200 and 2,000
    .venv/bin/python bench/ingest.py --only sqlite --spans 10000 --lengths 200,10000

For each database (SQLite: a fresh file; PostgreSQL: a fresh database, migrated and
dropped) and each trace length it starts ``ctxledger serve`` as a subprocess and exports
the same deterministic SDK-shaped spans (``benchkit.workload``) with the stock
``OTLPSpanExporter``, batches of 512 from 2 client threads. The collector answers an
export only once the batch is committed and its journeys judged, so spans/s = spans /
wall time from the first ``export()`` to the last acknowledgement. Afterwards the
stored spans (natural keys), the runs and the reports are compared with what was sent;
a run that lost anything says so in capitals and the script exits 1.

The floor is measured in the same run, without the collector: decoding the same request
bodies and inserting one row per span with the raw driver (``benchkit.floor``). At the
first trace length floor and end to end are measured in ``--pairs`` pairs, one right
after the other, and the pair with the median ratio is reported: on a machine whose
speed drifts, a ratio of two measurements taken minutes apart is mostly drift.

This is a benchmark: it prints numbers and asserts nothing about them.
"""

from __future__ import annotations

import os
import platform
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchkit import cpu_time, floor, verify, workload
from benchkit.collector_process import collector
from benchkit.databases import (
    DATABASES,
    fresh_database,
)
from benchkit.exporting import batches_of, feed, quiet_exporter_logs
from benchkit.growth_pairs import measure_growth
from benchkit.ingest_options import parse_args
from benchkit.ingest_report import (
    Point,
    cpu_split,
    print_end_to_end,
    print_growth,
    print_growth_pairs,
    print_ratios,
)
from benchkit.plot import plot_growth
from benchkit.process_memory import RssSampler
from benchkit.storage_size import stored_bytes
from benchkit.tables import mib


def run_point(
    database: str,
    load: workload.Workload,
    batch: int,
    threads: int,
    workdir: Path,
    pg_admin_url: str,
    workers: int = 1,
    sqlite_synchronous: str = "FULL",
) -> Point:
    name = f"{database}-{load.spans_per_trace}"
    keys = load.span_keys()
    settings = {"CTXLEDGER_SQLITE_SYNCHRONOUS": sqlite_synchronous}
    with (
        fresh_database(database, workdir, name, pg_admin_url) as url,
        collector(url, workdir / f"serve-{name}.log", settings, workers=workers) as running,
    ):
        sampler = RssSampler(running.pid).start()
        cpu_before = cpu_time.snapshot(running.pid)
        result = feed(running.traces_endpoint, batches_of(load.spans, batch), threads, 60.0)
        cpu = cpu_time.between(cpu_before, cpu_time.snapshot(running.pid))
        peak = sampler.stop()
        stored = verify.read_stored(url, running.base_url)
        size = stored_bytes(url)
    sent = list(keys.values())
    completeness = verify.compare(sent, sent, stored, load.traces, load.tool_calls)
    verify.shout_if_lost(f"{database}, traces of {load.spans_per_trace:,}", completeness)
    return Point(
        database,
        load.spans_per_trace,
        len(load.spans),
        load.traces,
        result.seconds,
        peak,
        result.statuses(),
        completeness,
        stored.reports,
        size,
        cpu,
    )


def _stop(signum: int, _frame: object) -> None:
    # Unwind through the ``finally`` blocks: stop the collector, drop the temp databases.
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _stop)
    quiet_exporter_logs()
    args = parse_args(argv)
    databases = (args.only,) if args.only else DATABASES
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs "
        f"(shared: client, collector and database on one machine); batches of {args.batch} "
        f"from {args.threads} client threads, stock OTLPSpanExporter; seed {args.seed}; "
        f"PostgreSQL collector workers: {args.pg_workers}; "
        f"SQLite synchronous={args.sqlite_synchronous}\n"
    )
    started = time.perf_counter()
    loads = [workload.build(max(args.spans, n), n, args.seed) for n in args.lengths]
    print(
        "workloads (built before timing, "
        f"{time.perf_counter() - started:.1f} s): "
        + "; ".join(f"{w.traces:,} runs x {w.spans_per_trace:,} spans" for w in loads)
        + "\n"
    )
    workdir = Path(tempfile.mkdtemp(prefix="ctxledger-ingest-bench-"))
    points: list[Point] = []
    floors: dict[str, float] = {}
    lost = False
    growth: dict[str, list[tuple[Point, Point]]] = {}
    try:
        bodies = floor.request_bodies(batches_of(loads[0].spans, args.batch))

        def point_of(database: str, load: workload.Workload) -> Point:
            nonlocal lost
            point = run_point(
                database,
                load,
                args.batch,
                args.threads,
                workdir,
                args.pg_admin_url,
                workers=args.pg_workers if database == "postgresql" else 1,
                sqlite_synchronous=args.sqlite_synchronous,
            )
            lost |= not point.completeness.complete
            return point

        # Per round at the first length, each database's point: the databases take turns
        # within a round, so their ratio within it is the fair PostgreSQL-vs-SQLite figure.
        rounds: list[dict[str, Point]] = []
        for index, load in enumerate(loads):
            # The first length is measured in pairs, floor then end to end, so both see
            # the same machine, the databases taking turns; the pair with the median
            # ratio is reported.
            pairs: dict[str, list[tuple[float, Point]]] = {d: [] for d in databases}
            for _ in range(args.pairs if index == 0 else 1):
                round_points: dict[str, Point] = {}
                if index == 0:
                    rounds.append(round_points)
                for database in databases:
                    if database == "postgresql" and 0 < args.pg_max_length < load.spans_per_trace:
                        continue
                    floor_s = (
                        floor.floor_seconds(
                            database, bodies, workdir, args.pg_admin_url, args.sqlite_synchronous
                        )
                        if index == 0
                        else 0.0
                    )
                    point = point_of(database, load)
                    pairs[database].append((floor_s, point))
                    round_points[database] = point
                    print(
                        f"  {database:<10} traces of {load.spans_per_trace:>6,}: "
                        f"{point.spans_per_s:>7,.0f} spans/s, peak RSS {mib(point.peak_rss_kib)}, "
                        f"CPU {cpu_split(point)}"
                        + (
                            f"; floor {len(loads[0].spans) / floor_s:,.0f} spans/s, "
                            f"ratio {point.seconds and floor_s / point.seconds:.2f}"
                            if index == 0
                            else ""
                        ),
                        flush=True,
                    )
            for database, measured in pairs.items():
                if not measured:
                    continue
                measured.sort(key=lambda pair: pair[0] / pair[1].seconds)
                floor_s, point = measured[len(measured) // 2]
                points.append(point)
                if index == 0:
                    floors[database] = floor_s
        growth = measure_growth(loads, databases, args, point_of)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print()
    first = [p for p in points if p.trace_spans == loads[0].spans_per_trace]
    print_end_to_end(first, floors, len(loads[0].spans))
    print_growth(points, databases)
    print_growth_pairs(growth)
    print_ratios(points, floors, len(loads[0].spans), databases, growth, rounds)
    if args.plot is not None:
        curves = {
            d: [(p.trace_spans, p.spans_per_s) for p in points if p.database == d]
            for d in databases
        }
        floor_rates = {d: len(loads[0].spans) / s for d, s in floors.items()}
        subtitle = (
            f"{args.spans:,} spans per point (a longer trace is sent alone), batches of "
            f"{args.batch}, {args.threads} client threads, {os.cpu_count()} CPUs"
        )
        if plot_growth(curves, floor_rates, args.plot, subtitle):
            print(f"plot: {args.plot}")
    if lost:
        print("!!! a run did not store and judge everything: see above")
        return 1
    print("every run: all spans stored, every run listed, every tool call judged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
