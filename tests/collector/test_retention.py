"""Retention on SQLite and PostgreSQL: runs older than the cutoff go with everything
stored for them, newer ones stay whole, the counters match what remains, PostgreSQL's
partitions are created ahead of the runs and the emptied ones dropped, and pruning
while a collector ingests loses nothing new.

Spans travel to a real collector over HTTP; ``ctxledger db prune`` runs as the real
command."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, text

from ctxledger_collector.database import make_engine
from ctxledger_collector.partitions import partitions
from ctxledger_collector.retention import parse_age, prune
from ctxledger_collector.settings import Settings
from tests.collector.journey_counting import assert_counters_match_reports
from tests.collector.live_collector import LiveCollector
from tests.collector.otlp_payloads import journey_spans, new_trace_id, proto_body

DAY_NS = 86_400 * 10**9
ROOT = Path(__file__).resolve().parents[2]
#: Tiny partitions, so a handful of runs rolls over several of them.
PARTITION_RUNS = 3


def _send_run(http: httpx.Client, url: str, age_days: float, call: str) -> str:
    trace_id = new_trace_id()
    start = time.time_ns() - int(age_days * DAY_NS)
    body = proto_body(trace_id, journey_spans(call, f"req-{call}", start_ns=start))
    answer = http.post(
        f"{url}/v1/traces", content=body, headers={"content-type": "application/x-protobuf"}
    )
    assert answer.status_code == 200, answer.text
    return trace_id.hex()


def _stored_traces(engine: Engine) -> set[str]:
    with engine.connect() as connection:
        return set(connection.exec_driver_sql("SELECT trace_id FROM runs").scalars())


def _rows(engine: Engine, table: str) -> int:
    with engine.connect() as connection:
        return int(connection.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def _orphans(engine: Engine) -> int:
    """Rows of the run-keyed tables whose run is gone."""
    tables = ("measurements", "manifests", "reports", "calls", "run_journey_counts")
    with engine.connect() as connection:
        return sum(
            int(
                connection.execute(
                    text(f"SELECT count(*) FROM {t} WHERE run_id NOT IN (SELECT id FROM runs)")
                ).scalar_one()
            )
            for t in tables
        )


def _settings(database_url: str, sweep_interval_s: float = 3600.0) -> Settings:
    return Settings(
        database_url=database_url,
        auto_migrate=True,
        sweep_interval_s=sweep_interval_s,
        partition_runs=PARTITION_RUNS,
    )


def _overflowed(engine: Engine) -> int:
    return _rows(engine, "measurements_overflow") + _rows(engine, "reports_overflow")


def test_ages() -> None:
    assert parse_age("30d") == 30 * 86_400 and parse_age("12h") == 43_200
    assert parse_age("90m") == 5_400 and parse_age("7") == 7 * 86_400
    for bad in ("", "-1d", "soon", "0"):
        with pytest.raises(ValueError):
            parse_age(bad)


def test_prune_removes_old_runs_and_keeps_new_ones(database_url: str) -> None:
    postgres = database_url.startswith("postgresql")
    # Sweeps often enough that the collector keeps partitions ahead of these runs.
    settings = _settings(database_url, sweep_interval_s=0.1)
    with LiveCollector(settings) as live, httpx.Client(timeout=30) as http:
        old, new = set(), set()
        for n in range(11):
            if n < 7:
                old.add(_send_run(http, live.url, 40 + n, f"old{n}"))
            else:
                new.add(_send_run(http, live.url, n * 0.1, f"new{n}"))
            time.sleep(0.25 if postgres else 0)
        engine = make_engine(database_url)
        try:
            assert _stored_traces(engine) == old | new
            if postgres:
                with engine.connect() as connection:
                    before = [p.name for p in partitions(connection, "measurements")]
                # 11 runs in partitions of 3, created ahead of them: none overflowed.
                assert len(before) >= 5 and _overflowed(engine) == 0
            reports_before = _rows(engine, "reports")
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ctxledger_cli",
                    "db",
                    "prune",
                    "--older-than",
                    "30d",
                    "--database-url",
                    database_url,
                    "--batch-runs",
                    "2",
                ],
                env={
                    **os.environ,
                    "PYTHONPATH": os.pathsep.join(
                        str(ROOT / d) for d in ("sdk", "collector", "cli")
                    ),
                },
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            assert "removed 7 runs" in done.stdout
            # SQLite: row by row, 2 runs a batch. PostgreSQL: the partitions holding only
            # old runs are emptied whole first, the old runs beside new ones go row by row.
            assert ("emptied" in done.stdout) if postgres else ("in 4 batches" in done.stdout)
            assert _stored_traces(engine) == new
            assert _orphans(engine) == 0
            assert 0 < _rows(engine, "reports") < reports_before
            assert_counters_match_reports(engine)
            if postgres:
                # The old runs filled the first partitions: they are gone, not emptied.
                assert "dropped" in done.stdout
                with engine.connect() as connection:
                    after = partitions(connection, "measurements")
                    lowest = connection.exec_driver_sql("SELECT min(id) FROM runs").scalar()
                assert after[0].high > lowest and len(after) < len(before)
            # The API answers from what remains, and the collector keeps ingesting.
            listed = http.get(f"{live.url}/api/v1/runs", params={"limit": 100}).json()
            assert {r["trace_id"] for r in listed["runs"]} == new
            again = _send_run(http, live.url, 0, "after")
            assert again in _stored_traces(engine)
        finally:
            engine.dispose()


def test_postgres_empties_a_range_of_old_runs_whole(postgres_url: str) -> None:
    """Runs numbered into three partitions: the middle one holds only old runs and is
    emptied whole (its measurements and reports truncated, its runs and their rows of the
    other tables deleted, the counters moved); the old runs beside new ones in the
    partitions below and above go row by row."""
    settings = _settings(postgres_url, sweep_interval_s=0.1)
    with LiveCollector(settings) as live, httpx.Client(timeout=30) as http:
        engine = make_engine(postgres_url)
        try:
            with engine.connect() as connection:
                layout = partitions(connection, "measurements")
            middle = next(p for p in layout if p.low is not None and p.low <= 4 < p.high)
            low = middle.low
            assert low is not None
            # The middle range old; one old run below it (beside the new run 1), one above.
            old_ids = {*range(low, middle.high), low - 1, middle.high}
            sent = {}
            for run_id in range(1, middle.high + 3):
                age = 40.0 if run_id in old_ids else 0.1
                sent[run_id] = _send_run(http, live.url, age, f"call{run_id}")
            with engine.connect() as connection:
                numbered = dict(connection.exec_driver_sql("SELECT id, trace_id FROM runs").all())
            # One run id per run, in the order sent (the layout above relies on it).
            assert numbered == sent
            reports_before = _rows(engine, "reports")
            twin = f"reports_r{low}"

            outcome = prune(engine, time.time() - 30 * 86_400, batch_runs=10)

            assert outcome.partitions_emptied == [middle.name, twin]
            assert outcome.runs == len(old_ids)
            assert outcome.batches >= 1  # the old runs beside new ones
            assert _stored_traces(engine) == {t for i, t in sent.items() if i not in old_ids}
            # Run 1 is new and below it: the emptied partitions stay, empty, for now.
            assert _rows(engine, middle.name) == 0 and _rows(engine, twin) == 0
            assert _orphans(engine) == 0
            assert 0 < _rows(engine, "reports") < reports_before
            assert outcome.reports == reports_before - _rows(engine, "reports")
            assert_counters_match_reports(engine)
        finally:
            engine.dispose()


def test_pruning_while_ingesting_loses_nothing_new(database_url: str) -> None:
    with LiveCollector(_settings(database_url)) as live, httpx.Client(timeout=30) as http:
        old = {_send_run(http, live.url, 60, f"old{n}") for n in range(20)}
        sent: list[str] = []
        stop = threading.Event()

        def ingest() -> None:
            with httpx.Client(timeout=30) as client:
                n = 0
                while not stop.is_set() or n < 10:
                    sent.append(_send_run(client, live.url, 0, f"live{n}"))
                    n += 1

        feeder = threading.Thread(target=ingest)
        feeder.start()
        engine = make_engine(database_url)
        try:
            outcome = prune(engine, time.time() - 30 * 86_400, batch_runs=3)
            stop.set()
            feeder.join(timeout=60)
            assert outcome.runs == 20
            stored = _stored_traces(engine)
            assert stored.isdisjoint(old)
            assert stored == set(sent)
            assert _orphans(engine) == 0
            assert_counters_match_reports(engine)
        finally:
            engine.dispose()


def test_the_collector_applies_the_retention_setting(database_url: str) -> None:
    settings = _settings(database_url)
    with LiveCollector(settings) as live, httpx.Client(timeout=30) as http:
        old = _send_run(http, live.url, 10, "old")
        new = _send_run(http, live.url, 1, "new")
    retained = settings.model_copy(update={"retention_days": 5.0})
    with LiveCollector(retained):  # the retention sweep runs once at start
        engine = make_engine(database_url)
        try:
            deadline = time.monotonic() + 20
            while old in _stored_traces(engine):
                assert time.monotonic() < deadline, "the retention sweep never ran"
                time.sleep(0.05)
            assert new in _stored_traces(engine)
            assert_counters_match_reports(engine)
        finally:
            engine.dispose()
