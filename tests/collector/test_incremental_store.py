"""The store judges incrementally through the database (SqlTraceState) and still agrees
with judging the whole set: random traces in random batches, orders and duplicates, on
SQLite and PostgreSQL, then the grace-period sweep."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from sqlalchemy import Engine, select

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Report, first_losses
from ctxledger_collector.alerts.config import default_config
from ctxledger_collector.alerts.events import AlertContext
from ctxledger_collector.decoded.batch import (
    DecodedBatch,
    DecodedManifest,
    DecodedMeasurement,
    carried_stage,
)
from ctxledger_collector.judge.store import Store
from ctxledger_collector.storage.alert_tables import ALERT_EVENTS
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from ctxledger_collector.storage.tables import REPORTS, RUNS
from tests.sdk.test_incremental_judging import (
    NOW,
    TOLERANCES,
    batched_traces,
    whole_set_reports,
)

Batches = list[tuple[list[Measurement], list[Manifest]]]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'ctxledger.db'}"
        context = None
    else:
        from tests.collector.conftest import fresh_postgres_database

        context = fresh_postgres_database()
        url = context.__enter__()
    upgrade(url)
    engine = make_engine(url)
    yield Store(engine, TOLERANCES)
    engine.dispose()
    if context is not None:
        context.__exit__(None, None, None)


def fresh_traces(batches: Batches) -> Batches:
    """The same batches in traces no other example used (the database is shared)."""
    names: dict[str, str] = {}

    def fresh(trace_id: str) -> str:
        return names.setdefault(trace_id, os.urandom(16).hex())

    return [
        (
            [replace(m, trace_id=fresh(m.trace_id)) for m in ms],
            [replace(man, trace_id=fresh(man.trace_id)) for man in mans],
        )
        for ms, mans in batches
    ]


def stored_verdicts(store: Store, trace_ids: set[str]) -> dict[tuple[str, str, str | None], tuple]:
    query = (
        select(
            RUNS.c.trace_id,
            REPORTS.c.tool_call_id,
            REPORTS.c.request_key,
            REPORTS.c.verdict,
            REPORTS.c.settled,
            REPORTS.c.lost_items,
            REPORTS.c.lost_chars,
            REPORTS.c.lost_tokens,
            REPORTS.c.step,
            REPORTS.c.source,
            REPORTS.c.layer,
            REPORTS.c.first_lost,
        )
        .join_from(REPORTS, RUNS, RUNS.c.id == REPORTS.c.run_id)
        .where(RUNS.c.trace_id.in_(trace_ids))
    )
    with store.engine.connect() as connection:
        return {(t, c, r or None): tuple(rest) for t, c, r, *rest in connection.execute(query)}


def expected_verdicts(batches: Batches, now: float) -> dict[tuple[str, str, str | None], tuple]:
    """Each journey as judging the whole set gives it, and whether its result was first
    lost there (each lost result flagged once, whatever order its journeys came in)."""
    reports = whole_set_reports(batches, now=now)
    firsts = first_losses(reports.values())
    return {key: (*_summary(r), key in firsts) for key, r in reports.items()}


def _summary(r: Report) -> tuple:
    return (
        r.verdict, r.settled, r.lost_items, r.lost_chars, r.lost_tokens, r.step, r.source, r.layer
    )  # fmt: skip


def ingest(store: Store, batches: Batches, now: float) -> set[str]:
    traces: set[str] = set()
    for ms, mans in batches:
        traces |= {m.trace_id for m in ms} | {m.trace_id for m in mans}
        store.ingest(as_derivation_gives(ms, mans), now=now)
    return traces


_TEMPLATES: dict[Measurement, Measurement] = {}


def as_derivation_gives(
    ms: list[Measurement], mans: list[Manifest], every: int = 2
) -> DecodedBatch:
    """The batch, every ``every``-th ``llm_input`` or ``received`` stage that is its
    request's own (the same span) handed over as derivation hands a re-sent result:
    carried by its manifest, as an earlier request's stage (request fields not this
    request's)."""
    by_request = {(man.trace_id, man.request_id): man for man in mans}
    carried: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    stages = []
    for index, m in enumerate(ms):
        manifest = by_request.get((m.trace_id, m.request_id or ""))
        if (
            index % every == 0
            and manifest is not None
            and m.stage in (sc.STAGE_LLM_INPUT, sc.STAGE_RECEIVED)
            and carried_stage(m, manifest) == m
        ):
            earlier = replace(m, request_id="earlier", step=1, observed_at=1.0, span_id="e" * 16)
            # Derivation hands each request the very same object as the request before.
            earlier = _TEMPLATES.setdefault(earlier, earlier)
            carried[(m.trace_id, manifest.request_id)].append(earlier)
        else:
            stages.append(DecodedMeasurement(m, {}, None))
    return DecodedBatch(
        measurements=stages,
        manifests=[
            DecodedManifest(man, {}, None, tuple(carried.pop((man.trace_id, man.request_id), ())))
            for man in mans
        ],
    )


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(batched_traces())
def test_the_store_judges_like_the_whole_set(store: Store, batches: Batches) -> None:
    batches = fresh_traces(batches)
    traces = ingest(store, batches, NOW)
    assert stored_verdicts(store, traces) == expected_verdicts(batches, NOW)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(batched_traces())
