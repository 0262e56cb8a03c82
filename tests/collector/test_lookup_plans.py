"""A writer's key lookups on PostgreSQL search an index, even in tables and partitions
that have no statistics yet, and the planner settings that ensure it end with the
writer's transaction.

Without them PostgreSQL read a fresh partition whole for each batch's keys (a hash or
merge join: 5.7 and 24 ms per batch at 19,000 rows, against 0.5 and 0.8 ms by index),
so a batch's cost grew with the partition (found by bench/ingest.py).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Tolerances
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedManifest, DecodedMeasurement
from ctxledger_collector.judge.store import Store
from ctxledger_collector.storage.lookup_plans import plan_lookups_by_index
from tests.collector.sql_plans import plan_in, reads_of

STAGES = (
    (sc.STAGE_ORIGINAL, 0),
    (sc.STAGE_SERIALIZED, 1),
    (sc.STAGE_ASSEMBLED, 2),
    (sc.STAGE_SENT, 3),
)
TABLES = ("measurements", "reports", "manifests", "calls", "string_lists", "runs")


def run_batch(run: int, calls: int = 20) -> DecodedBatch:
    """One run of ``calls`` tool results, each measured at four stages and sent in one
    request, as one export."""
    trace_id = f"{run:032x}"
    measurements = [
        Measurement(
            trace_id,
            f"call_{run}_{n}",
            stage,
            order,
            chars=1_000 - order,
            request_id="req_1" if stage == sc.STAGE_SENT else None,
            tool_name="search",
            step=1,
            items=10,
            item_ids=tuple(f"id_{i}" for i in range(10)),
        )
        for n in range(calls)
        for stage, order in STAGES
    ]
    manifest = Manifest(
        trace_id, "req_1", step=1, tool_call_ids=tuple(f"call_{run}_{n}" for n in range(calls))
    )
    return DecodedBatch(
        measurements=[DecodedMeasurement(m, {}, None) for m in measurements],
        manifests=[DecodedManifest(manifest, {}, None)],
    )


def test_ingest_lookups_search_an_index_in_partitions_without_statistics(
    postgres_engine: Engine,
) -> None:
    store = Store(postgres_engine, Tolerances())
    for run in range(60):  # 4,800 measurements in a partition never analysed
        store.ingest(run_batch(run))
    later = run_batch(7)  # a run seen before: its journeys are read back and re-judged
    lookups = reads_of(postgres_engine, lambda: store.ingest(later), TABLES)
    assert len(lookups) >= 5
    with postgres_engine.begin() as connection:
        plan_lookups_by_index(connection)
        for statement, parameters in lookups:
            if "pg_advisory_xact_lock" in statement or "set_config" in statement:
                continue
            plan = plan_in(connection, statement, parameters)
            assert "Seq Scan" not in plan, (statement, plan)
            assert "Hash Join" not in plan and "Merge Join" not in plan, (statement, plan)


SETTINGS = ("enable_hashjoin", "enable_mergejoin", "enable_seqscan", "jit")


def settings_of(engine: Engine) -> dict[str, str]:
    with engine.connect() as connection:  # the pool hands the same connection back
        return {name: str(connection.exec_driver_sql(f"SHOW {name}").scalar()) for name in SETTINGS}


def test_the_planner_settings_end_with_the_writers_transaction(postgres_engine: Engine) -> None:
    before = settings_of(postgres_engine)
    with postgres_engine.begin() as connection:
        plan_lookups_by_index(connection)
        during = {name: connection.exec_driver_sql(f"SHOW {name}").scalar() for name in SETTINGS}
    assert during == dict.fromkeys(SETTINGS, "off")
    store = Store(postgres_engine, Tolerances())
    store.ingest(run_batch(1))
    store.sweep_unsettled()
    assert settings_of(postgres_engine) == before


def long_run_batch(first_call: int, calls: int) -> DecodedBatch:
    """``calls`` more tool results of one long run (one request each)."""
    trace_id = "ab" * 16
    measurements = [
        Measurement(
            trace_id,
            f"call_{n}",
            stage,
            order,
            chars=500,
            request_id=f"req_{n}" if stage in (sc.STAGE_ASSEMBLED, sc.STAGE_SENT) else None,
            tool_name="search",
            step=n,
        )
        for n in range(first_call, first_call + calls)
        for stage, order in STAGES
    ]
    manifests = [
        Manifest(trace_id, f"req_{n}", step=n + 1, tool_call_ids=(f"call_{n}",))
        for n in range(first_call, first_call + calls)
    ]
    return DecodedBatch(
        measurements=[DecodedMeasurement(m, {}, None) for m in measurements],
        manifests=[DecodedManifest(m, {}, None) for m in manifests],
    )


def long_run_plans(engine: Engine, lookup: Callable[[str], bool]) -> list[str]:
    """The plans, under the writers' settings, of the reads ``lookup`` picks out of one
    more batch's ingest, in a run already holding 3,000 journeys (one request each)."""
    store = Store(engine, Tolerances())
    for first in range(0, 3_000, 100):
        store.ingest(long_run_batch(first, 100))
    reads = [
        (statement, parameters)
        for statement, parameters in reads_of(
            engine, lambda: store.ingest(long_run_batch(3_000, 100)), TABLES
        )
        if lookup(statement)
    ]
    assert reads
    with engine.begin() as connection:
        plan_lookups_by_index(connection)
        return [plan_in(connection, statement, parameters) for statement, parameters in reads]


def test_a_long_runs_reports_are_looked_up_by_call_through_the_journey_index(
    postgres_engine: Engine,
) -> None:
    plans = long_run_plans(
        postgres_engine,
        lambda statement: (
            "JOIN reports t ON t.run_id = k.run_id AND t.tool_call_id = k.tool_call_id" in statement
            and "request_key = k.request_key" not in statement
        ),
    )
    for plan in plans:
        # the journey index (run, call, request key), not one that starts with the run
        # alone and would filter every report of the run for each key
        assert "run_id_request_key_idx" not in plan, plan
        assert "run_id_tool_call_id_request_key_idx" in plan, plan


def test_a_long_runs_manifests_are_looked_up_by_request_through_the_request_index(
    postgres_engine: Engine,
) -> None:
    """Found by bench: the step index (run, conversation, position) was taken for these,
    filtering every manifest of the run for each request (588 a key in a run of 10,000
    spans)."""
    plans = long_run_plans(
        postgres_engine,
        lambda statement: (
            "JOIN manifests t ON t.run_id = k.run_id AND t.request_id = k.request_id" in statement
        ),
    )
    for plan in plans:
        assert "ix_manifests_step" not in plan, plan
        assert "ix_manifests_request" in plan, plan
