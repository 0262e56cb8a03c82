"""The journey counters stay equal to counting the reports, through the real Store on
SQLite and PostgreSQL: random traces in random batches (journeys change verdict, move in
time and disappear as later spans arrive), the grace-period sweep, several agents and
services; and every aggregate read from them (timeline, breakdowns, totals) equals
counting the reports for random filters and time ranges, bucket edges included."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from ctxledger.verdicts import LAYERS, OTHER_LAYER, VERDICTS, Manifest, Measurement
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedManifest, DecodedMeasurement
from ctxledger_collector.judge.store import Store
from ctxledger_collector.query import stats
from ctxledger_collector.query.journey_aggregates import tally
from ctxledger_collector.query.report_filters import ReportFilter
from ctxledger_collector.query.time_slices import Slice, timeline_slices
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.journey_counts import bucket_of, rebuild_counts
from ctxledger_collector.storage.migrate import downgrade, upgrade
from tests.collector.journey_counting import (
    assert_counters_match_reports,
    expected_counters,
    expected_tally,
    report_rows,
    stored_counters,
)
from tests.sdk.test_incremental_judging import NOW, TOLERANCES, batched_traces

Batches = list[tuple[list[Measurement], list[Manifest]]]
AGENTS = (None, "agent-a", "agent-b")
SERVICES = (None, "svc-x", "agent-a")
TOOLS = (None, "search", "grep")
DAY, HOUR = 86_400, 3_600
#: Shifts of the strategy's times (850-990 s) so that journeys straddle minute, hour
#: and day edges, at whole and fractional seconds.
SHIFTS = (0.0, 19_000 * DAY - 900, 300 * HOUR - 930.5, 19_001 * DAY - 960.25, 0.125)


def _url(dialect: str, tmp: pytest.TempPathFactory) -> Iterator[str]:
    if dialect == "sqlite":
        yield f"sqlite:///{tmp.mktemp('counts') / 'ctxledger.db'}"
        return
    from tests.collector.conftest import fresh_postgres_database

    with fresh_postgres_database() as url:
        yield url


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    for url in _url(request.param, tmp_path_factory):
        upgrade(url)
        engine = make_engine(url)
        yield Store(engine, TOLERANCES)
        engine.dispose()


@st.composite
def named_batches(draw: st.DrawFn) -> tuple[Batches, dict[str, str | None], float]:
    """Random batches in fresh traces, with agents per call, a service per trace and
    the times shifted; returns the batches, each trace's service and the shift."""
    batches: Batches = draw(batched_traces())
    shift = draw(st.sampled_from(SHIFTS))
    traces: dict[str, str] = {}
    agents: dict[tuple[str, str], str | None] = {}
    services: dict[str, str | None] = {}

    def fresh(trace_id: str) -> str:
        if trace_id not in traces:
            traces[trace_id] = os.urandom(16).hex()
            services[traces[trace_id]] = draw(st.sampled_from(SERVICES))
        return traces[trace_id]

    def agent(trace_id: str, call_id: str) -> str | None:
        return agents.setdefault((trace_id, call_id), draw(st.sampled_from(AGENTS)))

    named: Batches = [
        (
            [
                replace(
                    m,
                    trace_id=fresh(m.trace_id),
                    agent_name=agent(m.trace_id, m.tool_call_id),
                    observed_at=m.observed_at + shift,
                )
                for m in ms
            ],
            [
                replace(man, trace_id=fresh(man.trace_id), observed_at=man.observed_at + shift)
                for man in mans
            ],
        )
        for ms, mans in batches
    ]
    return named, services, shift


def empty(store: Store) -> None:
    """No rows left of earlier examples: each example is checked alone."""
    with store.engine.begin() as connection:
        for table in ("measurements", "manifests", "calls", "reports", "runs"):
            connection.exec_driver_sql(f"DELETE FROM {table}")
        rebuild_counts(connection)


def ingest(store: Store, batches: Batches, services: dict[str, str | None], now: float) -> None:
    for ms, mans in batches:
        store.ingest(
            DecodedBatch(
                measurements=[DecodedMeasurement(m, {}, services[m.trace_id]) for m in ms],
                manifests=[DecodedManifest(m, {}, services[m.trace_id]) for m in mans],
            ),
            now=now,
        )


def _filters() -> st.SearchStrategy[ReportFilter]:
    return st.builds(
        ReportFilter,
        verdicts=st.lists(st.sampled_from(VERDICTS), unique=True, max_size=3).map(tuple),
        agent=st.sampled_from((None, "agent-a", "agent-b", "svc-x")),
        tool=st.sampled_from(TOOLS),
        layers=st.lists(st.sampled_from([*LAYERS, OTHER_LAYER]), unique=True, max_size=2).map(
            tuple
        ),
    )


def _moments(shift: float) -> st.SearchStrategy[float | None]:
    edges = [shift + t for t in (840.0, 850.0, 870.5, 899.0, 900.0, 930.0, 960.0, 1_000.0)]
    aligned = [float(bucket_of(shift + 900, g)) for g in (60, HOUR, DAY)]
    return st.none() | st.sampled_from(edges + aligned)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(named_batches(), min_size=1, max_size=3), st.data())
