"""Filling a migrated collector database directly with the raw driver: sqlite3
``executemany`` from the generated runs, the journey counters recounted from the
reports (``journey_counts.rebuild_counts``, what migration 0004 does), then psycopg
``COPY`` of the same rows from the SQLite file into PostgreSQL (so both hold identical
data)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from benchkit.query_rows import RunRows
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.journey_counts import (
    JOURNEY_KEY,
    JOURNEY_SUMS,
    RUN_KEY,
    rebuild_counts,
)
from ctxledger_collector.storage.rows import (
    CALL_COLUMNS,
    MANIFEST_COLUMNS,
    MEASUREMENT_COLUMNS,
    REPORT_COLUMNS,
    RUN_COLUMNS,
)
from ctxledger_collector.storage.string_lists import STRING_LIST_COLUMNS

TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": ("id", *RUN_COLUMNS),
    "measurements": MEASUREMENT_COLUMNS,
    "manifests": MANIFEST_COLUMNS,
    "calls": CALL_COLUMNS,
    "reports": REPORT_COLUMNS,
    "string_lists": STRING_LIST_COLUMNS,
}
COUNTER_COLUMNS: dict[str, tuple[str, ...]] = {
    "journey_counts": (*JOURNEY_KEY, *JOURNEY_SUMS),
    "run_journey_counts": (*RUN_KEY, "journeys"),
}
_COMMIT_EVERY = 200  # runs


@dataclass
class FillStats:
    runs: int = 0
    measurements: int = 0
    reports: int = 0
    build_s: float = 0.0
    write_s: float = 0.0
    count_s: float = 0.0


def _insert(table: str, verb: str = "INSERT") -> str:
    columns = TABLE_COLUMNS[table]
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def fill_sqlite(
    path: Path, runs: Iterable[RunRows], progress: Callable[[FillStats], None] | None = None
) -> FillStats:
    """Write every run into the migrated SQLite file at ``path``."""
    stats = FillStats()
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=OFF")
        connection.execute("PRAGMA cache_size=-262144")  # 256 MiB while filling
        connection.execute("BEGIN")
        started = time.perf_counter()
        for rows in runs:
            built = time.perf_counter()
            stats.build_s += built - started
            connection.execute(_insert("runs"), rows.run)
            # Runs share lists (the same field names, say): each is stored once.
            connection.executemany(_insert("string_lists", "INSERT OR IGNORE"), rows.string_lists)
            connection.executemany(_insert("measurements"), rows.measurements)
            connection.executemany(_insert("manifests"), rows.manifests)
            connection.executemany(_insert("calls"), rows.calls)
            connection.executemany(_insert("reports"), rows.reports)
            stats.runs += 1
            stats.measurements += len(rows.measurements)
            stats.reports += len(rows.reports)
            if stats.runs % _COMMIT_EVERY == 0:
                connection.execute("COMMIT")
                connection.execute("BEGIN")
                if progress is not None:
                    progress(stats)
            started = time.perf_counter()
            stats.write_s += started - built
        connection.execute("COMMIT")
    finally:
        connection.close()
    started = time.perf_counter()
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as counting:
            rebuild_counts(counting)
    finally:
        engine.dispose()
    with sqlite3.connect(path) as checkpoint:
        checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    stats.count_s = time.perf_counter() - started
    return stats


def copy_sqlite_to_postgres(sqlite_path: Path, pg_url: str) -> float:
    """COPY every filled table from the SQLite file into the migrated PostgreSQL
    database (libpq URL), then bring the run id sequence and the planner's statistics up
    to date (``VACUUM ANALYZE``, as autovacuum would soon after a bulk load). Seconds."""
    import psycopg

    started = time.perf_counter()
    source = sqlite3.connect(sqlite_path)
    try:
        with psycopg.connect(pg_url) as target:
            for table, columns in {**TABLE_COLUMNS, **COUNTER_COLUMNS}.items():
                names = ", ".join(columns)
                rows = source.execute(f"SELECT {names} FROM {table}")
                copy_in = f"COPY {table} ({names}) FROM STDIN"
                with target.cursor() as cursor, cursor.copy(copy_in) as copy:
                    for row in rows:
                        copy.write_row(row)
            target.execute("SELECT setval('runs_id_seq', (SELECT max(id) FROM runs))")
            target.commit()
        with psycopg.connect(pg_url, autocommit=True) as target:
            target.execute("VACUUM ANALYZE")
    finally:
        source.close()
    return time.perf_counter() - started


def sqlite_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def postgres_bytes(pg_url: str) -> int:
    import psycopg

    with psycopg.connect(pg_url) as connection:
        row = connection.execute("SELECT pg_database_size(current_database())").fetchone()
    return int(row[0]) if row else 0