def test_the_store_judges_like_the_whole_set_with_every_re_send_carried(
    store: Store, batches: Batches
) -> None:
    """Every stage a request re-sends handed over on its manifest, the same objects from
    request to request: each request's re-sends judged from the request before it where
    they can be (:mod:`~ctxledger_collector.judge.quiet_runs`)."""
    batches = fresh_traces(batches)
    traces: set[str] = set()
    for ms, mans in batches:
        traces |= {m.trace_id for m in ms} | {m.trace_id for m in mans}
        store.ingest(as_derivation_gives(ms, mans, every=1), now=NOW)
    assert stored_verdicts(store, traces) == expected_verdicts(batches, NOW)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(batched_traces())
def test_the_sweep_turns_waiting_journeys_incomplete_like_the_whole_set(
    store: Store, batches: Batches
) -> None:
    batches = fresh_traces(batches)
    traces = ingest(store, batches, NOW)
    later = NOW + TOLERANCES.incomplete_after_s + 500
    for _ in range(10):
        if not store.sweep_unsettled(later).reports:
            break
    assert stored_verdicts(store, traces) == expected_verdicts(batches, later)


def test_a_call_issued_at_the_step_below_a_new_manifest_is_followed_by_it(store: Store) -> None:
    """The call of step 1 is followed by the first request of a later step: when that
    request's manifest arrives, the call's result is found missing from it."""
    trace = os.urandom(16).hex()
    original = Measurement(trace, "call_a", "original", 10, chars=100, step=1, span_id="1" * 16)
    same_step = Manifest(trace, "req_1", step=1, tool_call_ids=(), span_id="2" * 16)
    next_step = Manifest(trace, "req_2", step=2, tool_call_ids=(), span_id="3" * 16)
    batches: Batches = [([original], []), ([], [same_step]), ([], [next_step])]
    traces = ingest(store, batches, NOW)
    verdicts = stored_verdicts(store, traces)
    assert verdicts == expected_verdicts(batches, NOW)
    assert verdicts[(trace, "call_a", "req_2")][0] == "dropped"


def _judged_both_ways(store: Store, batches: Batches) -> dict[tuple[str, str, str | None], tuple]:
    """Ingest into the store and into memory; both must equal the whole-set judgment."""
    from ctxledger.verdicts.memory_state import MemoryTraceState

    memory = MemoryTraceState(TOLERANCES)
    for ms, mans in batches:
        memory.ingest(ms, mans, now=NOW)
    expected = expected_verdicts(batches, NOW)
    firsts = first_losses(memory.reports.values())
    in_memory = {key: (*_summary(r), key in firsts) for key, r in memory.reports.items()}
    assert in_memory == expected
    stored = stored_verdicts(store, ingest(store, batches, NOW))
    assert stored == expected
    return stored


def test_a_later_manifest_copy_that_no_longer_lists_a_call_gives_it_back_its_own_journey(
    store: Store,
) -> None:
    trace = os.urandom(16).hex()
    original = Measurement(trace, "call_a", "original", 10, chars=100, step=5, span_id="1" * 16)
    listed = Manifest(
        trace, "req_1", step=1, tool_call_ids=("call_a",), span_id="2" * 16, observed_at=900.0
    )
    unlisted = replace(listed, tool_call_ids=(), observed_at=901.0)
    stored = _judged_both_ways(store, [([original], [listed]), ([], [unlisted])])
    assert set(stored) == {(trace, "call_a", None)}


def test_a_later_manifest_copy_with_another_step_moves_the_request_that_follows(
    store: Store,
) -> None:
    trace = os.urandom(16).hex()
    original = Measurement(trace, "call_a", "original", 10, chars=100, step=1, span_id="1" * 16)
    near = Manifest(trace, "req_x", step=2, tool_call_ids=(), span_id="2" * 16, observed_at=900.0)
    far = Manifest(trace, "req_y", step=3, tool_call_ids=(), span_id="3" * 16, observed_at=900.0)
    moved = replace(near, step=4, observed_at=901.0)
    stored = _judged_both_ways(store, [([original], [near, far]), ([], [moved])])
    assert {k[2]: v[0] for k, v in stored.items()} == {"req_y": "dropped"}


def test_a_later_copy_of_the_issuing_request_that_no_longer_issues_the_call_moves_its_origin(
    store: Store,
) -> None:
    trace = os.urandom(16).hex()
    issuer = Manifest(trace, "r1", step=1, conversation="k", sequence=10,
                      issued_calls=("call_a",), span_id="1" * 16, observed_at=900.0)  # fmt: skip
    other = Manifest(trace, "r5", step=5, conversation="k", sequence=50,
                     issued_calls=("call_a",), span_id="5" * 16, observed_at=900.0)  # fmt: skip
    follows = Manifest(trace, "r2", step=2, conversation="k", sequence=20, tool_call_ids=(),
                       span_id="2" * 16, observed_at=900.0)  # fmt: skip
    last = Manifest(trace, "r6", step=6, conversation="k", sequence=60, tool_call_ids=(),
                    span_id="6" * 16, observed_at=900.0)  # fmt: skip
    moved = replace(issuer, issued_calls=(), observed_at=901.0)
    stored = _judged_both_ways(store, [([], [issuer, other, follows, last]), ([], [moved])])
    assert {k[2]: v[0] for k, v in stored.items()} == {"r6": "dropped"}


