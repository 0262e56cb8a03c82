"""Stages read back once are taken from memory in later batches only while the stored
row is the same copy: a copy another process wrote since, or a row deleted, is read
again. The memory is bounded by records and by the ids and fields they hold."""

from __future__ import annotations

from sqlalchemy import text

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedManifest, DecodedMeasurement
from ctxledger_collector.judge.store import Store
from ctxledger_collector.judge.stored_stages import STORED_STAGES, StoredStages

TRACE = "e" * 32


def _original(call_id: str, chars: int) -> Measurement:
    return Measurement(
        TRACE, call_id, sc.STAGE_ORIGINAL, 10, chars=chars, items=4, observed_at=900.0,
        item_ids=("a", "b", "c", "d"),
    )  # fmt: skip


def _request(request_id: str, step: int, results: tuple[str, ...]) -> Manifest:
    return Manifest(TRACE, request_id, step=step, tool_call_ids=results, tool_calls=results)


def _ingest(store: Store, *records: Measurement | Manifest) -> dict[str, tuple[str, int]]:
    stages = [DecodedMeasurement(r, {}, None) for r in records if isinstance(r, Measurement)]
    manifests = [DecodedManifest(r, {}, None) for r in records if isinstance(r, Manifest)]
    batch = DecodedBatch(measurements=stages, manifests=manifests)
    outcome = store.ingest(batch, now=1_000.0)
    return {r.request_id or "": (r.verdict, r.lost_chars) for r in outcome.reports}


def _sent(call_id: str, request_id: str, step: int, chars: int) -> Measurement:
    return Measurement(
        TRACE, call_id, sc.STAGE_SENT, 40, chars=chars, items=4, request_id=request_id,
        step=step, observed_at=950.0, item_ids=("a", "b", "c", "d"),
    )  # fmt: skip


def test_a_stage_another_process_rewrote_is_read_again(store: Store) -> None:
    _ingest(store, _original("c1", 400), _request("r1", 2, ("c1",)), _sent("c1", "r1", 2, 400))
    assert len(STORED_STAGES) > 0
    # Another collector process stores a preferred copy of the original stage: 1,000 chars.
    with store.engine.begin() as connection:
        connection.execute(
            text(
                "UPDATE measurements SET chars = 1000, copy_digest = copy_digest + 1 "
                "WHERE tool_call_id = 'c1' AND stage = 'original'"
            )
        )
    judged = _ingest(store, _request("r2", 3, ("c1",)), _sent("c1", "r2", 3, 400))
    assert judged["r2"] == (sc.VERDICT_SILENT, 600)  # judged against 1,000 chars, not 400


def test_memory_is_bounded_by_records_and_by_names() -> None:
    stages = StoredStages(max_records=3, max_names=10)
    for n in range(5):
        stages.put((n,), (0,), _original(f"c{n}", 10))  # 4 ids each
    assert len(stages) == 2  # 10 names hold two records of 4
    assert stages.get((4,), (0,)) is not None and stages.get((0,), (0,)) is None
    assert stages.get((4,), (1,)) is None  # another copy of the row
    many = Measurement(TRACE, "big", sc.STAGE_ORIGINAL, 10, chars=1, item_ids=("x",) * 5_000)
    stages.put(("big",), (0,), many)
    assert stages.get(("big",), (0,)) is None
