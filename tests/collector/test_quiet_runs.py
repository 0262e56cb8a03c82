"""A request's re-sends judged from the request before it (``judge/quiet_runs.py``): in a
long run, each request's carried stages go on from the last request of its conversation
where they can, and the store still judges exactly as the whole set does, whatever is
cut, dropped, read in part, hidden or out of order."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement
from ctxledger_collector.judge.store import Store
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from ctxledger_collector.storage.tables import MEASUREMENTS, RUNS
from tests.collector.test_incremental_store import (
    Batches,
    as_derivation_gives,
    expected_verdicts,
    stored_verdicts,
)
from tests.sdk.test_incremental_judging import NOW, TOLERANCES

TELEMETRY_CUT = "invalid JSON at 4096 chars"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path_factory.mktemp('runs') / 'ctxledger.db'}"
    upgrade(url)
    engine = make_engine(url)
    yield Store(engine, TOLERANCES)
    engine.dispose()


def _stage(trace: str, call: str, step: int, chars: int) -> Measurement:
    return Measurement(trace, call, sc.STAGE_LLM_INPUT, 40, chars=chars, items=4,
                       request_id=f"r-{step}", step=step, observed_at=870.0 + step,
                       span_id=f"{step + 200:016x}", source=sc.SOURCE_GENAI,
                       sha256=f"{call}-{chars}")  # fmt: skip


def _read(stage: Measurement, read: str) -> Measurement:
    return Measurement(stage.trace_id, stage.tool_call_id, sc.STAGE_RECEIVED, 50,
                       chars=stage.chars, request_id=stage.request_id, step=stage.step,
                       observed_at=stage.observed_at, span_id=stage.span_id,
                       source=sc.SOURCE_GENAI, received=read,
                       lost_chars=0 if read == "kept" else 60)  # fmt: skip


def _request(
    trace: str,
    step: int,
    carried: list[str],
    cut: str | None = None,
    issues: bool = True,
    calls: list[str] | None = None,
) -> Manifest:
    """Request ``step``, carrying the results of ``carried`` and the calls of ``calls``
    (``carried``'s when None)."""
    calls = carried if calls is None else calls
    return Manifest(trace, f"r-{step}", step=step, tool_call_ids=tuple(carried),
                    tool_calls=tuple(calls), observed_at=870.0 + step,
                    span_id=f"{step + 200:016x}", source=sc.SOURCE_GENAI, conversation="k",
                    sequence=10 * step, issued_calls=(f"c-{step}",) if issues else (),
                    telemetry_cut=cut)  # fmt: skip


def _original(trace: str, call: str, step: int) -> Measurement:
    return Measurement(trace, call, sc.STAGE_ORIGINAL, 10, chars=400, items=4,
                       observed_at=872.0 + step, span_id=f"{step + 400:016x}",
                       source=sc.SOURCE_GENAI, sha256=f"{call}-400")  # fmt: skip


def long_run(
    trace: str, steps: int, cut_from: dict[str, int] | None = None
) -> list[Measurement | Manifest]:
    """Each request carries every result before it, as the tool gave it (or cut from the
    step ``cut_from`` names), then its call's original arrives."""
    spans: list[Measurement | Manifest] = []
    answered: list[str] = []
    for step in range(1, steps + 1):
        spans.append(_request(trace, step, answered))
        for call in answered:
            cut = (cut_from or {}).get(call, steps + 1) <= step
            spans.append(_stage(trace, call, step, 120 if cut else 400))
        spans.append(_original(trace, f"c-{step}", step))
        answered = [*answered, f"c-{step}"]
    return spans


@st.composite
def varied_long_run(draw: st.DrawFn) -> list[Measurement | Manifest]:
    """A long run where now and then a request drops a result, cuts one from then on,
    carries one without its call, has the server read one in part, or shows nothing it
    carried; an original may never arrive."""
    trace = os.urandom(16).hex()
    spans: list[Measurement | Manifest] = []
    answered: list[str] = []
    cut_from: dict[str, int] = {}
    for step in range(1, draw(st.integers(3, 16)) + 1):
        carried = [c for c in answered if draw(st.integers(0, 30)) > 0]
        hidden = draw(st.integers(0, 12)) == 0
        calls = [c for c in carried if draw(st.integers(0, 15)) > 0]
        spans.append(_request(trace, step, carried, TELEMETRY_CUT if hidden else None, calls=calls))
        for call in [] if hidden else carried:
            if call not in cut_from and draw(st.integers(0, 20)) == 0:
                cut_from[call] = step
            stage = _stage(trace, call, step, 120 if call in cut_from else 400)
            spans.append(stage)
            if draw(st.integers(0, 15)) == 0:
                spans.append(_read(stage, draw(st.sampled_from(("kept", "cut")))))
        if draw(st.integers(0, 12)) > 0:
            spans.append(_original(trace, f"c-{step}", step))
        answered.append(f"c-{step}")
    return spans


def _batches(spans: list[Measurement | Manifest], order: list[int]) -> Batches:
    """Each request with its stages (as its span gives them), each original alone."""
    groups: list[tuple[list[Measurement], list[Manifest]]] = []
    for span in spans:
        if isinstance(span, Manifest):
            groups.append(([], [span]))
        elif span.request_id is None:
            groups.append(([span], []))
        else:
            groups[-1][0].append(span)
    return [groups[i] for i in order]


def _ingest(store: Store, batches: Batches) -> set[str]:
    for ms, mans in batches:
        store.ingest(as_derivation_gives(ms, mans, every=1), now=NOW)
    return {m.trace_id for ms, mans in batches for m in [*ms, *mans]}


def test_a_long_run_judges_each_request_from_the_one_before(store: Store) -> None:
    runs = store.resends.runs
    went_on, anew = runs.went_on, runs.judged_anew
    spans = long_run(os.urandom(16).hex(), 30)
    batches = _batches(spans, list(range(sum(isinstance(s, Manifest) or s.request_id is None
                                             for s in spans))))  # fmt: skip
    traces = _ingest(store, batches)
    assert stored_verdicts(store, traces) == expected_verdicts(batches, NOW)
    # The second request is the first to carry a result; each after it goes on.
    assert (runs.went_on - went_on, runs.judged_anew - anew) == (28, 1)


def test_a_result_cut_from_some_request_on_is_judged_there_then_goes_on(store: Store) -> None:
    runs = store.resends.runs
    went_on, anew = runs.went_on, runs.judged_anew
    spans = long_run(os.urandom(16).hex(), 30, cut_from={"c-3": 12})
    count = sum(isinstance(s, Manifest) or s.request_id is None for s in spans)
    batches = _batches(spans, list(range(count)))
    traces = _ingest(store, batches)
    stored = stored_verdicts(store, traces)
    assert stored == expected_verdicts(batches, NOW)
    cut = {key[2] for key in stored if key[1] == "c-3"}
    assert cut == {"r-4", *(f"r-{s}" for s in range(12, 31))}
    # Request 12 carries a new stage of c-3 where request 11 had another: judged anew.
    assert (runs.went_on - went_on, runs.judged_anew - anew) == (27, 2)


def test_a_result_quiet_before_with_a_new_stage_is_written_whole(store: Store) -> None:
    """Request 7 carries what request 6 did, then the server's account that it read
    call 2's result in part: that journey is written with both its stages."""
    trace = os.urandom(16).hex()
    spans = long_run(trace, 7)
    read = _read(next(s for s in spans if isinstance(s, Measurement) and s.request_id == "r-7"
                      and s.tool_call_id == "c-2"), "cut")  # fmt: skip
    spans.insert(len(spans) - 1, read)  # after request 7's stages, before its original
    count = sum(isinstance(s, Manifest) or s.request_id is None for s in spans)
    batches = _batches(spans, list(range(count)))
    stored = stored_verdicts(store, _ingest(store, batches))
    assert stored == expected_verdicts(batches, NOW)
    # And call 6's result, which first reached the model there.
    written = {("c-2", sc.STAGE_LLM_INPUT), ("c-2", sc.STAGE_RECEIVED), ("c-6", sc.STAGE_LLM_INPUT)}
    assert _written_stages(store, trace, "r-7") == written


def test_a_request_that_arrives_late_is_judged_on_its_own(store: Store) -> None:
    """Request 4 arrives after 5 and 6, carrying what 6 carried: 6 found call 3's result
    quiet (request 5 followed the call then), but request 4 is where it first reached
    the model."""
    trace = os.urandom(16).hex()
    calls = ["c-1", "c-2", "c-3"]
    spans: list[Measurement | Manifest] = []
    for step in (1, 2, 3):
        spans += [_request(trace, step, calls[: step - 1])]
        spans += [_stage(trace, call, step, 400) for call in calls[: step - 1]]
        spans += [_original(trace, f"c-{step}", step)]
    late = [_request(trace, 4, calls, issues=False), *(_stage(trace, c, 4, 400) for c in calls)]
    for step in (5, 6):
        spans += [_request(trace, step, calls, issues=False)]
        spans += [_stage(trace, call, step, 400) for call in calls]
    spans += late
    count = sum(isinstance(s, Manifest) or s.request_id is None for s in spans)
    batches = _batches(spans, list(range(count)))
    stored = stored_verdicts(store, _ingest(store, batches))
    assert stored == expected_verdicts(batches, NOW)
    # Its stage there is written: the journey's evidence, not a re-send.
    assert _written_stages(store, trace, "r-4") == {("c-3", sc.STAGE_LLM_INPUT)}


def _written_stages(store: Store, trace: str, request_id: str) -> set[tuple[str, str]]:
    query = (
        select(MEASUREMENTS.c.tool_call_id, MEASUREMENTS.c.stage)
        .join_from(MEASUREMENTS, RUNS, RUNS.c.id == MEASUREMENTS.c.run_id)
        .where(RUNS.c.trace_id == trace, MEASUREMENTS.c.request_key == request_id)
    )
    with store.engine.connect() as connection:
        return {(c, s) for c, s in connection.execute(query)}


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(varied_long_run(), st.data())
def test_a_varied_long_run_in_any_order_is_judged_as_the_whole_set(
    store: Store, spans: list[Measurement | Manifest], data: st.DataObject
) -> None:
    count = sum(isinstance(s, Manifest) or s.request_id is None for s in spans)
    in_order = st.just(list(range(count)))
    order = data.draw(in_order | in_order | st.permutations(range(count)))
    batches = _batches(spans, order)
    batches += data.draw(st.lists(st.sampled_from(batches), max_size=3))  # replays
    traces = _ingest(store, batches)
    assert stored_verdicts(store, traces) == expected_verdicts(batches, NOW)
