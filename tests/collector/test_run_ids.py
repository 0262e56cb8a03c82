"""Run ids: one per trace, handed out in the order traces are first seen, none used up
by the batches that see a trace again (PostgreSQL's partitions are ranges of run ids
made ahead of the runs), and every sighting folded into the run's row."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import select

from ctxledger.verdicts import Measurement, Tolerances
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedMeasurement
from ctxledger_collector.judge.store import Store
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from ctxledger_collector.storage.tables import RUNS


def _batch(
    *sightings: tuple[str, float, str | None, str | None],
) -> DecodedBatch:
    """One measurement per (trace id, end time, agent name, service name)."""
    measurements = [
        DecodedMeasurement(
            Measurement(
                trace,
                f"call_{os.urandom(4).hex()}",
                "original",
                0,
                chars=10,
                span_id=os.urandom(8).hex(),
                observed_at=at,
                agent_name=agent,
            ),
            {},
            service,
        )
        for trace, at, agent, service in sightings
    ]
    return DecodedBatch(measurements=measurements)


def _runs(store: Store) -> dict[str, tuple[int, str | None, str | None, float, float]]:
    with store.engine.connect() as connection:
        rows = connection.execute(
            select(
                RUNS.c.trace_id,
                RUNS.c.id,
                RUNS.c.agent_name,
                RUNS.c.service_name,
                RUNS.c.first_seen,
                RUNS.c.last_seen,
            )
        ).all()
    return {row[0]: tuple(row[1:]) for row in rows}  # type: ignore[misc]


def test_a_run_seen_in_many_batches_uses_one_id(store: Store) -> None:
    long_run, second, third = (os.urandom(16).hex() for _ in range(3))
    store.ingest(_batch((long_run, 100.0, None, None)))
    for n in range(1, 6):
        store.ingest(_batch((long_run, 100.0 + n, None, None)))
    store.ingest(_batch((second, 200.0, "planner", "svc"), (long_run, 50.0, "coder", "svc")))
    store.ingest(_batch((third, 300.0, None, None), (second, 201.0, None, None)))

    runs = _runs(store)
    first_id = runs[long_run][0]
    assert [runs[t][0] for t in (long_run, second, third)] == [
        first_id,
        first_id + 1,
        first_id + 2,
    ]
    # The earliest and latest end times of every sighting; names from whichever named them.
    assert runs[long_run][1:] == ("coder", "svc", 50.0, 105.0)
    assert runs[second][1:] == ("planner", "svc", 200.0, 201.0)
    assert runs[third][1:] == (None, None, 300.0, 300.0)


def test_a_later_sighting_that_names_the_agent_renames_the_run(store: Store) -> None:
    trace = os.urandom(16).hex()
    store.ingest(_batch((trace, 10.0, "first-name", None)))
    store.ingest(_batch((trace, 11.0, "second-name", "svc")))
    store.ingest(_batch((trace, 12.0, None, None)))
    assert _runs(store)[trace][1:3] == ("second-name", "svc")


def test_the_sqlite_file_and_the_postgres_database_agree(database_url: str, tmp_path: Path) -> None:
    """The same sightings give the same runs on either database (ids counted from the
    first, names and times)."""
    reference_url = f"sqlite:///{tmp_path / 'reference.db'}"
    traces = [os.urandom(16).hex() for _ in range(4)]
    batches = [
        _batch((traces[0], 5.0, None, None), (traces[1], 6.0, "a", None)),
        _batch((traces[1], 4.0, None, "svc"), (traces[2], 7.0, "b", "svc")),
        _batch((traces[3], 9.0, None, None), (traces[0], 8.0, "c", None)),
    ]
    results = []
    for url in (database_url, reference_url):
        upgrade(url)
        engine = make_engine(url)
        try:
            store = Store(engine, Tolerances())
            for batch in batches:
                store.ingest(batch)
            runs = _runs(store)
        finally:
            engine.dispose()
        base = min(run[0] for run in runs.values())
        results.append({t: (run[0] - base, *run[1:]) for t, run in runs.items()})
    assert results[0] == results[1]
