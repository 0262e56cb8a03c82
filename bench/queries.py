"""The dashboard's API calls at a million measurements, on SQLite and PostgreSQL.

Run from the repository root (``make bench`` runs the default)::

    .venv/bin/python bench/queries.py                      # 1,000,000 measurements, both databases
    .venv/bin/python bench/queries.py --only sqlite --reps 10
    .venv/bin/python bench/queries.py --measurements 200000   # a quicker, smaller run

It fills a database directly (not through the collector): runs generated and judged by
``benchkit.query_data`` with the collector's own row builders, written with sqlite3
``executemany`` into a migrated SQLite file, then copied with psycopg ``COPY`` into a
fresh, migrated PostgreSQL database (``VACUUM ANALYZE`` after, as autovacuum would).
Then, per database, it starts ``ctxledger serve`` on it and times the HTTP calls the
dashboard's pages make (``benchkit.dashboard_calls``): one untimed round, then
``--reps`` rounds, round robin. It prints p50, p95 and max per call and what each
answered, the fill time and the database size.

This is a benchmark: it prints numbers and asserts nothing about them.
"""

from __future__ import annotations

import argparse
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from benchkit import dashboard_calls, query_data, raw_fill
from benchkit.api_timing import Timing, time_calls
from benchkit.collector_process import child_env, cli, collector
from benchkit.databases import DATABASES, fresh_postgres_raw, pg_admin_url_from_env
from benchkit.query_rows import RunRows
from benchkit.tables import print_table

GOAL_MS = 300.0


def _migrate(url: str) -> None:
    done = subprocess.run(
        cli("db", "upgrade", "--database-url", url),
        env=child_env(url),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"ctxledger db upgrade failed:\n{done.stderr[-3000:]}")


class _Closest:
    """Remembers the run shaped most like ``steps`` steps of ``per_step`` results."""

    def __init__(self, steps: int = 50, per_step: int = 20) -> None:
        self.steps, self.per_step = steps, per_step
        self.best: RunRows | None = None

    def _distance(self, rows: RunRows) -> int:
        return abs(rows.steps - self.steps) + abs(rows.results_per_step - self.per_step)

    def watch(self, runs: Iterator[RunRows]) -> Iterator[RunRows]:
        for rows in runs:
            if self.best is None or self._distance(rows) < self._distance(self.best):
                self.best = rows
            yield rows

    def run(self) -> tuple[str, str]:
        assert self.best is not None
        best = self.best
        shape = f"{best.steps} steps x {best.results_per_step}, {len(best.reports):,} journeys"
        return best.run[1], shape


def _fill(path: Path, measurements: int, closest: _Closest) -> raw_fill.FillStats:
    now = time.time()

    def progress(stats: raw_fill.FillStats) -> None:
        print(f"  ... {stats.measurements:,} measurements", file=sys.stderr, flush=True)

    _migrate(f"sqlite:///{path}")
    runs = closest.watch(query_data.runs(measurements, now))
    return raw_fill.fill_sqlite(path, runs, progress)


@contextmanager
def _postgres(admin_url: str, sqlite_path: Path) -> Iterator[tuple[str, float]]:
    with fresh_postgres_raw(admin_url) as libpq_url:
        url = libpq_url.replace("postgresql://", "postgresql+psycopg://", 1)
        started = time.perf_counter()
        _migrate(url)
        raw_fill.copy_sqlite_to_postgres(sqlite_path, libpq_url)
        yield url, time.perf_counter() - started


def _measure(url: str, workdir: Path, name: str, reps: int, run: tuple[str, str]) -> list[Timing]:
    with (
        collector(url, workdir / f"{name}.log") as running,
        httpx.Client(base_url=running.base_url, timeout=120) as http,
    ):
        calls = dashboard_calls.all_calls(http, *run)

        def progress(done: int, total: int) -> None:
            print(f"  {name}: round {done}/{total}", file=sys.stderr, flush=True)

        return time_calls(http, calls, reps, progress)


def _print(name: str, timings: list[Timing], fill: str, size: int) -> None:
    print(f"### {name}: {fill}, {size / 2**20:,.0f} MiB on disk\n")
    rows = []
    for t in timings:
        p95 = t.ms(0.95)
        flag = "" if p95 < GOAL_MS else " **over**"
        status = "" if t.status == 200 else f" (HTTP {t.status})"
        rows.append(
            [
                t.call.name + status,
                f"{t.ms(0.5):,.0f}",
                f"{p95:,.0f}{flag}",
                f"{t.max_ms:,.0f}",
                t.rows,
            ]
        )
    print_table(["call", "p50 ms", "p95 ms", "max ms", "rows"], rows)
    over = sum(1 for t in timings if t.ms(0.95) >= GOAL_MS)
    print(f"{len(timings) - over} of {len(timings)} calls under {GOAL_MS:.0f} ms at p95\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measurements", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=20, help="timed rounds per call")
    parser.add_argument("--only", choices=DATABASES, action="append")
    parser.add_argument("--pg-admin-url", default=pg_admin_url_from_env())
    args = parser.parse_args(argv)
    databases = args.only or list(DATABASES)
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{args.measurements:,} measurements, {args.reps} timed rounds per call\n"
    )
    with tempfile.TemporaryDirectory(prefix="ctxledger-queries-") as tmp:
        workdir = Path(tmp)
        path = workdir / "queries.db"
        closest = _Closest()
        stats = _fill(path, args.measurements, closest)
        fill = (
            f"{stats.runs:,} runs, {stats.measurements:,} measurements, {stats.reports:,} reports; "
            f"built in {stats.build_s:.0f} s, written in {stats.write_s:.0f} s, "
            f"counters recounted in {stats.count_s:.1f} s"
        )
        print(f"filled: {fill}\n")
        run = closest.run()
        if "sqlite" in databases:
            timings = _measure(f"sqlite:///{path}", workdir, "sqlite", args.reps, run)
            written = f"written and counted in {stats.write_s + stats.count_s:.0f} s"
            _print("SQLite", timings, written, raw_fill.sqlite_bytes(path))
        if "postgresql" in databases:
            with _postgres(args.pg_admin_url, path) as (url, seconds):
                timings = _measure(url, workdir, "postgresql", args.reps, run)
                size = raw_fill.postgres_bytes(url.replace("+psycopg", ""))
                _print("PostgreSQL", timings, f"copied from SQLite in {seconds:.0f} s", size)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
