"""Recording alert events for the journeys of a long trace, on a real PostgreSQL.

A trace of 10,000 spans judges ~8,000 journeys in one export; looking their events up
in one row-value IN list exceeded PostgreSQL's stack depth ("stack depth limit
exceeded"), which the ingest answered with 503 for ever (found by bench/ingest.py).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ctxledger import semconv as sc
from ctxledger.verdicts import Report
from ctxledger_collector.alerts.config import default_config
from ctxledger_collector.alerts.events import AlertContext, record_events
from ctxledger_collector.database import make_engine
from ctxledger_collector.migrate import upgrade
from ctxledger_collector.tables import ALERT_EVENTS


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
