"""Copies of one span that differ, as a property, through the real store (SQLite and
PostgreSQL): whatever order they arrive in, and however they are split into exports, the
collector stores the same rows (the winning copy of each measurement and manifest,
attributes outside the contract included) and the same reports, and those reports are
the SDK's local ledger's (``judge_trace`` over every copy at once).

A plan is a few copies of each span of one journey (the tool's output, the assembled
request, the request's manifest) that differ in their end time, span id, size, item ids
and attributes outside the contract, in a random order cut into random exports.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Tolerances, judge_trace
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedManifest, DecodedMeasurement
from ctxledger_collector.judge.store import Store
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from ctxledger_collector.storage.rows import MANIFEST_COLUMNS, MEASUREMENT_COLUMNS, REPORT_COLUMNS
from ctxledger_collector.storage.tables import MANIFESTS, MEASUREMENTS, REPORTS, RUNS

T = 1_796_000_000_123_456_000 / 1e9
NOW = T + 10
CALL = "call_dup"
REQUEST = "req_dup"
TOLERANCES = Tolerances()
#: What copies differ in; few values each, so copies also tie on some and the later
#: parts of the rule decide.
END_TIMES = (T, T + 1, 1_796_000_000_123_456_240 / 1e9)  # the last: T's microsecond
SPAN_IDS = ("0a" * 8, "0b" * 8)
ITEMS = (("a", "b", "c"), ("a", "b"), ("a", "c"))
EXTRAS: tuple[dict[str, Any], ...] = ({}, {"app.note": "one"}, {"app.note": "two"})

#: A copy: (stage or "manifest", end time, span id, item ids, extra attributes).
Copy = tuple[str, float, str, tuple[str, ...], dict[str, Any]]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stores(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Store, ...]]:
    """Three stores, one per delivery of a plan: the deliveries use the same trace id
    (a copy's content digest covers it), so their rows compare whole."""
    with contextlib.ExitStack() as stack:
        made: list[Store] = []
        for _ in range(3):
            if request.param == "sqlite":
                url = f"sqlite:///{tmp_path_factory.mktemp('copies') / 'ctxledger.db'}"
            else:
                from tests.collector.conftest import fresh_postgres_database

                url = stack.enter_context(fresh_postgres_database())
            upgrade(url)
            engine = make_engine(url)
            stack.callback(engine.dispose)
            made.append(Store(engine, TOLERANCES))
        yield tuple(made)


def _copies(kind: str) -> st.SearchStrategy[list[Copy]]:
    one = st.tuples(
        st.just(kind),
        st.sampled_from(END_TIMES),
        st.sampled_from(SPAN_IDS),
        st.sampled_from(ITEMS),
        st.sampled_from(EXTRAS),
    )
    return st.lists(one, min_size=1, max_size=3)


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[Copy], list[list[Copy]]]:
    """Every copy, and the exports they arrive in (a random order, randomly cut)."""
    copies = [
        *draw(_copies(sc.STAGE_ORIGINAL)),
        *draw(_copies(sc.STAGE_ASSEMBLED)),
        *draw(_copies("manifest")),
    ]
    arrival = draw(st.permutations(copies))
    cuts = sorted(draw(st.sets(st.integers(1, len(arrival) - 1))) if len(arrival) > 1 else ())
    bounds = [0, *cuts, len(arrival)]
    return copies, [arrival[a:b] for a, b in itertools.pairwise(bounds)]


def _record(trace_id: str, copy: Copy) -> Measurement | Manifest:
    kind, end, span_id, items, _ = copy
    if kind == "manifest":
        # A copy that lists fewer items also forgets the call: the verdict depends on
        # which manifest copy wins.
        calls = (CALL,) if len(items) == 3 else ()
        return Manifest(
            trace_id=trace_id,
            request_id=REQUEST,
            step=2,
            tool_call_ids=calls,
            tool_calls=calls,
            observed_at=end + 2,
            span_id=span_id,
        )
    assembled = kind == sc.STAGE_ASSEMBLED
    return Measurement(
        trace_id=trace_id,
        tool_call_id=CALL,
        stage=kind,
        order=30 if assembled else 10,
        chars=40 * len(items),
        items=len(items),
        item_ids=items,
        request_id=REQUEST if assembled else None,
        step=2 if assembled else None,
        observed_at=end + (1 if assembled else 0),
        span_id=span_id,
    )


