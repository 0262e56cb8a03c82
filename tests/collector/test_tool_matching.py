"""Tool spans without a call id are matched to the calls LLM responses issued by
signature and order within the trace, whatever order the spans arrive in, on SQLite and
PostgreSQL; a later arrival that changes the order moves the match."""

from __future__ import annotations

import itertools
import os
from dataclasses import replace

from sqlalchemy import select

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Tolerances, judge_trace
from ctxledger_collector.decoded.batch import (
    DecodedBatch,
    DecodedManifest,
    DecodedMeasurement,
    DerivedStage,
    IssuedCall,
    UnmatchedTool,
)
from ctxledger_collector.judge.store import Store
from ctxledger_collector.judge.tool_matching import pair
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from ctxledger_collector.storage.tables import REPORTS, RUNS

SIGNATURE = 77


def test_pairing_is_by_order_on_both_sides():
    assert pair([(20, "b"), (10, "a")], [(5, 2), (1, 1)]) == {1: "a", 2: "b"}
    assert pair([(10, "a")], [(5, 2), (1, 1)]) == {1: "a"}


def _records(trace: str) -> tuple[list[DecodedBatch], list[Measurement], list[Manifest]]:
    def output(span: int, chars: int) -> Measurement:
        return Measurement(trace, "", sc.STAGE_ORIGINAL, 10, chars=chars, items=chars // 10,
                           span_id=f"{span:016x}", source=sc.SOURCE_OPENINFERENCE,
                           inferred=True, observed_at=900.0 + span)  # fmt: skip

    first, second = output(1, 400), output(2, 800)
    issuer = Manifest(trace, "r1", step=1, conversation="k", sequence=100,
                      issued_calls=("call_a", "call_b"), span_id="a" * 16)  # fmt: skip
    follows = Manifest(trace, "r2", step=2, conversation="k", sequence=300,
                       tool_call_ids=("call_a", "call_b"), tool_calls=("call_a", "call_b"),
                       span_id="b" * 16)  # fmt: skip
    carried = [
        Measurement(trace, c, sc.STAGE_LLM_INPUT, 40, chars=n, items=n // 10, request_id="r2",
                    step=2, span_id="c" * 16, source=sc.SOURCE_OPENINFERENCE)
        for c, n in (("call_a", 400), ("call_b", 200))
    ]  # fmt: skip
    batches = [
        DecodedBatch(unmatched=[UnmatchedTool(SIGNATURE, 250, DerivedStage(second))]),
        DecodedBatch(
            manifests=[DecodedManifest(issuer, {}, None)],
            issued=[
                IssuedCall(trace, c, "r1", SIGNATURE, 100_000 + i)
                for i, c in enumerate(("call_a", "call_b"))
            ],
        ),
        DecodedBatch(
            measurements=[DecodedMeasurement(m, {}, None) for m in carried],
            manifests=[DecodedManifest(follows, {}, None)],
        ),
        DecodedBatch(unmatched=[UnmatchedTool(SIGNATURE, 150, DerivedStage(first))]),
    ]
    # The whole set, matched by hand: the earlier tool run answers the earlier call.
    matched = [replace(first, tool_call_id="call_a"), replace(second, tool_call_id="call_b")]
    return batches, [*matched, *carried], [issuer, follows]


def test_the_store_matches_tool_spans_without_ids_in_any_arrival_order(database_url: str):
    upgrade(database_url)
    engine = make_engine(database_url)
    store = Store(engine, Tolerances())
    try:
        for order in itertools.permutations(range(4)):
            trace = os.urandom(16).hex()
            batches, measurements, manifests = _records(trace)
            for index in order:
                store.ingest(batches[index], now=1000.0)
            expected = {
                (r.tool_call_id, r.request_id or ""): r.verdict
                for r in judge_trace(measurements, manifests, now=1000.0)
            }
            query = (
                select(REPORTS.c.tool_call_id, REPORTS.c.request_key, REPORTS.c.verdict)
                .join_from(REPORTS, RUNS, RUNS.c.id == REPORTS.c.run_id)
                .where(RUNS.c.trace_id == trace)
            )
            with engine.connect() as connection:
                stored = {(c, r): v for c, r, v in connection.execute(query)}
            assert stored == expected, order
            assert stored[("call_b", "r2")] == sc.VERDICT_SILENT
    finally:
        engine.dispose()