def test_requests_of_another_conversation_never_follow_a_call(store: Store) -> None:
    trace = os.urandom(16).hex()
    issuer = Manifest(trace, "a1", step=1, conversation="a", sequence=10,
                      issued_calls=("call_a",), span_id="1" * 16)  # fmt: skip
    other = Manifest(trace, "b1", step=2, conversation="b", sequence=20, tool_call_ids=(),
                     span_id="2" * 16)  # fmt: skip
    carried = ("call_a",)
    follows = Manifest(trace, "a2", step=2, conversation="a", sequence=30,
                       tool_call_ids=carried, tool_calls=carried, span_id="3" * 16)  # fmt: skip
    stored = _judged_both_ways(store, [([], [follows]), ([], [other]), ([], [issuer])])
    assert {k[2]: v[0] for k, v in stored.items()} == {"a2": "intact"}


def _resent(trace: str, request: str, step: int, chars: int, at: float) -> list[Measurement]:
    """call_a's result assembled into ``request`` (of ``step``) with ``chars`` of its 100."""
    span = f"{step:016x}"
    return [
        Measurement(
            trace,
            "call_a",
            "assembled",
            30,
            chars=chars,
            request_id=request,
            step=step,
            span_id=span,
            observed_at=at,
        )
    ]


def test_one_result_lost_and_re_sent_is_first_lost_once_whatever_the_order(store: Store) -> None:
    """Cut in request 2, re-sent cut in request 3: two silent journeys, one lost result,
    first lost at step 2 — also when step 3 arrives first, and again when the loss at
    step 2 turns out to be no loss (a later copy of its stage) and step 3 is first."""
    trace = os.urandom(16).hex()
    original = Measurement(trace, "call_a", "original", 10, chars=100, step=1, span_id="1" * 16)
    step3 = _resent(trace, "req_3", 3, 40, 900.0)
    step2 = _resent(trace, "req_2", 2, 40, 900.0)
    batches: Batches = [([original, *step3], []), (step2, [])]
    stored = stored_verdicts(store, ingest(store, batches, NOW))
    assert stored == expected_verdicts(batches, NOW)
    assert {k[2]: (v[0], v[-1]) for k, v in stored.items()} == {
        "req_2": ("silent", True),
        "req_3": ("silent", False),
    }
    whole = _resent(trace, "req_2", 2, 100, 901.0)  # a later copy: step 2 kept it all
    batches.append((whole, []))
    stored = stored_verdicts(store, ingest(store, batches[-1:], NOW))
    assert stored == expected_verdicts(batches, NOW)
    assert {k[2]: (v[0], v[-1]) for k, v in stored.items()} == {
        "req_2": ("intact", False),
        "req_3": ("silent", True),
    }


@pytest.mark.parametrize("settle_s", [60.0, 0.0], ids=["pending", "notified"])
def test_a_first_loss_re_judged_as_none_moves_its_alert_to_where_the_result_is_missing(
    database_url: str, settle_s: float
) -> None:
    """Cut in request 2 and re-sent cut in request 3: the alert is at step 2. A later copy
    shows step 2 kept it all: while that alert is still pending it moves to step 3, where
    the result is now first lost; once notified, it stays (the result alerted once)."""
    upgrade(database_url)
    engine = make_engine(database_url)
    try:
        alerts = AlertContext(config=default_config(), settle_s=settle_s)
        store = Store(engine, TOLERANCES, alerts)
        trace = os.urandom(16).hex()
        original = Measurement(trace, "call_a", "original", 10, chars=100, step=1, span_id="1" * 16)
        batches: Batches = [
            ([original, *_resent(trace, "req_2", 2, 40, 900.0)], []),
            (_resent(trace, "req_3", 3, 40, 900.0), []),
        ]
        ingest(store, batches, NOW)
        assert _alerted(engine, trace) == {"req_2": settle_s == 0.0}
        ingest(store, [(_resent(trace, "req_2", 2, 100, 901.0), [])], NOW)
        stored = stored_verdicts(store, {trace})
        assert {k[2]: (v[0], v[-1]) for k, v in stored.items()} == {
            "req_2": ("intact", False),
            "req_3": ("silent", True),
        }
        if settle_s:
            assert _alerted(engine, trace) == {"req_3": False}
        else:
            assert _alerted(engine, trace) == {"req_2": True}
    finally:
        engine.dispose()


def _alerted(engine: Engine, trace: str) -> dict[str, bool]:
    """The trace's alert events: request key -> whether notified."""
    query = select(ALERT_EVENTS.c.request_key, ALERT_EVENTS.c.batch_id).where(
        ALERT_EVENTS.c.trace_id == trace
    )
    with engine.connect() as connection:
        return {key: batch is not None for key, batch in connection.execute(query)}
