"""Quiet re-sends in the store: a derived request that carries a result exactly as the tool
gave it, above the request where the call's result first reached the model, is neither
written nor judged, and the store still judges as the whole set does."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import func, select

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, judge_trace
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedManifest, DecodedMeasurement
from ctxledger_collector.judge.store import Store
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from ctxledger_collector.storage.tables import MEASUREMENTS
from tests.collector.test_incremental_store import as_derivation_gives, stored_verdicts
from tests.sdk.test_incremental_judging import NOW, TOLERANCES

Records = tuple[list[Measurement], list[Manifest]]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    upgrade(url)
    engine = make_engine(url)
    yield Store(engine, TOLERANCES)
    engine.dispose()


def _request(trace: str, step: int, carried: list[str], issued: str | None, conversation: str = "k"
             ) -> Records:  # fmt: skip
    request = f"{conversation}-req-{step}"
    manifest = Manifest(trace, request, step=step, tool_call_ids=tuple(carried),
                        tool_calls=tuple(carried), observed_at=800.0 + step,
                        span_id=f"{step + 100:016x}", source=sc.SOURCE_GENAI,
                        conversation=conversation, sequence=10 * step,
                        issued_calls=(issued,) if issued else ())  # fmt: skip
    stages = [  # from the request's own span, as derivation gives them
        Measurement(trace, call, sc.STAGE_LLM_INPUT, 40, chars=400, items=4, request_id=request,
                    step=step, observed_at=800.0 + step, span_id=f"{step + 100:016x}",
                    source=sc.SOURCE_GENAI, sha256=f"{call}-whole")
        for call in carried
    ]  # fmt: skip
    return stages, [manifest]


def _original(trace: str, call: str, step: int) -> Records:
    return [
        Measurement(trace, call, sc.STAGE_ORIGINAL, 10, chars=400, items=4,
                    observed_at=802.0 + step, span_id=f"{step + 300:016x}",
                    source=sc.SOURCE_GENAI, sha256=f"{call}-whole")
    ], []  # fmt: skip


def _ingest(store: Store, records: list[Records], carried: bool = False) -> None:
    """Each span a batch; with ``carried``, each request's stages carried by its manifest
    (as derivation hands a long run's re-sent results)."""
    for stages, manifests in records:
        if carried:
            batch = as_derivation_gives(stages, manifests, every=1)
            assert not batch.measurements or not manifests
        else:
            batch = DecodedBatch(
                measurements=[DecodedMeasurement(m, {}, None) for m in stages],
                manifests=[DecodedManifest(m, {}, None) for m in manifests],
            )
        store.ingest(batch, now=NOW)


def _whole(trace: str, records: list[Records]) -> dict[tuple[str, str, str | None], str]:
    stages = [m for ms, _ in records for m in ms]
    manifests = [m for _, mans in records for m in mans]
    return {
        r.key: r.verdict for r in judge_trace(stages, manifests, tolerances=TOLERANCES, now=NOW)
    }


def _stored(store: Store, trace: str) -> dict[tuple[str, str, str | None], str]:
    return {key: row[0] for key, row in stored_verdicts(store, {trace}).items()}


def _llm_input_rows(store: Store) -> int:
    query = select(func.count()).where(MEASUREMENTS.c.stage == sc.STAGE_LLM_INPUT)
    with store.engine.connect() as connection:
        return int(connection.execute(query).scalar_one())


def test_a_long_conversation_stores_and_judges_each_result_once(store: Store) -> None:
    trace, steps = os.urandom(16).hex(), 12
    records: list[Records] = []
    answered: list[str] = []
    for step in range(1, steps + 1):
        call = f"call-{step}"
        records += [_request(trace, step, list(answered), call), _original(trace, call, step)]
        answered.append(call)
    _ingest(store, records)
    stored = _stored(store, trace)
    assert stored == _whole(trace, records)
    # One journey per result, where it first reached the model; the last call's result
    # reached no request.
    assert {k[1:] for k in stored if k[2]} == {
        (f"call-{i}", f"k-req-{i + 1}") for i in range(1, steps)
    }
    assert set(stored.values()) == {sc.VERDICT_INTACT, sc.VERDICT_INCOMPLETE}
    assert _llm_input_rows(store) == steps - 1  # the re-sends were not written


def test_a_re_send_is_kept_while_only_a_request_without_the_result_follows_the_call(
    store: Store,
) -> None:
    """The request after the call dropped its result: a later request that carries it is
    its only journey, and stays one when another conversation turns out to have issued
    the call first (the request after the call is then another)."""
    trace = os.urandom(16).hex()
    records = [
        _request(trace, 1, [], "call-1"),
        _original(trace, "call-1", 1),
        _request(trace, 2, [], None),
        _request(trace, 3, ["call-1"], None),
        _request(trace, 4, ["call-1"], None),
        _request(trace, 0, [], "call-1", conversation="other"),
    ]
    _ingest(store, records)
    stored = _stored(store, trace)
    assert stored == _whole(trace, records)
    assert stored[(trace, "call-1", "k-req-3")] == sc.VERDICT_INTACT
    assert sc.VERDICT_INCOMPLETE not in stored.values()


@pytest.mark.parametrize("originals_last", [False, True])
def test_stages_carried_by_their_manifest_are_written_where_they_say_something(
    store: Store, originals_last: bool
) -> None:
    """Derivation hands a re-sent result's stage over on its request's manifest: the
    store writes those that are not quiet (a copy cut from request 6 on, every re-send
    while the call's original has not arrived) and judges as the whole set does."""
    trace, steps = os.urandom(16).hex(), 10
    requests: list[Records] = []
    originals: list[Records] = []
    answered: list[str] = []
    for step in range(1, steps + 1):
        stages, manifests = _request(trace, step, list(answered), f"call-{step}")
        cut = [
            replace(m, chars=120, sha256="call-3-cut")
            if m.tool_call_id == "call-3" and step >= 6
            else m
            for m in stages
        ]
        requests.append((cut, manifests))
        originals.append(_original(trace, f"call-{step}", step))
        answered.append(f"call-{step}")
    records = (
        [*requests, *originals]
        if originals_last
        else [r for pair in zip(requests, originals, strict=True) for r in pair]
    )
    _ingest(store, records, carried=True)
    _judged_with_call_3_changed_from_request_6(store, trace, records, steps)
    written = _llm_input_rows(store)
    if originals_last:  # nothing could be told quiet: every stage written
        assert written == sum(len(stages) for stages, _ in requests)
    else:  # each result's first journey, and the cut copies
        assert written == steps - 1 + (steps - 5)


def _judged_with_call_3_changed_from_request_6(
    store: Store, trace: str, records: list[Records], steps: int
) -> None:
    """As the whole set; call-3's journeys: its first, and every request from 6 on."""
    stored = _stored(store, trace)
    assert stored == _whole(trace, records)
    cut_journeys = {k[2] for k in stored if k[1] == "call-3" and k[2]}
    assert cut_journeys == {"k-req-4", *(f"k-req-{s}" for s in range(6, steps + 1))}
    assert stored[(trace, "call-3", "k-req-6")] != sc.VERDICT_INTACT


def test_a_journey_carried_whole_is_written_whole_where_one_stage_says_something(
    store: Store,
) -> None:
    """Each request's results carry an ``llm_input`` and a ``received`` stage, both handed
    over on the manifest; where the server read part of a result the copy sent whole
    (call-3 from request 6 on), the journey is written with both its stages."""
    trace, steps = os.urandom(16).hex(), 10
    records: list[Records] = []
    answered: list[str] = []
    for step in range(1, steps + 1):
        stages, manifests = _request(trace, step, list(answered), f"call-{step}")
        received = [
            replace(m, stage=sc.STAGE_RECEIVED, order=50, received="kept", sha256=None)
            for m in stages
        ]
        read = [
            replace(m, received="cut", lost_chars=60)
            if m.tool_call_id == "call-3" and step >= 6
            else m
            for m in received
        ]
        records += [([*stages, *read], manifests), _original(trace, f"call-{step}", step)]
        answered.append(f"call-{step}")
    _ingest(store, records, carried=True)
    _judged_with_call_3_changed_from_request_6(store, trace, records, steps)
    assert _llm_input_rows(store) == steps - 1 + (steps - 5)
