"""Which duplicate wins: one rule, ``ctxledger.verdicts.preferred_copy_key``, decides for
the judge and for the store (its copy-key columns, compared by the database), so what
the collector keeps when copies of a span arrive in any order, in one batch or many, is
what judging the whole set of copies picks. Runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from sqlalchemy import Connection, select

from ctxledger import semconv as sc
from ctxledger.verdicts import (
    Manifest,
    Measurement,
    Tolerances,
    judge_trace,
    preferred_copy,
    preferred_copy_key,
)
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedManifest, DecodedMeasurement
from ctxledger_collector.judge.store import Store
from ctxledger_collector.storage.rows import MANIFEST_COLUMNS, MEASUREMENT_COLUMNS
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.stored_records import (
    MANIFEST_LISTS,
    MEASUREMENT_LISTS,
    manifest_of,
    measurement_of,
)
from ctxledger_collector.storage.string_lists import list_refs, read_lists
from ctxledger_collector.storage.tables import MANIFESTS, MEASUREMENTS, RUNS

#: An end time in seconds, as the decoder derives it from OTLP nanoseconds.
T = 1_796_000_000_123_456_000 / 1e9
CALL = "call_dup"
REQUEST = "req_dup"

# (end time, span id, chars): copies of the `original` stage of one tool result.
MEASUREMENT_CASES: dict[str, list[tuple[float, str, int]]] = {
    "the later end time wins": [(T, "ff" * 8, 100), (T + 1, "00" * 8, 200)],
    "same end time: the higher span id wins": [(T, "0a" * 8, 100), (T, "0b" * 8, 200)],
    # 240 ns apart: different floats, the same microsecond, so the span id decides.
    "within one microsecond: the span id decides": [
        (T, "ff" * 8, 100),
        (1_796_000_000_123_456_240 / 1e9, "01" * 8, 200),
    ],
    "same end time and span id: the content decides": [(T, "ab" * 8, 100), (T, "ab" * 8, 200)],
    "three copies": [(T, "0a" * 8, 100), (T, "0b" * 8, 200), (T - 5, "ff" * 8, 300)],
}


def trace_ids() -> Iterator[str]:
    while True:
        yield os.urandom(16).hex()


def original(trace_id: str, observed_at: float, span_id: str, chars: int) -> Measurement:
    return Measurement(
        trace_id=trace_id,
        tool_call_id=CALL,
        stage=sc.STAGE_ORIGINAL,
        order=10,
        chars=chars,
        items=chars // 10,
        observed_at=observed_at,
        span_id=span_id,
    )


def _run_id(trace_id: str) -> object:
    return select(RUNS.c.id).where(RUNS.c.trace_id == trace_id).scalar_subquery()


def _lists(connection: Connection, rows: Sequence[Any], indexes: tuple[int, ...]) -> Any:
    return read_lists(connection, Statements(connection.dialect.name), list_refs(rows, *indexes))


def stored_measurements(store: Store, trace_id: str) -> list[Measurement]:
    columns = [MEASUREMENTS.c[name] for name in MEASUREMENT_COLUMNS]
    with store.engine.connect() as connection:
        rows = connection.execute(
            select(*columns).where(MEASUREMENTS.c.run_id == _run_id(trace_id))
        ).all()
        lists = _lists(connection, rows, MEASUREMENT_LISTS)
        return [measurement_of(row, trace_id, lists) for row in rows]


def stored_manifests(store: Store, trace_id: str) -> list[Manifest]:
    columns = [MANIFESTS.c[name] for name in MANIFEST_COLUMNS]
    with store.engine.connect() as connection:
        rows = connection.execute(
            select(*columns).where(MANIFESTS.c.run_id == _run_id(trace_id))
        ).all()
        lists = _lists(connection, rows, MANIFEST_LISTS)
        return [manifest_of(row, trace_id, lists) for row in rows]


def which(m: Measurement) -> tuple[str | None, int]:
    """What tells the copies of a case apart: their span ids and sizes."""
    return (m.span_id, m.chars)


def measurements_batch(*copies: Measurement) -> DecodedBatch:
    return DecodedBatch(measurements=[DecodedMeasurement(m, {}, None) for m in copies])


@pytest.mark.parametrize("arrival", ["one copy per batch", "all copies in one batch"])
@pytest.mark.parametrize("case", list(MEASUREMENT_CASES))
def test_store_keeps_the_copy_the_judge_picks(store: Store, case: str, arrival: str) -> None:
    spec = MEASUREMENT_CASES[case]
    ids = trace_ids()
    for order in itertools.permutations(range(len(spec))):
        trace_id = next(ids)
        copies = [original(trace_id, *copy) for copy in spec]
        arrived = [copies[i] for i in order]
        batches = [[m] for m in arrived] if arrival == "one copy per batch" else [arrived]
        for batch in batches:
            outcome = store.ingest(measurements_batch(*batch))

        (judged,) = judge_trace(copies, tolerances=Tolerances())
        (kept,) = stored_measurements(store, trace_id)
        assert which(kept) == which(preferred_copy(copies)) == which(judged.stages[0]), order
        # The judging the store did on the last batch agrees too.
        assert [[which(m) for m in r.stages] for r in outcome.reports] == [
            [which(m) for m in judged.stages]
        ], order


def test_the_key_sorts_like_the_preference() -> None:
    a = original("t", T, "0a" * 8, 100)
    assert preferred_copy_key(original("t", T + 1e-3, "00" * 8, 1)) > preferred_copy_key(a)
    assert preferred_copy_key(original("t", T, "0b" * 8, 1)) > preferred_copy_key(a)
    # A missing span id loses to any span id, as the empty string does in a comparison.
    assert preferred_copy_key(original("t", T, "", 999)) < preferred_copy_key(a)
    # Span ids order like their bytes, across the sign of the 64-bit numbers kept.
    assert preferred_copy_key(original("t", T, "80" + "00" * 7, 1)) > preferred_copy_key(
        original("t", T, "7f" + "ff" * 7, 1)
    )
    # Copies 240 ns apart are the same microsecond: the span id decides.
    later_ns = original("t", 1_796_000_000_123_456_240 / 1e9, "01" * 8, 1)
    assert preferred_copy_key(later_ns) < preferred_copy_key(original("t", T, "ff" * 8, 1))


def test_store_keeps_the_manifest_copy_the_judge_picks(store: Store) -> None:
    """Two copies of one request's manifest, one with the tool result and one without:
    the verdict the collector stores is the verdict of judging both."""
    ids = trace_ids()
    for with_result_wins in (True, False):
        for arrival in (("with", "without"), ("without", "with")):
            trace_id = next(ids)
            stages = [
                original(trace_id, T, "01" * 8, 100),
                Measurement(
                    trace_id=trace_id,
                    tool_call_id=CALL,
                    stage=sc.STAGE_ASSEMBLED,
                    order=30,
                    chars=100,
                    items=10,
                    request_id=REQUEST,
                    step=2,
                    observed_at=T + 1,
                    span_id="02" * 8,
                ),
            ]
            later, earlier = ("0c" * 8, "0b" * 8)
            copies = {
                "with": Manifest(
                    trace_id=trace_id,
                    request_id=REQUEST,
                    step=2,
                    tool_call_ids=(CALL,),
                    tool_calls=(CALL,),
                    observed_at=T + 2,
                    span_id=later if with_result_wins else earlier,
                ),
                "without": Manifest(
                    trace_id=trace_id,
                    request_id=REQUEST,
                    step=2,
                    tool_call_ids=(),
                    tool_calls=(),
                    observed_at=T + 2,
                    span_id=earlier if with_result_wins else later,
                ),
            }
            store.ingest(measurements_batch(*stages))
            for name in arrival:
                manifest = DecodedManifest(copies[name], {}, None)
                outcome = store.ingest(DecodedBatch(manifests=[manifest]))

            (judged,) = judge_trace(stages, copies.values(), tolerances=Tolerances())
            expected = sc.VERDICT_INTACT if with_result_wins else sc.VERDICT_DROPPED
            assert judged.verdict == expected
            (kept,) = stored_manifests(store, trace_id)
            preferred = preferred_copy(list(copies.values()))
            assert (kept.span_id, kept.tool_call_ids) == (
                preferred.span_id,
                preferred.tool_call_ids,
            )
            assert [(r.verdict, r.notes) for r in outcome.reports] == [
                (judged.verdict, judged.notes)
            ]


def test_equal_copies_have_equal_digests_however_their_strings_were_made() -> None:
    """One copy whose string fields share one object (or are interned), one whose equal
    strings are separate objects: the content digest, the rule's last tie-break, is the
    same (the protobuf and JSON decoders of one span once disagreed here)."""
    import sys

    from ctxledger.verdicts.duplicates import content_digest

    shared = "0"
    made = "".join(["", "0"])  # equal to shared, another object, not interned
    assert made == shared and made is not shared
    common = dict(trace_id="t" * 32, stage="original", order=10, chars=1, span_id="0" * 16)
    sharing = Measurement(
        tool_call_id=shared, item_ids=(shared, shared), fields=(shared,), **common
    )
    separate = Measurement(
        tool_call_id="".join(["", "0"]),
        item_ids=(made, "".join(["0"])),
        fields=(sys.intern("".join(["", "0"])),),
        **common,
    )
    assert sharing == separate
    assert content_digest(sharing) == content_digest(separate)
    assert preferred_copy_key(sharing) == preferred_copy_key(separate)
