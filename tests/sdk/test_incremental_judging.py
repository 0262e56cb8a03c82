"""Incremental judging equals judging the whole set: random traces fed in random batches,
orders and duplicates give the same reports as :func:`judge_trace` over everything."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxledger import semconv as sc
from ctxledger.verdicts import (
    LOSING_VERDICTS,
    Manifest,
    Measurement,
    Report,
    Tolerances,
    first_losses,
    judge_trace,
    sent_order,
)
from ctxledger.verdicts.memory_state import MemoryTraceState

TRACES = ("a" * 32, "b" * 32)
CALLS = tuple(f"call_{i}" for i in range(5))
REQUESTS = tuple(f"req_{i}" for i in range(5))
STAGES = (
    (sc.STAGE_ORIGINAL, 10, False),
    (sc.STAGE_SERIALIZED, 20, False),
    (sc.STAGE_ASSEMBLED, 30, True),
    ("emergency_trim", 35, True),
    (sc.STAGE_SENT, 40, True),
)
NOW = 1_000.0
#: Mostly none; two Claude Code summaries and the GenAI flag.
COMPACTIONS = (None, None, None, "claude_code.summary:1", "claude_code.summary:2",
               sc.GEN_AI_CONVERSATION_COMPACTED)  # fmt: skip
TOLERANCES = Tolerances(incomplete_after_s=100.0)


@st.composite
def measurements(draw: st.DrawFn) -> Measurement:
    stage, order, in_request = draw(st.sampled_from(STAGES))
    items = draw(st.none() | st.integers(0, 4))
    ids = None if items is None else tuple(f"id{i}" for i in range(items))
    return Measurement(
        trace_id=draw(st.sampled_from(TRACES)),
        tool_call_id=draw(st.sampled_from(CALLS)),
        stage=stage,
        order=order,
        chars=draw(st.sampled_from((0, 40, 400, 1000))),
        request_id=draw(st.sampled_from(REQUESTS)) if in_request else None,
        tool_name=draw(st.sampled_from((None, "search", "grep"))),
        step=draw(st.none() | st.integers(0, 4)),
        tokens=draw(st.none() | st.sampled_from((10, 100, 250))),
        # Two encodings: a transition between them loses an unknown number of tokens.
        tokenizer=draw(st.sampled_from(("cl100k_base", "cl100k_base", "o200k_base"))),
        items=items,
        item_ids=ids if draw(st.booleans()) else None,
        sha256=draw(st.none() | st.sampled_from(("d1", "d2"))),
        declared=draw(st.booleans()),
        marker=draw(st.booleans()),
        observed_at=draw(st.sampled_from((850.0, 899.0, 950.0, 990.0))),
        span_id=draw(st.sampled_from(("0" * 16, "1" * 16, "f" * 16))),
        source=draw(st.sampled_from((sc.SOURCE_CTXLEDGER, sc.SOURCE_GENAI))),
        telemetry_cut=draw(st.sampled_from((None, None, None, "cut at 4096 chars"))),
        inferred=draw(st.booleans()),
    )


@st.composite
def manifests(draw: st.DrawFn) -> Manifest:
    listed = st.lists(st.sampled_from(CALLS), unique=True, max_size=4).map(tuple)
    return Manifest(
        trace_id=draw(st.sampled_from(TRACES)),
        request_id=draw(st.sampled_from(REQUESTS)),
        step=draw(st.none() | st.integers(0, 5)),
        tool_call_ids=draw(listed),
        tool_calls=draw(st.none() | listed),
        observed_at=draw(st.sampled_from((900.0, 960.0))),
        span_id=draw(st.sampled_from(("2" * 16, "3" * 16))),
        source=draw(st.sampled_from((sc.SOURCE_CTXLEDGER, sc.SOURCE_OPENINFERENCE))),
        conversation=draw(st.sampled_from((None, "k1", "k2"))),
        sequence=draw(st.none() | st.sampled_from((3, 7, 2**52))),
        issued_calls=draw(st.none() | listed),
        telemetry_cut=draw(st.sampled_from((None, None, None, "content stored off span"))),
        compaction=draw(st.sampled_from(COMPACTIONS)),
    )


@st.composite
def agent_run(draw: st.DrawFn) -> list[Measurement | Manifest]:
    """A run as agents make them: step k issues calls; the request of step k + 1 carries
    the results so far, with some dropped, cut or orphaned, and a manifest."""
    trace = draw(st.sampled_from(TRACES))
    spans: list[Measurement | Manifest] = []
    issued: list[str] = []
    for step in range(1, draw(st.integers(1, 5)) + 1):
        for call in draw(st.lists(st.sampled_from(CALLS), unique=True, max_size=2)):
            if call in issued:
                continue
            issued.append(call)
            for stage, order, _ in STAGES[:2]:
                spans.append(
                    Measurement(trace, call, stage, order, chars=400, items=4, step=step,
                                observed_at=850.0 + step, span_id=f"{step:016x}")
                )  # fmt: skip
        request = f"req_{step}"
        carried = [c for c in issued if draw(st.integers(0, 2)) > 0]
        for call in carried:
            chars = draw(st.sampled_from((400, 400, 120)))
            for stage, order, _ in (STAGES[2], STAGES[4]):
                spans.append(
                    Measurement(trace, call, stage, order, chars=chars, items=4,
                                request_id=request, step=step + 1, observed_at=860.0 + step,
                                span_id=f"{step + 100:016x}")
                )  # fmt: skip
        if draw(st.integers(0, 4)) > 0:
            calls = tuple(c for c in issued if draw(st.integers(0, 3)) > 0)
            spans.append(
                Manifest(trace, request, step=step + 1, tool_call_ids=tuple(carried),
                         tool_calls=calls, observed_at=870.0 + step, span_id=f"{step + 200:016x}")
            )  # fmt: skip
    return spans


@st.composite
def derived_run(draw: st.DrawFn, compacting: bool = False) -> list[Measurement | Manifest]:
    """A run as the collector derives it from GenAI spans: one or two conversations in
    one trace, each request at the time it started (sequence), its response issuing
    calls, tool spans measuring their output (no step), and the next request of the same
    conversation carrying the results so far, some cut, dropped or orphaned. ``compacting``:
    from some step on, the requests follow a compaction that replaced some results."""
    trace = draw(st.sampled_from(TRACES))
    spans: list[Measurement | Manifest] = []
    clock = 1_700_000_000_000_000
    for conversation in draw(st.sampled_from((("k1",), ("k1", "k2")))):
        issued: list[str] = []
        answered: list[str] = []
        steps = draw(st.integers(3 if compacting else 1, 4))
        # From this step on, the requests follow a compaction that replaced what came before
        # (from the third: the first request to carry results is the second).
        compacted_at = draw(st.integers(3, steps)) if compacting else None
        for step in range(1, steps + 1):
            clock += draw(st.integers(1, 3))
            request = f"{conversation}-req-{step}"
            calls = [c for c in draw(st.lists(st.sampled_from(CALLS), unique=True, max_size=2))]
            calls = [f"{conversation}-{c}" for c in calls if f"{conversation}-{c}" not in issued]
            compaction = None
            if compacted_at is not None and step >= compacted_at:
                compaction = f"claude_code.summary:{compacted_at}"
                if step == compacted_at:
                    answered = [c for c in answered if draw(st.integers(0, 2)) == 0]
            carried = [c for c in answered if draw(st.integers(0, 3)) > 0]
            asked = [c for c in issued if c in carried or draw(st.integers(0, 4)) == 0]
            cut = draw(st.sampled_from((None, None, None, None, "invalid JSON at 4096 chars")))
            spans.append(
                Manifest(trace, request, step=step, tool_call_ids=tuple(carried),
                         tool_calls=tuple(asked), observed_at=870.0 + step,
                         span_id=f"{step + 200:016x}", source=sc.SOURCE_GENAI,
                         conversation=conversation, sequence=clock,
                         issued_calls=tuple(calls), telemetry_cut=cut,
                         compaction=compaction)
            )  # fmt: skip
            if cut is None:
                for call in carried:
                    # Mostly the tool's output as it was (a quiet re-send, after the first
                    # request that carries it), sometimes cut.
                    chars = draw(st.sampled_from((400, 400, 120)))
                    spans.append(
                        Measurement(trace, call, sc.STAGE_LLM_INPUT, 40, chars=chars, items=4,
                                    request_id=request, step=step, observed_at=871.0 + step,
                                    span_id=f"{step + 300:016x}", source=sc.SOURCE_GENAI,
                                    sha256=f"{call}-{chars}")
                    )  # fmt: skip
                    read = draw(st.sampled_from((None, None, "kept", "cut")))
                    if read is not None:
                        spans.append(
                            Measurement(trace, call, sc.STAGE_RECEIVED, 50, chars=chars,
                                        request_id=request, step=step,
                                        observed_at=871.0 + step, span_id=f"{step + 500:016x}",
                                        source=sc.SOURCE_GENAI, received=read,
                                        lost_chars=0 if read == "kept" else 60)
                        )  # fmt: skip
            for call in calls:
                issued.append(call)
                if draw(st.integers(0, 3)) > 0:
                    answered.append(call)
                    spans.append(
                        Measurement(trace, call, sc.STAGE_ORIGINAL, 10, chars=400, items=4,
                                    observed_at=872.0 + step, span_id=f"{step + 400:016x}",
                                    source=sc.SOURCE_GENAI, inferred=draw(st.booleans()),
                                    telemetry_cut=draw(st.sampled_from((None, None, "cut"))),
                                    sha256=f"{call}-400")
                    )  # fmt: skip
    return spans


@st.composite
def resending_run(draw: st.DrawFn) -> list[Measurement | Manifest]:
    """A derived conversation as long runs make them: every request re-sends the results
    so far, nearly always exactly as the tool gave them (quiet re-sends, which form no
    journey of their own), now and then cut, dropped, read in part by the server or
    carried without the call; sometimes a second conversation issues the same call."""
    trace = draw(st.sampled_from(TRACES))
    spans: list[Measurement | Manifest] = []
    answered: list[str] = []
    for step in range(1, draw(st.integers(2, 7)) + 1):
        request, call = f"q-req-{step}", f"q-call-{step}"
        carried = [c for c in answered if draw(st.integers(0, 9)) > 0]
        asked = [c for c in carried if draw(st.integers(0, 19)) > 0]
        spans.append(
            Manifest(trace, request, step=step, tool_call_ids=tuple(carried),
                     tool_calls=tuple(asked), observed_at=870.0 + step,
                     span_id=f"{step + 200:016x}", source=sc.SOURCE_GENAI, conversation="q",
                     sequence=10 * step, issued_calls=(call,))
        )  # fmt: skip
        for c in carried:
            # Its stage comes from the request's own span, as derivation gives it.
            chars = draw(st.sampled_from((400,) * 8 + (120,)))
            spans.append(
                Measurement(trace, c, sc.STAGE_LLM_INPUT, 40, chars=chars, items=4,
                            request_id=request, step=step, observed_at=870.0 + step,
                            span_id=f"{step + 200:016x}", source=sc.SOURCE_GENAI,
                            sha256=f"{c}-{chars}")
            )  # fmt: skip
            if draw(st.integers(0, 3)) == 0:
                read = draw(st.sampled_from(("kept", "kept", "cut")))
                spans.append(
                    Measurement(trace, c, sc.STAGE_RECEIVED, 50, chars=chars, request_id=request,
                                step=step, observed_at=870.0 + step,
                                span_id=f"{step + 200:016x}", source=sc.SOURCE_GENAI,
                                received=read, lost_chars=0 if read == "kept" else 60)
                )  # fmt: skip
        if draw(st.integers(0, 9)) == 0:  # the same call issued in another conversation too
            spans.append(
                Manifest(trace, f"other-{step}", tool_call_ids=(), tool_calls=(),
                         observed_at=880.0 + step, span_id=f"{step + 600:016x}",
                         source=sc.SOURCE_GENAI, conversation="other",
                         sequence=draw(st.integers(1, 80)), issued_calls=(call,))
            )  # fmt: skip
        if draw(st.integers(0, 9)) > 0:
            answered.append(call)
            spans.append(
                Measurement(trace, call, sc.STAGE_ORIGINAL, 10, chars=400, items=4,
                            observed_at=872.0 + step, span_id=f"{step + 400:016x}",
                            source=sc.SOURCE_GENAI, sha256=f"{call}-400")
            )  # fmt: skip
    return spans


@st.composite
def batched_traces(draw: st.DrawFn) -> list[tuple[list[Measurement], list[Manifest]]]:
    spans: list[Measurement | Manifest] = draw(
        st.lists(measurements() | manifests(), min_size=1, max_size=40)
        | agent_run().map(lambda run: run[:60])
        | derived_run().map(lambda run: run[:60])
        | derived_run(compacting=True).map(lambda run: run[:60])
        | resending_run()
    )
    # Replays: some spans again, unchanged, anywhere in the stream.
    if spans:
        spans += draw(st.lists(st.sampled_from(spans), max_size=6))
    # Exporters mostly send in the order spans ended; sometimes anything goes.
    in_order = st.just(list(range(len(spans))))
    order = draw(in_order | st.permutations(range(len(spans))))
    cuts = sorted(draw(st.lists(st.integers(0, len(spans)), max_size=max(8, len(spans)))))
    batches = []
    start = 0
    for cut in [*cuts, len(spans)]:
        chunk = [spans[i] for i in order[start:cut]]
        start = max(start, cut)
        batches.append(
            (
                [s for s in chunk if isinstance(s, Measurement)],
                [s for s in chunk if isinstance(s, Manifest)],
            )
        )
    return batches


def whole_set_reports(
    batches: list[tuple[list[Measurement], list[Manifest]]], now: float = NOW
) -> dict[tuple[str, str, str | None], Report]:
    by_trace: dict[str, tuple[list[Measurement], list[Manifest]]] = defaultdict(lambda: ([], []))
    for ms, mans in batches:
        for m in ms:
            by_trace[m.trace_id][0].append(m)
        for man in mans:
            by_trace[man.trace_id][1].append(man)
    reports: dict[tuple[str, str, str | None], Report] = {}
    for ms, mans in by_trace.values():
        for report in judge_trace(ms, mans, tolerances=TOLERANCES, now=now):
            reports[report.key] = report
    return reports


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batched_traces())
def test_incremental_reports_equal_judging_the_whole_set(batches):
    state = MemoryTraceState(TOLERANCES)
    for ms, mans in batches:
        state.ingest(ms, mans, now=NOW)
    assert state.reports == whole_set_reports(batches)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batched_traces(), st.lists(st.floats(900, 1100), min_size=1, max_size=9))
def test_batches_judged_as_time_passes_then_swept_equal_the_whole_set_now(batches, times):
    """Journeys waiting for later stages become incomplete by the sweep alone."""
    state = MemoryTraceState(TOLERANCES)
    clock = sorted(times)
    for index, (ms, mans) in enumerate(batches):
        state.ingest(ms, mans, now=clock[min(index, len(clock) - 1)])
    final = clock[-1] + 150.0
    state.sweep(final)
    assert state.reports == whole_set_reports(batches, now=final)


def test_a_late_original_stage_rejudges_every_journey_of_its_call():
    trace = TRACES[0]
    sent = [
        Measurement(trace, "call_0", sc.STAGE_SENT, 40, chars=100, request_id=r, step=2)
        for r in ("req_1", "req_2")
    ]
    state = MemoryTraceState(TOLERANCES)
    state.ingest(sent, now=NOW)
    assert {r.verdict for r in state.reports.values()} == {sc.VERDICT_INTACT}
    original = Measurement(trace, "call_0", sc.STAGE_ORIGINAL, 10, chars=900, step=1)
    state.ingest([original], now=NOW)
    assert {k[2]: r.verdict for k, r in state.reports.items()} == {
        "req_1": sc.VERDICT_SILENT,
        "req_2": sc.VERDICT_SILENT,
    }


def test_a_manifest_of_a_nearer_step_moves_the_drop_to_it():
    trace = TRACES[0]
    state = MemoryTraceState(TOLERANCES)
    original = Measurement(trace, "call_0", sc.STAGE_ORIGINAL, 10, chars=100, step=1)
    state.ingest([original], now=NOW)
    assert set(state.reports) == {(trace, "call_0", None)}
    later = Manifest(trace, "req_3", step=3, tool_call_ids=())
    state.ingest(manifests=[later], now=NOW)
    assert {k: r.verdict for k, r in state.reports.items()} == {
        (trace, "call_0", "req_3"): sc.VERDICT_DROPPED
    }
    nearer = Manifest(trace, "req_2", step=2, tool_call_ids=())
    state.ingest(manifests=[nearer], now=NOW)
    assert {k: r.verdict for k, r in state.reports.items()} == {
        (trace, "call_0", "req_2"): sc.VERDICT_DROPPED
    }
    expected = judge_trace([original], [later, nearer], tolerances=TOLERANCES, now=NOW)
    assert state.reports == {r.key: r for r in expected}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batched_traces())
def test_each_lost_result_is_first_lost_in_exactly_one_journey(batches):
    """The counts of lost results follow first_losses: one journey per call with a losing
    journey, the earliest sent, the same from incremental reports as from the whole set."""
    state = MemoryTraceState(TOLERANCES)
    for ms, mans in batches:
        state.ingest(ms, mans, now=NOW)
    firsts = first_losses(state.reports.values())
    assert firsts == first_losses(whole_set_reports(batches).values())
    losing = [r for r in state.reports.values() if r.verdict in LOSING_VERDICTS]
    assert {(t, c) for t, c, _ in firsts} == {(r.trace_id, r.tool_call_id) for r in losing}
    assert len(firsts) == len({(t, c) for t, c, _ in firsts})
    for r in losing:
        first = state.reports[next(k for k in firsts if k[:2] == (r.trace_id, r.tool_call_id))]
        assert sent_order(first.step, first.request_id or "") <= sent_order(
            r.step, r.request_id or ""
        )


def test_a_result_re_sent_cut_is_first_lost_at_its_earliest_step():
    reports = [
        Report("t", "call_0", "req_3", sc.VERDICT_SILENT, step=3),
        Report("t", "call_0", "req_2", sc.VERDICT_SILENT, step=2),
        Report("t", "call_0", "req_1", sc.VERDICT_INTACT, step=1),
        Report("t", "call_0", None, sc.VERDICT_ORPHANED),  # no step: sent last
        Report("t", "call_1", "req_9", sc.VERDICT_DECLARED, step=9),  # not lost
    ]
    assert first_losses(reports) == {("t", "call_0", "req_2")}
