"""New PostgreSQL tables and partitions get their first statistics from the collector
within seconds, not when autovacuum comes round; a table locked by another session is
left for the next round; SQLite is left alone."""

from __future__ import annotations

import time

from sqlalchemy import Engine

import ctxledger
from ctxledger import semconv as sc
from ctxledger.verdicts import Tolerances
from ctxledger_collector.judge.store import Store
from ctxledger_collector.ops.settings import Settings
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from ctxledger_collector.storage.table_statistics import analyse_new_tables, never_analysed_tables
from tests.collector.live_collector import LiveCollector
from tests.collector.test_lookup_plans import run_batch


def waiting_for_statistics(engine: Engine, expected: set[str]) -> list[str]:
    """The never-analysed tables once ``expected`` are among them (PostgreSQL publishes
    a session's row counts up to a second after its commit)."""
    deadline = time.monotonic() + 10.0
    while True:
        found = never_analysed_tables(engine)
        if expected <= set(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def last_analyses(engine: Engine, tables: list[str]) -> dict[str, object]:
    with engine.connect() as connection:
        rows = connection.exec_driver_sql(
            "SELECT relname, last_analyze FROM pg_stat_user_tables WHERE relname = ANY(%s)",
            (tables,),
        )
        return {str(name): analysed for name, analysed in rows}


def test_tables_that_grew_without_statistics_are_analysed_once(postgres_engine: Engine) -> None:
    store = Store(postgres_engine, Tolerances())
    for run in range(10):  # 800 measurements, 200 reports
        store.ingest(run_batch(run))
    found = waiting_for_statistics(postgres_engine, {"measurements_r1"})
    assert "measurements_r1" in found and "runs" not in found  # 10 runs: under the bar
    assert analyse_new_tables(postgres_engine) == found
    assert all(analysed is not None for analysed in last_analyses(postgres_engine, found).values())
    assert never_analysed_tables(postgres_engine) == []
    assert analyse_new_tables(postgres_engine) == []  # autovacuum's from now on


def test_a_table_another_session_has_locked_is_left_for_the_next_round(
    postgres_engine: Engine,
) -> None:
    store = Store(postgres_engine, Tolerances())
    for run in range(10):
        store.ingest(run_batch(run))
    found = waiting_for_statistics(postgres_engine, {"measurements_r1"})
    with postgres_engine.connect() as holder:  # as a VACUUM or ANALYZE of its own would
        holder.exec_driver_sql("BEGIN")
        holder.exec_driver_sql("LOCK TABLE measurements_r1 IN SHARE UPDATE EXCLUSIVE MODE")
        analysed = analyse_new_tables(postgres_engine)
        holder.exec_driver_sql("ROLLBACK")
    assert "measurements_r1" not in analysed
    assert sorted([*analysed, "measurements_r1"]) == sorted(found)
    assert analyse_new_tables(postgres_engine) == ["measurements_r1"]


def test_sqlite_is_left_alone(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/ctxledger.db"
    upgrade(url)
    engine = make_engine(url)
    try:
        Store(engine, Tolerances()).ingest(run_batch(1))
        assert analyse_new_tables(engine) == []
    finally:
        engine.dispose()


def test_a_serving_collector_gives_its_new_partitions_statistics(postgres_url: str) -> None:
    settings = Settings(database_url=postgres_url, auto_migrate=True, sweep_interval_s=3600.0)
    with LiveCollector(settings) as collector:
        client = ctxledger.configure(
            service_name="statistics", endpoint=collector.url, ledger="off"
        )
        try:
            stages = (sc.STAGE_ORIGINAL, sc.STAGE_SERIALIZED, sc.STAGE_ASSEMBLED, sc.STAGE_SENT)
            for n in range(150):  # 600 measurements of 150 journeys
                for stage in stages:
                    ctxledger.measure(stage, "x" * 100, tool_call_id=f"call_{n}")
            assert ctxledger.flush() and client.stats().dropped == 0
        finally:
            client.shutdown()
            ctxledger.configure(service_name="idle", export=False, ledger="off")
        engine = make_engine(postgres_url)
        try:
            deadline = time.monotonic() + 30.0
            analysed = last_analyses(engine, ["measurements_r1"])
            while analysed.get("measurements_r1") is None and time.monotonic() < deadline:
                time.sleep(0.5)
                analysed = last_analyses(engine, ["measurements_r1"])
            # last_analyze: an ANALYZE of the collector's (autovacuum's is last_autoanalyze)
            assert analysed["measurements_r1"] is not None
        finally:
            engine.dispose()
