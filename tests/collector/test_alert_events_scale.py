"""Recording alert events for the journeys of a long trace, and as events pile up.

A trace of 10,000 spans judges ~8,000 journeys in one export; looking their events up
in one row-value IN list exceeded PostgreSQL's stack depth ("stack depth limit
exceeded"), which the ingest answered with 503 for ever (found by bench/ingest.py).
Every batch looks up the events of the journeys it judged: that lookup must search an
index, or each batch reads every event a long-lived collector has kept.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, event, insert, select
from sqlalchemy.orm import Session

from ctxledger import semconv as sc
from ctxledger.verdicts import Report
from ctxledger_collector.alerts.config import default_config
from ctxledger_collector.alerts.events import AlertContext, record_events
from ctxledger_collector.alerts.groups import due_group_keys, flush_due_groups
from ctxledger_collector.storage.alert_tables import ALERT_EVENTS, ALERT_GROUPS
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from tests.collector.sql_plans import plan_of, reads_of


def test_events_of_ten_thousand_journeys_are_recorded_in_one_transaction(
    postgres_url: str,
) -> None:
    upgrade(postgres_url)
    engine = make_engine(postgres_url)
    trace_id = "ab" * 16
    intact = [
        Report(trace_id, f"call_{i:05d}", f"req_{i % 500:03d}", sc.VERDICT_INTACT)
        for i in range(10_000)
    ]
    silent = Report(trace_id, "call_silent", "req_000", sc.VERDICT_SILENT, lost_items=3)
    context = AlertContext(config=default_config(), dashboard_url=None, settle_s=5.0)
    try:
        with Session(engine) as session, session.begin():
            assert record_events(session, [*intact, silent], context, now=1.0) == 1
        with Session(engine) as session, session.begin():  # judged again: no second event
            record_events(session, [*intact, silent], context, now=2.0)
            events = session.execute(select(ALERT_EVENTS.c.tool_call_id)).scalars().all()
        assert events == ["call_silent"]
    finally:
        engine.dispose()


def test_events_of_a_batch_are_looked_up_by_index_among_many_stored(database_url: str) -> None:
    upgrade(database_url)
    engine = make_engine(database_url)
    stored = [
        {
            "rule": "silent-loss",
            "severity": "critical",
            "agent": "agent",
            "tool": "search",
            "trace_id": f"{n:032x}",
            "tool_call_id": f"call_{n}",
            "request_key": "req",
            "verdict": sc.VERDICT_SILENT,
            "observed_at": 1.0,
            "created_at": 1.0,
            "batch_id": "batch" if n % 2 else None,
        }
        for n in range(5_000)
    ]
    context = AlertContext(config=default_config(), dashboard_url=None, settle_s=5.0)
    batch = [
        Report("cd" * 16, f"call_{i}", "req_1", sc.VERDICT_SILENT, lost_items=1) for i in range(20)
    ]
    try:
        with engine.begin() as connection:
            connection.execute(insert(ALERT_EVENTS), stored)
            if engine.dialect.name == "postgresql":
                connection.exec_driver_sql("ANALYZE alert_events")

        def record() -> None:
            with Session(engine) as session, session.begin():
                record_events(session, batch, context, now=2.0)

        lookups = reads_of(engine, record, ["alert_events"])
        assert len(lookups) >= 2  # the journeys' events, then the results already notified
        for statement, parameters in lookups:
            plan = plan_of(engine, statement, parameters)
            if engine.dialect.name == "sqlite":
                assert "SCAN t" not in plan and "USING INDEX" in plan, (statement, plan)
            else:
                assert "Seq Scan on alert_events" not in plan, (statement, plan)
                assert "Index" in plan, (statement, plan)
    finally:
        engine.dispose()


def _event(n: int, tool: str, created_at: float, batch_id: str | None) -> dict[str, Any]:
    return {
        "rule": "silent-loss",
        "severity": "critical",
        "agent": "agent",
        "tool": tool,
        "trace_id": f"{n:032x}",
        "tool_call_id": f"call_{n}",
        "request_key": "req",
        "verdict": sc.VERDICT_SILENT,
        "observed_at": created_at,
        "created_at": created_at,
        "batch_id": batch_id,
    }


def _group(tool: str, state: str, last_notified_at: float | None) -> dict[str, Any]:
    return {
        "rule": "silent-loss",
        "agent": "agent",
        "tool": tool,
        "severity": "critical",
        "state": state,
        "first_event_at": 1.0,
        "last_event_at": 1.0,
        "last_notified_at": last_notified_at,
    }


NOW = 10_000.0


def _fill_groups(engine: Engine, window_s: float, settle_s: float) -> None:
    """Five groups, each with a different reason to be notified now or not, and many
    events notified long ago."""
    settled, unsettled = NOW - settle_s - 1, NOW - settle_s / 2
    groups = [
        _group("recently-notified", "firing", NOW - window_s / 2),
        _group("window-passed", "firing", NOW - window_s - 1),
        _group("never-notified", "new", None),
        _group("only-unsettled", "new", None),
        _group("all-notified", "firing", NOW - window_s - 1),
    ]
    events = [_event(n, "all-notified", 1.0, "batch_old") for n in range(5_000)]
    events += [
        _event(6_000, "recently-notified", settled, None),
        _event(6_001, "window-passed", settled, None),
        _event(6_002, "never-notified", settled, None),
        _event(6_003, "only-unsettled", unsettled, None),
    ]
    with engine.begin() as connection:
        connection.execute(insert(ALERT_GROUPS), groups)
        connection.execute(insert(ALERT_EVENTS), events)
        if engine.dialect.name == "postgresql":
            connection.exec_driver_sql("ANALYZE alert_events")


def test_the_tick_finds_the_groups_due_and_no_other(database_url: str) -> None:
    upgrade(database_url)
    engine = make_engine(database_url)
    context = AlertContext(config=default_config(), dashboard_url=None, settle_s=5.0)
    try:
        _fill_groups(engine, context.config.group_window_s, context.settle_s)
        with Session(engine) as session:
            due = due_group_keys(session, context, NOW)
        assert due == [
            ("silent-loss", "agent", "never-notified"),
            ("silent-loss", "agent", "window-passed"),
        ]
    finally:
        engine.dispose()


def test_a_tick_with_no_group_due_is_one_read_of_the_pending_events_index(
    database_url: str,
) -> None:
    upgrade(database_url)
    engine = make_engine(database_url)
    context = AlertContext(config=default_config(), dashboard_url=None, settle_s=5.0)
    transactions: list[object] = []
    try:
        _fill_groups(engine, context.config.group_window_s, context.settle_s)
        assert flush_due_groups(engine, context, NOW) == 2  # the two due groups ...

        def began(connection: object) -> None:
            transactions.append(connection)

        event.listen(engine, "begin", began)
        try:  # ... so the next tick finds none, and reads nothing else
            reads = reads_of(
                engine, lambda: flush_due_groups(engine, context, NOW + 1), ["alert_events"]
            )
        finally:
            event.remove(engine, "begin", began)
        assert len(transactions) == 1 and len(reads) == 1  # the read's own: no group's
        statement, parameters = reads[0]
        plan = plan_of(engine, statement, parameters)
        assert "ix_alert_events_unbatched" in plan, plan
        if engine.dialect.name == "postgresql":
            assert "Seq Scan on alert_events" not in plan, plan
    finally:
        engine.dispose()
