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
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import Connection, Engine, text

from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.journey_counts import JOURNEY_KEY, JOURNEY_SUMS, rebuild_counts
from ctxledger_collector.storage.partitions import ensure_ahead, partitions
from ctxledger_collector.storage.retention import parse_age, prune
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
            # old runs are dropped whole first, the old runs beside new ones go row by row.
            whole = "expired partitions whole"
            assert (whole in done.stdout) if postgres else ("in 4 batches" in done.stdout)
            assert _stored_traces(engine) == new
            assert _orphans(engine) == 0
            assert 0 < _rows(engine, "reports") < reports_before
            assert_counters_match_reports(engine)
            if postgres:
                # The old runs filled the first partitions: they are gone, not emptied.
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


def _counter_rows(connection: Connection) -> tuple[list[Any], list[Any]]:
    """Every counter that counts something (retention moves counters down to 0 and
    leaves their rows; a recount has none), and the runs' own counters."""
    counted = ", ".join((*JOURNEY_KEY, *JOURNEY_SUMS))
    nonzero = " OR ".join(f"{name} <> 0" for name in JOURNEY_SUMS)
    journeys = connection.exec_driver_sql(
        f"SELECT {counted} FROM journey_counts WHERE {nonzero}"
    ).all()
    runs = connection.exec_driver_sql("SELECT * FROM run_journey_counts").all()
    return sorted(journeys), sorted(runs)


def _recounted(engine: Engine) -> tuple[list[Any], list[Any]]:
    """What ``rebuild_counts`` makes of the reports stored (rolled back afterwards)."""
    with engine.connect() as connection, connection.begin() as transaction:
        rebuild_counts(connection)
        counted = _counter_rows(connection)
        transaction.rollback()
    return counted


def test_postgres_detaches_and_drops_a_range_of_old_runs_whole(postgres_url: str) -> None:
    """Runs numbered into three partitions: the middle one holds only old runs and is
    detached and dropped (the counters moved first, its runs and their rows of the other
    tables deleted); the old runs beside new ones in the partitions below and above go
    row by row, and their partitions stay."""
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
                before = {t: partitions(connection, t) for t in ("measurements", "reports")}
            # One run id per run, in the order sent (the layout above relies on it).
            assert numbered == sent
            reports_before = _rows(engine, "reports")
            twin = f"reports_r{low}"
            assert twin in [p.name for p in before["reports"]]

            outcome = prune(engine, time.time() - 30 * 86_400, batch_runs=10)

            assert outcome.partitions_detached == [middle.name, twin]
            assert outcome.runs == len(old_ids)
            assert outcome.batches >= 1  # the old runs beside new ones
            assert _stored_traces(engine) == {t for i, t in sent.items() if i not in old_ids}
            with engine.connect() as connection:
                after = {
                    t: [p.name for p in partitions(connection, t)]
                    for t in ("measurements", "reports")
                }
                tables = set(
                    connection.exec_driver_sql(
                        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                    ).scalars()
                )
            # Gone, not left detached; every other partition still attached but those
            # below every run id handed out (none of them held a run).
            assert all(
                p.high <= 1
                for t in before.values()
                for p in t
                if p.name in outcome.partitions_dropped
            )
            gone = {middle.name, twin, *outcome.partitions_dropped}
            for table, names in after.items():  # (sweeps may add partitions ahead meanwhile)
                kept = [p.name for p in before[table] if p.name not in gone]
                assert [n for n in names if n in {p.name for p in before[table]}] == kept
            assert not gone & tables
            assert _orphans(engine) == 0
            assert 0 < _rows(engine, "reports") < reports_before
            assert outcome.reports == reports_before - _rows(engine, "reports")
            assert_counters_match_reports(engine)
            with engine.connect() as connection:
                counters = _counter_rows(connection)
            assert counters[0] and counters == _recounted(engine)
            # The collector keeps ingesting into what remains.
            again = _send_run(http, live.url, 0, "after")
            assert again in _stored_traces(engine)
        finally:
            engine.dispose()


def _detach_waits(watcher: psycopg.Connection[Any]) -> bool:
    """Whether retention waits for the parents' locks now."""
    found = watcher.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        "AND query LIKE 'LOCK TABLE ONLY measurements%'"
    ).fetchone()
    return found == (1,)


