"""A lost result alerts a rule once, whichever of its journeys looked lost first.

Two replicas judging one trace at once can each miss the other's event: one notifies
the result at a later request's journey while the other, having read before that
commit, writes the earlier request's event (and withdraws the later one's). The group's
notification decides again with the group row locked (found by
tests/collector/test_alerts.py::test_two_collectors_keep_each_groups_window, which
counted a result twice in CI).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, event, insert, select
from sqlalchemy.orm import Session

from ctxledger import semconv as sc
from ctxledger.verdicts import Report
from ctxledger_collector.alerts.config import default_config
from ctxledger_collector.alerts.events import AlertContext, record_events
from ctxledger_collector.alerts.groups import flush_due_groups
from ctxledger_collector.storage.alert_tables import ALERT_EVENTS, NOTIFICATIONS
from ctxledger_collector.storage.database import make_engine

TRACE = "ab" * 16
CONTEXT = AlertContext(config=default_config(), dashboard_url=None, settle_s=5.0)
LATER = 100.0 + CONTEXT.config.group_window_s + 1  # past the first notification's window


def _lost_at(request: str, step: int) -> Report:
    return Report(
        TRACE,
        "call_1",
        request,
        sc.VERDICT_SILENT,
        lost_items=3,
        tool_name="search",
        agent_name="agent",
        step=step,
    )


def _record(engine: Engine, reports: list[Report], now: float, missing: set[Any]) -> None:
    with Session(engine) as session, session.begin():
        record_events(session, reports, CONTEXT, now, still_missing=missing)


def _notified(engine: Engine) -> list[tuple[str, str | None]]:
    """(status, request key) of each event in each sink's notification."""
    with engine.connect() as connection:
        payloads = connection.execute(select(NOTIFICATIONS.c.payload)).scalars().all()
    return sorted(
        (payload["status"], example["request_id"])
        for payload in payloads
        for example in payload["examples"]
    )


def test_a_result_notified_by_one_replica_is_not_notified_again_by_the_other(
    postgres_engine: Engine,
) -> None:
    pg_engine = postgres_engine
    # Request 2's journey looked first lost and its event is pending.
    _record(pg_engine, [_lost_at("req_2", step=2)], now=1.0, missing=set())

    # Another replica judges request 1 (so request 2 is no longer first lost); just
    # after it has read the stored events, before its first write, the delivery worker
    # notifies request 2's event.
    writes = ("INSERT", "UPDATE", "DELETE")
    interleaved: list[str] = []

    def notify_first(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if not interleaved and (statement.startswith(writes) or "FOR UPDATE" in statement):
            interleaved.append(statement)
            assert flush_due_groups(pg_engine, CONTEXT, now=100.0) == 1

    replica = make_engine(str(pg_engine.url.render_as_string(hide_password=False)))
    event.listen(replica, "before_cursor_execute", notify_first)
    try:
        _record(replica, [_lost_at("req_1", step=1)], now=2.0, missing={(TRACE, "call_1", "req_2")})
    finally:
        replica.dispose()
    assert interleaved

    flush_due_groups(pg_engine, CONTEXT, now=LATER)
    assert _notified(pg_engine) == [("firing", "req_2")] * len(CONTEXT.config.sinks)
    with pg_engine.connect() as connection:  # the notified event is history; nothing pends
        kept = connection.execute(select(ALERT_EVENTS.c.request_key, ALERT_EVENTS.c.batch_id))
        assert [(key, batch is not None) for key, batch in kept] == [("req_2", True)]


def test_of_two_pending_journeys_of_a_result_the_earliest_step_is_notified(
    database_engine: Engine,
) -> None:
    engine = database_engine
    # Both replicas wrote their journey's event, neither seeing the other's.
    base = {
        "rule": "silent-dropped-orphaned",
        "severity": "critical",
        "agent": "agent",
        "tool": "search",
        "trace_id": TRACE,
        "tool_call_id": "call_1",
        "verdict": sc.VERDICT_SILENT,
        "lost_items": 3,
        "observed_at": 1.0,
        "created_at": 1.0,
    }
    _record(engine, [_lost_at("req_3", step=3)], now=1.0, missing=set())
    with engine.begin() as connection:
        connection.execute(
            insert(ALERT_EVENTS),
            [
                {**base, "request_key": "req_1", "step": 1},
                {**base, "request_key": "req_2", "step": 2},
            ],
        )
        connection.execute(  # another result of the group, alone
            insert(ALERT_EVENTS),
            [{**base, "tool_call_id": "call_2", "request_key": "req_2", "step": 2}],
        )

    assert flush_due_groups(engine, CONTEXT, now=100.0) == 1
    assert _notified(engine) == sorted([("firing", "req_1"), ("firing", "req_2")]) * len(
        CONTEXT.config.sinks
    )
    with engine.connect() as connection:
        kept = connection.execute(select(ALERT_EVENTS.c.tool_call_id, ALERT_EVENTS.c.request_key))
        assert sorted(kept) == [("call_1", "req_1"), ("call_2", "req_2")]
    assert flush_due_groups(engine, CONTEXT, now=LATER) == 0