def test_counters_and_aggregates_equal_counting_the_reports(
    store: Store,
    examples: list[tuple[Batches, dict[str, str | None], float]],
    data: st.DataObject,
) -> None:
    empty(store)
    for batches, services, shift in examples:  # runs at other times of the same database
        ingest(store, batches, services, NOW + shift)
        if data.draw(st.booleans()):  # past the grace period: waiting journeys turn incomplete
            store.sweep_unsettled(NOW + shift + TOLERANCES.incomplete_after_s + 500)
    assert_counters_match_reports(store.engine)

    shift = examples[0][2]
    with Session(store.engine) as session:
        rows = report_rows(session.connection())
        for _ in range(4):
            f = data.draw(_filters())
            since, until = data.draw(_moments(shift)), data.draw(_moments(shift))
            groups = st.sampled_from(("agent_name", "tool_name", "verdict"))
            by = data.draw(st.lists(groups, unique=True))
            whole = [Slice(0.0, since, until)]
            assert tally(session, f, whole, by) == expected_tally(rows, f, whole, by, None)
            if since is not None and until is not None and since < until:
                width = data.draw(st.sampled_from((1, 7, 60, 75, 1_800, HOUR, 5_000, DAY)))
                pieces = timeline_slices(since, until, width)
                assert tally(session, f, pieces, ["verdict"], width) == expected_tally(
                    rows, f, pieces, ["verdict"], width
                )
            timed = replace(f, since=since, until=until)
            timeline = stats.timeline(session, timed, data.draw(st.integers(1, 60)))
            expected = expected_tally(rows, timed, whole, (), None)
            counted = sum(p["journeys"] for p in timeline["points"])
            assert counted == sum(v[0] for v in expected.values())
            width = timeline["bucket_seconds"]
            assert all(bucket_of(p["start"], width) == p["start"] for p in timeline["points"])


def test_rebuilding_the_counters_gives_the_same_counters(store: Store) -> None:
    with store.engine.begin() as connection:
        before = stored_counters(connection)
        rebuild_counts(connection)
        assert stored_counters(connection) == before
        assert before == expected_counters(report_rows(connection))


def agent_runs(seed: int) -> tuple[Batches, dict[str, str | None]]:
    """A few agent-like runs around an hour's edge, their spans shuffled into small
    batches: journeys are judged, then re-judged as their requests' spans arrive."""
    rng = random.Random(seed)
    start = 300 * HOUR - 200.0
    spans: list[Measurement | Manifest] = []
    services: dict[str, str | None] = {}
    for _ in range(3):
        trace = f"{rng.getrandbits(128):032x}"
        services[trace] = rng.choice(SERVICES)
        for step in range(1, 5):
            at = start + rng.uniform(0, 400)
            calls = [f"call_{step}_{i}" for i in range(3)]
            carried = [c for c in calls if rng.random() < 0.8]
            for call in calls:
                base = {"tool_name": rng.choice(TOOLS), "agent_name": rng.choice(AGENTS)}
                for stage, order in (("original", 10), ("serialized", 20)):
                    spans.append(
                        Measurement(
                            trace,
                            call,
                            stage,
                            order,
                            chars=400,
                            items=4,
                            step=step,
                            observed_at=at,
                            **base,
                        )
                    )
                if call in carried:
                    chars = rng.choice((400, 120))
                    for stage, order in (("assembled", 30), ("sent", 40)):
                        spans.append(
                            Measurement(
                                trace,
                                call,
                                stage,
                                order,
                                chars=chars,
                                items=4,
                                request_id=f"req_{step}",
                                step=step + 1,
                                observed_at=at + 30,
                                **base,
                            )
                        )
            spans.append(
                Manifest(
                    trace,
                    f"req_{step}",
                    step=step + 1,
                    tool_call_ids=tuple(carried),
                    tool_calls=tuple(calls),
                    observed_at=at + 31,
                )
            )
    rng.shuffle(spans)
    batches: Batches = []
    for first in range(0, len(spans), 5):
        chunk = spans[first : first + 5]
        batches.append(
            (
                [m for m in chunk if isinstance(m, Measurement)],
                [m for m in chunk if isinstance(m, Manifest)],
            )
        )
    return batches, services


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_the_migration_fills_the_counters_from_the_reports(
    dialect: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Reports stored and re-judged under 0004, the counters dropped (down to 0003) and
    rebuilt by the migration (up to 0004 again): the same counters."""
    for url in _url(dialect, tmp_path_factory):
        upgrade(url)
        engine = make_engine(url)
        try:
            batches, services = agent_runs(seed=11)
            ingest(Store(engine, TOLERANCES), batches, services, 300 * HOUR + 400)
            with engine.connect() as connection:
                kept = stored_counters(connection)
                assert kept == expected_counters(report_rows(connection))
                assert len({key[4] for key in kept[0]}) >= 3  # several verdicts
                assert len({key[5] for key in kept[0]}) >= 2  # journeys in several layers
            engine.dispose()
            downgrade(url, "0003_compact_storage")
            upgrade(url)
            with engine.connect() as connection:
                assert stored_counters(connection) == kept
        finally:
            engine.dispose()