def test_detaching_in_a_lock_cycle_with_ingest_gives_way_to_the_ingest(postgres_url: str) -> None:
    """A writer holds ``reports`` (as an ingest that wrote its reports) and then needs
    ``measurements``, which retention holds while it waits for ``reports``: a lock
    cycle. Retention gives up its try before PostgreSQL's deadlock check would cancel
    either; the writer goes on, and the next try detaches the range."""
    with LiveCollector(_settings(postgres_url)) as live, httpx.Client(timeout=30) as http:
        old = {_send_run(http, live.url, 60, f"old{n}") for n in range(PARTITION_RUNS + 1)}
    engine = make_engine(postgres_url)
    libpq = postgres_url.replace("postgresql+psycopg://", "postgresql://", 1)
    try:
        with psycopg.connect(libpq) as writer:
            writer.execute("SET statement_timeout = '20s'")  # a hang fails, not blocks
            writer.execute("LOCK TABLE reports IN ROW EXCLUSIVE MODE")
            outcomes: list[Any] = []
            pruner = threading.Thread(
                target=lambda: outcomes.append(prune(engine, time.time() - 30 * 86_400))
            )
            pruner.start()
            with psycopg.connect(libpq, autocommit=True) as watcher:
                while not _detach_waits(watcher):
                    assert pruner.is_alive()
                    time.sleep(0.01)
            # Retention holds measurements and waits for reports: the writer's turn.
            writer.execute("SELECT count(*) FROM measurements").fetchone()
            writer.commit()
            pruner.join(timeout=60)
        [outcome] = outcomes
        assert outcome.partitions_detached[:2] == ["measurements_r1", "reports_r1"]
        assert _stored_traces(engine).isdisjoint(old) and _stored_traces(engine) == set()
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
            if database_url.startswith("postgresql"):
                # The first ranges (made ahead at start) held only old runs: dropped whole
                # while ingest wrote into the overflow partition, neither waiting forever.
                assert outcome.partitions_detached[:2] == ["measurements_r1", "reports_r1"]
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


def test_postgres_partitions_ahead_yield_to_a_lock_cycle(postgres_engine: Engine) -> None:
    """A transaction writes reports, then measurements (as retention's row-by-row pass
    does) while partitions are created ahead: creating them gives up within its lock wait
    and tries again, the writer finishes without a deadlock error, and the partitions come."""
    engine = postgres_engine
    with engine.connect() as connection:
        before = [p.name for p in partitions(connection, "measurements")]
    writer = engine.connect()
    transaction = writer.begin()
    writer.exec_driver_sql("DELETE FROM reports WHERE run_id = -1")
    created: list[str] = []
    failures: list[BaseException] = []

    def create() -> None:
        try:
            created.extend(ensure_ahead(engine, 100_000, ahead=len(before) + 3))
        except BaseException as error:  # reported below
            failures.append(error)

    creator = threading.Thread(target=create)
    creator.start()
    time.sleep(0.1)  # the creator holds measurements and waits for reports
    writer.exec_driver_sql("DELETE FROM measurements WHERE run_id = -1")
    transaction.commit()
    writer.close()
    creator.join(timeout=30)
    assert not creator.is_alive()
    assert failures == []
    with engine.connect() as connection:
        after = [p.name for p in partitions(connection, "measurements")]
    assert created and set(after) - set(before) == {n for n in created if n in after}
    assert len(after) > len(before)


def test_prune_removes_the_log_records_received_before_the_cutoff(database_url: str) -> None:
    """Log records go by when the collector received them, in batches; newer ones stay."""
    from tests.collector.test_logs_ingest import _proto_body, _proto_record

    with LiveCollector(_settings(database_url)) as collector, collector.client() as http:
        body = _proto_body([_proto_record(i) for i in range(7)])
        answer = http.post(
            "/v1/logs", content=body, headers={"content-type": "application/x-protobuf"}
        )
        assert answer.status_code == 200, answer.text
    engine = make_engine(database_url)
    try:
        old = ("toolu_0", "toolu_1", "toolu_2", "toolu_3", "toolu_4")
        with engine.begin() as connection:
            for call in old:
                connection.execute(
                    text("UPDATE log_records SET received_at = :at WHERE call_id = :call"),
                    {"at": time.time() - 10 * 86_400, "call": call},
                )
        outcome = prune(engine, time.time() - 86_400, batch_runs=2)
        assert outcome.log_records == len(old)
        with engine.connect() as connection:
            kept = set(connection.exec_driver_sql("SELECT call_id FROM log_records").scalars())
        assert kept == {"toolu_5", "toolu_6"}
    finally:
        engine.dispose()
