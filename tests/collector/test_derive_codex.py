"""OpenAI's Codex CLI from its own telemetry: spans and log records recorded from the real
Codex (``derive_spans/codex.json``, made by ``derive_spans/record_codex.py``) derived as
the collector does, and judged by the same rules as the SDK's spans. The recording also
holds the bytes of each output the provider stand-in received: what the model read."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxledger import semconv as sc
from ctxledger.verdicts import Measurement, Report, judge_trace
from ctxledger_collector.decoded.batch import DerivedStage
from ctxledger_collector.derive import (
    LogDerivation,
    LogEvent,
    SourceSpan,
    SpanEvent,
    codex,
    derive_span,
    may_derive,
)
from ctxledger_collector.derive.codex_turns import CodexTurns

RECORDED = json.loads((Path(__file__).with_name("derive_spans") / "codex.json").read_text())
READ_BYTES: dict[str, int] = RECORDED["read_bytes"]
#: A piece of evidence, fed to one collector's memory of Codex turns.
Piece = Callable[[CodexTurns], list[DerivedStage]]


def _span(fields: dict[str, Any]) -> SourceSpan:
    events = tuple(SpanEvent(e["name"], e["attributes"]) for e in fields["events"])
    return SourceSpan(**{k: v for k, v in fields.items() if k != "events"}, events=events)


SPANS = [_span(s) for s in RECORDED["spans"]]
#: Each ``codex.tool_result`` log record: its trace and its attributes.
LOGS: list[tuple[str, dict[str, Any]]] = [
    (r["trace_id"], r["attributes"]) for r in RECORDED["logs"]
]


def _span_piece(span: SourceSpan) -> Piece:
    event = codex.tool_result_event(span.events)
    if event is not None:
        return lambda turns: codex.tool_output_stages(span, event, turns)
    return lambda turns: codex.turn_stages(span, turns)


def _log_piece(record: tuple[str, dict[str, Any]]) -> Piece:
    trace_id, attributes = record
    return lambda turns: codex.preview_stages(attributes, trace_id, turns)


PIECES: list[Piece] = [*map(_span_piece, SPANS), *map(_log_piece, LOGS)]


def _fed(pieces: Iterable[Piece], turns: CodexTurns | None = None) -> list[Measurement]:
    turns = turns or CodexTurns()
    return [stage.measurement for piece in pieces for stage in piece(turns)]


def _stored(measurements: Iterable[Measurement]) -> list[Measurement]:
    """One copy per stage of a call, as the store keeps it (the latest observed)."""
    kept: dict[tuple[str, str], Measurement] = {}
    for m in measurements:
        held = kept.get((m.tool_call_id, m.stage))
        if held is None or m.observed_at > held.observed_at:
            kept[(m.tool_call_id, m.stage)] = m
    return list(kept.values())


def _reports(measurements: Iterable[Measurement]) -> dict[str, Report]:
    stored = _stored(measurements)
    reports: dict[str, Report] = {}
    for trace_id in {m.trace_id for m in stored}:
        trace = [m for m in stored if m.trace_id == trace_id]
        now = max(m.observed_at for m in trace) + 3600
        reports.update((r.tool_call_id, r) for r in judge_trace(trace, [], now=now))
    return reports


def _call_id(span: SourceSpan) -> str | None:
    event = codex.tool_result_event(span.events)
    return None if event is None else event.attributes.get("call_id")


def _read_stage(report: Report) -> Measurement:
    (stage,) = [s for s in report.stages if s.stage == sc.STAGE_LLM_INPUT]
    return stage


def test_the_recording_holds_what_derivation_reads() -> None:
    names = {s.name for s in SPANS}
    assert names == {
        "dispatch_tool_call_with_state",
        "stream_request",
        "handle_responses",
        "session_task.turn",
    }
    assert all(may_derive(s.attributes, s.events, s.name, s.service_name) for s in SPANS)
    # The dispatch spans have no attribute of their own; the turn spans need their name.
    assert not any(may_derive(s.attributes) for s in SPANS)
    assert {a["call_id"] for _, a in LOGS} == set(READ_BYTES)
    assert {t for t, _ in LOGS} <= {s.trace_id for s in SPANS}


def test_a_short_output_reached_the_model_whole() -> None:
    report = _reports(_fed(PIECES))["call_short"]
    assert (report.verdict, report.source, report.settled) == (
        sc.VERDICT_INTACT,
        sc.SOURCE_CODEX,
        True,
    )
    original, handed = report.stages
    assert (original.stage, handed.stage) == (sc.STAGE_ORIGINAL, sc.STAGE_LLM_INPUT)
    assert original.bytes == handed.bytes == READ_BYTES["call_short"]
    assert report.tool_name == "exec_command"


def test_each_long_output_is_judged_as_the_model_read_it() -> None:
    """The default policy (10,000 bytes), the config limit alone raised (the call's
    default 10,000 tokens), both raised (whole), the call asking for 3,000 tokens."""
    reports = _reports(_fed(PIECES))
    expected = {
        "call_long": (sc.VERDICT_DECLARED, "10,000 bytes"),
        "call_config": (sc.VERDICT_DECLARED, "10,000 tokens"),
        "call_asked_less": (sc.VERDICT_DECLARED, "max_output_tokens (3000)"),
        "call_both": (sc.VERDICT_INTACT, None),
    }
    for call_id, (verdict, budget) in expected.items():
        report = reports[call_id]
        read = _read_stage(report)
        assert report.verdict == verdict, (call_id, report)
        assert read.bytes is not None
        assert abs(read.bytes - READ_BYTES[call_id]) <= 0.01 * READ_BYTES[call_id], call_id
        original = report.stages[0]
        assert report.lost_chars == original.chars - read.chars
        if budget is not None:
            notes = " ".join(report.notes)
            assert budget in notes and "tool_output_token_limit" in notes, report.notes


@settings(max_examples=60, deadline=None)
@given(st.permutations(PIECES))
def test_the_order_the_evidence_arrives_in_changes_nothing(order: list[Piece]) -> None:
    assert set(_stored(_fed(order))) == set(_stored(_fed(PIECES)))


def test_evidence_sent_again_brings_its_stage_again_for_the_store() -> None:
    """An export retried or replayed from the spool is derived again: the stage written
    from it must come again, or the store would keep only the first, unauditable copy."""
    turns = CodexTurns()
    read = {m for m in _fed(PIECES, turns) if m.stage == sc.STAGE_LLM_INPUT and m.chars}
    for piece in PIECES:
        again = [s.measurement for s in piece(turns)]
        assert {m for m in again if m.stage == sc.STAGE_LLM_INPUT and m.chars} <= read
        assert len({m.trace_id for m in again}) <= 1  # only the stages it was evidence of
    assert read <= set(_fed(PIECES, turns))


def test_any_one_span_of_the_turn_lost_gives_no_reading_rather_than_a_wrong_one() -> None:
    """A span lost in transit, or sent to another collector, leaves the output not
    auditable: the turn's usage no longer adds up, a request was never seen sent, or a
    call issued has no output."""
    long_output = next(s for s in SPANS if _call_id(s) == "call_long")
    turn = [s for s in SPANS if s.trace_id == long_output.trace_id and s is not long_output]
    assert len(turn) >= 6  # sent, usage and call issued twice over, and the turn
    for lost in turn:
        pieces = [_span_piece(s) for s in SPANS if s is not lost] + [*map(_log_piece, LOGS)]
        report = _reports(_fed(pieces))["call_long"]
        assert report.verdict == sc.VERDICT_UNAUDITABLE, (lost.name, lost.attributes)
        assert report.lost_chars == 0


def test_a_call_id_that_comes_again_in_another_turn_reads_each_turn_alone() -> None:
    """The model chooses call ids; the same one in two turns (two traces) must never lend
    one turn's preview or stage to the other. Seen first in the e2e tests, which reuse a
    call id across runs in one collector process."""
    turns = CodexTurns()
    first = {m.trace_id for m in _fed(PIECES, turns) if m.tool_call_id == "call_long"}
    again = "f" * 32
    trace_id, attributes = next(r for r in LOGS if r[1]["call_id"] == "call_long")
    later = codex.preview_stages(attributes, again, turns)  # another turn, same call id
    assert later == [] and first == {trace_id}
    long_output = next(s for s in SPANS if _call_id(s) == "call_long")
    elsewhere = dataclasses.replace(long_output, trace_id=again)
    stages = _span_piece(elsewhere)(turns)
    assert {s.measurement.trace_id for s in stages} == {again}
    assert all(s.measurement.telemetry_cut for s in stages if s.measurement.stage == "llm_input")


def test_without_its_log_record_a_long_output_stays_unauditable_naming_the_setting() -> None:
    reports = _reports(_fed(map(_span_piece, SPANS)))
    for call_id in ("call_long", "call_config", "call_both", "call_asked_less"):
        report = reports[call_id]
        assert report.verdict == sc.VERDICT_UNAUDITABLE and report.lost_chars == 0
        assert any("[otel] exporter" in note for note in report.notes), report.notes


def test_two_long_outputs_carried_by_one_request_are_not_told_apart() -> None:
    long_span = next(s for s in SPANS if _call_id(s) == "call_long")
    event = codex.tool_result_event(long_span.events)
    assert event is not None
    twin_event = SpanEvent(event.name, {**event.attributes, "call_id": "call_twin"})
    twin = dataclasses.replace(long_span, span_id="ef" * 8, events=(twin_event,))
    trace_id, attributes = next(r for r in LOGS if r[1]["call_id"] == "call_long")
    twin_log = (trace_id, {**attributes, "call_id": "call_twin"})
    twin_pieces = [_span_piece(twin), _log_piece(twin_log)]
    # The twin arrives first (as Codex exports spans in the order they end), or last:
    # what was read of the other from that usage is withdrawn.
    for order in ([*twin_pieces, *PIECES], [*PIECES, *twin_pieces]):
        reports = _reports(_fed(order))
        assert reports["call_long"].verdict == sc.VERDICT_UNAUDITABLE
        assert reports["call_twin"].verdict == sc.VERDICT_UNAUDITABLE
        assert reports["call_config"].verdict == sc.VERDICT_DECLARED  # another turn


def test_the_collector_reads_it_through_its_span_and_log_derivation() -> None:
    """The same through :func:`derive_span` and :class:`LogDerivation` (the collector's
    shared memory of turns)."""
    stages: list[DerivedStage] = []
    for span in SPANS:
        derived = derive_span(span)
        assert derived is not None, span.name
        stages += derived.stages
    logs = LogDerivation()
    for trace_id, attributes in LOGS:
        event = LogEvent(codex.TOOL_RESULT_EVENT, 0, attributes, None, False, trace_id=trace_id)
        derived = logs.derive(event)
        stages += derived.stages if derived is not None else []
    reports = _reports(s.measurement for s in stages)
    assert reports["call_long"].verdict == sc.VERDICT_DECLARED
    assert reports["call_both"].verdict == sc.VERDICT_INTACT


def _dispatch(attributes: dict[str, Any]) -> SourceSpan:
    event = SpanEvent("event otel/src/tool_result.rs:54", attributes)
    name = "dispatch_tool_call_with_state"
    return SourceSpan("ab" * 16, "cd" * 8, name, 1, 2, {}, events=(event,))


def test_an_event_without_a_call_or_a_size_gives_nothing() -> None:
    named = {"event.name": codex.TOOL_RESULT_EVENT}
    assert derive_span(_dispatch({**named, "output_length": "12"})) is None
    assert derive_span(_dispatch({**named, "call_id": "c1", "output_length": "-3"})) is None
    assert derive_span(_dispatch({**named, "call_id": "c1"})) is None
    derived = derive_span(_dispatch({**named, "call_id": "c1", "output_length": 12}))
    assert derived is not None and [s.measurement.bytes for s in derived.stages] == [12, 12]


def test_a_preview_without_text_or_with_odd_arguments_gives_nothing_and_never_raises() -> None:
    turns = CodexTurns()
    trace = "ab" * 16
    assert codex.preview_stages({"call_id": "c1"}, trace, turns) == []
    assert codex.preview_stages({"call_id": "c1", "output": ""}, trace, turns) == []
    assert codex.preview_stages({"call_id": "c1", "output": "x"}, None, turns) == []
    whole = {"call_id": "c1", "output": "x", "output_truncated": False}
    assert codex.preview_stages(whole, trace, turns) == []
    odd = {"call_id": "c1", "output": "x", "arguments": "{not json max_output_tokens"}
    assert codex.preview_stages(odd, trace, turns) == []
    assert codex.preview_stages({**odd, "arguments": '["max_output_tokens"]'}, trace, turns) == []
