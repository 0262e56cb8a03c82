"""Replays, duplicated spans and lost acknowledgements change nothing, as a property,
through the real store (SQLite and PostgreSQL) with alerting on.

A random delivery plan (spans of random traces, in random batches and orders, some
spans twice) is ingested once as planned, and once more as a retrying, duplicating
network delivers it: any batch may be sent again at once (its acknowledgement was
lost), or again split differently (a client that halves on retry), the batches may
overlap their neighbours, and earlier batches are replayed at the end. Both deliveries
must leave the same reports, the same alert events and the same notifications — none
duplicated — and the reports must be those of judging the whole set at once.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from ctxledger.verdicts import Manifest, Measurement
from ctxledger_collector.alerts.config import default_config
from ctxledger_collector.alerts.events import AlertContext
from ctxledger_collector.judge.store import Store
from ctxledger_collector.storage.alert_tables import ALERT_EVENTS, NOTIFICATIONS
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from tests.collector.test_incremental_store import (
    Batches,
    expected_verdicts,
    ingest,
    stored_verdicts,
)
from tests.sdk.test_incremental_judging import NOW, TOLERANCES, batched_traces


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('replay') / 'ctxledger.db'}"
        context = None
    else:
        from tests.collector.conftest import fresh_postgres_database

        context = fresh_postgres_database()
        url = context.__enter__()
    upgrade(url)
    engine = make_engine(url)
    # settle_s=0: alert events are notified in the ingest transaction itself.
    yield Store(engine, TOLERANCES, AlertContext(config=default_config(), settle_s=0.0))
    engine.dispose()
    if context is not None:
        context.__exit__(None, None, None)


Record = Measurement | Manifest


def _renamed(batches: Batches, agent: str) -> tuple[Batches, dict[str, str]]:
    """The batches in fresh traces of their own agent (the database is shared, and
    alert groups are per agent); returns the new trace id -> the planned one."""
    names: dict[str, str] = {}

    def fresh(record: Any) -> Any:
        return replace(
            record, trace_id=names.setdefault(record.trace_id, os.urandom(16).hex()),
            agent_name=agent,
        )  # fmt: skip

    renamed = [([fresh(m) for m in ms], [fresh(m) for m in mans]) for ms, mans in batches]
    return renamed, {new: old for old, new in names.items()}


@st.composite
def unreliable(draw: st.DrawFn, batches: Batches) -> Batches:
    """The planned batches as a retrying, duplicating network delivers them."""
    delivered: Batches = []
    for index, (ms, mans) in enumerate(batches):
        records: list[Record] = [*ms, *mans]
        if index + 1 < len(batches) and draw(st.booleans()):  # overlaps the next batch
            after = [*batches[index + 1][0], *batches[index + 1][1]]
            records += after[: draw(st.integers(0, len(after)))]
        delivered.append(_batch(records))
        retry = draw(st.sampled_from(["none", "again", "split"]))
        if retry == "again":
            delivered.append(_batch(records))
        elif retry == "split":
            cut = draw(st.integers(0, len(records)))
            delivered += [_batch(records[:cut]), _batch(records[cut:])]
    replays = draw(st.lists(st.sampled_from(delivered), max_size=3)) if delivered else []
    return delivered + replays


def _batch(records: list[Record]) -> tuple[list[Measurement], list[Manifest]]:
    return (
        [r for r in records if isinstance(r, Measurement)],
        [r for r in records if isinstance(r, Manifest)],
    )


def _alerts(store: Store, agent: str, traces: dict[str, str]) -> tuple[list[Any], list[Any]]:
    """The alert events (by planned trace) and notifications of one agent, sorted: a
    duplicate shows as a repeated entry."""
    with store.engine.connect() as connection:
        events = connection.execute(
            select(
                ALERT_EVENTS.c.rule, ALERT_EVENTS.c.trace_id, ALERT_EVENTS.c.tool_call_id,
                ALERT_EVENTS.c.request_key, ALERT_EVENTS.c.verdict, ALERT_EVENTS.c.lost_items,
            ).where(ALERT_EVENTS.c.agent == agent)
        ).all()  # fmt: skip
        notifications = connection.execute(
            select(NOTIFICATIONS.c.rule, NOTIFICATIONS.c.status, NOTIFICATIONS.c.sink).where(
                NOTIFICATIONS.c.agent == agent
            )
        ).all()
    # A lost result alerts once: which of its journeys carries the event depends on the
    # order its requests arrived in (a notified event is history), not which results.
    planned = sorted((e[0], traces[e[1]], e[2]) for e in events)
    return planned, sorted(tuple(n) for n in notifications)


def _identical_copies_only(plan: Batches) -> bool:
    """No two different records under one (trace, span id): every duplicate is a replay.
    (Conflicting copies of one span are the duplicate rule's business, tested in
    test_incremental_store; here every copy must be the very same span.)"""
    seen: dict[tuple[str, str | None], Record] = {}
    for ms, mans in plan:
        for record in [*ms, *mans]:
            if seen.setdefault((record.trace_id, record.span_id), record) != record:
                return False
    return True


def _in_planned_traces(verdicts: dict[Any, Any], traces: dict[str, str]) -> dict[Any, Any]:
    return {(traces[t], c, r): v for (t, c, r), v in verdicts.items()}


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    batched_traces()
    .filter(_identical_copies_only)
    .flatmap(lambda plan: st.tuples(st.just(plan), unreliable(plan)))
)
def test_replays_duplicates_and_lost_acknowledgements_change_nothing(
    store: Store, deliveries: tuple[Batches, Batches]
) -> None:
    plan, network = deliveries
    once_agent, replayed_agent = f"once-{uuid.uuid4().hex}", f"replayed-{uuid.uuid4().hex}"
    once, once_traces = _renamed(plan, once_agent)
    # The network delivers the same spans: renamed the same way, record by record.
    mapping = {old: new for new, old in once_traces.items()}
    replayed_names = {new: os.urandom(16).hex() for new in once_traces}
    replayed = [
        (
            [replace(m, trace_id=replayed_names[mapping[m.trace_id]], agent_name=replayed_agent)
             for m in ms],
            [replace(m, trace_id=replayed_names[mapping[m.trace_id]], agent_name=replayed_agent)
             for m in mans],
        )
        for ms, mans in network
    ]  # fmt: skip
    replayed_traces = {replayed_names[new]: old for new, old in once_traces.items()}

    ingest(store, once, NOW)
    ingest(store, replayed, NOW)

    reports_once = _in_planned_traces(stored_verdicts(store, set(once_traces)), once_traces)
    reports_replayed = _in_planned_traces(
        stored_verdicts(store, set(replayed_traces)), replayed_traces
    )
    whole_set = {(t, c, r): (v[0], *v[1:]) for (t, c, r), v in expected_verdicts(plan, NOW).items()}
    assert reports_replayed == reports_once == whole_set
    assert _alerts(store, replayed_agent, replayed_traces) == _alerts(
        store, once_agent, once_traces
    )