def _batch(trace_id: str, copies: Sequence[Copy]) -> DecodedBatch:
    batch = DecodedBatch()
    for copy in copies:
        record = _record(trace_id, copy)
        if isinstance(record, Manifest):
            batch.manifests.append(DecodedManifest(record, dict(copy[4]), None))
        else:
            batch.measurements.append(DecodedMeasurement(record, dict(copy[4]), None))
    return batch


def _rows(store: Store, trace_id: str) -> dict[str, list[tuple[Any, ...]]]:
    """The trace's stored rows, without the run id (each delivery has its own run)."""
    run = select(RUNS.c.id).where(RUNS.c.trace_id == trace_id).scalar_subquery()
    found: dict[str, list[tuple[Any, ...]]] = {}
    with store.engine.connect() as connection:
        for table, names in (
            (MEASUREMENTS, MEASUREMENT_COLUMNS),
            (MANIFESTS, MANIFEST_COLUMNS),
            (REPORTS, REPORT_COLUMNS),
        ):
            columns = [table.c[name] for name in names if name != "run_id"]
            rows = connection.execute(select(*columns).where(table.c.run_id == run)).all()
            found[table.name] = sorted((tuple(row) for row in rows), key=repr)
    return found


def _delivered(
    stores: Sequence[Store], *deliveries: Sequence[Sequence[Copy]], trace_id: str = ""
) -> list[dict[str, list[tuple[Any, ...]]]]:
    """Each delivery (a list of exports) into a store of its own, in one trace (a fresh
    one unless given): the rows each store keeps."""
    trace_id = trace_id or os.urandom(16).hex()
    for store, exports in zip(stores, deliveries, strict=False):
        for export in exports:
            store.ingest(_batch(trace_id, export), now=NOW)
    return [_rows(store, trace_id) for store in stores[: len(deliveries)]]


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=plans())
def test_copies_that_differ_leave_the_same_rows_and_verdicts_whatever_their_order(
    stores: tuple[Store, ...], plan: tuple[list[Copy], list[list[Copy]]]
) -> None:
    copies, exports = plan
    trace_id = os.urandom(16).hex()
    as_planned, at_once, in_reverse = _delivered(
        stores, exports, [copies], [[c] for c in reversed(copies)], trace_id=trace_id
    )
    assert as_planned == at_once == in_reverse

    # The SDK's local ledger judges the whole set of copies at once: the same journey.
    records = [_record(trace_id, copy) for copy in copies]
    ledger = judge_trace(
        [r for r in records if isinstance(r, Measurement)],
        [r for r in records if isinstance(r, Manifest)],
        tolerances=TOLERANCES,
        now=NOW,
    )
    verdict = REPORT_COLUMNS.index("verdict") - 1  # the run id is left out
    lost_items = REPORT_COLUMNS.index("lost_items") - 1
    assert [(row[verdict], row[lost_items]) for row in as_planned["reports"]] == sorted(
        (r.verdict, r.lost_items) for r in ledger
    )


def test_copies_that_differ_only_outside_the_contract_keep_one_winner(
    stores: tuple[Store, ...],
) -> None:
    """Two copies equal in every contract attribute, one with ``app.note = one`` and one
    with ``two``: the same stored copy whichever comes first, in one export or two."""
    one: Copy = (sc.STAGE_ORIGINAL, T, SPAN_IDS[0], ITEMS[0], {"app.note": "one"})
    two: Copy = (*one[:4], {"app.note": "two"})
    # The digest covers the trace id, so each trace compares its own orders: every order
    # of the two copies, in one export and in two, keeps the same one.
    extra = MEASUREMENT_COLUMNS.index("extra") - 1
    for deliveries in (
        ([[one, two]], [[two, one]], [[one], [two]]),
        ([[two], [one]], [[one], [two]], [[one, two]]),
    ):
        rows = _delivered(stores, *deliveries)
        assert rows[0] == rows[1] == rows[2]
        (row,) = rows[0]["measurements"]
        assert row[extra] in {'{"app.note":"one"}', '{"app.note":"two"}'}
