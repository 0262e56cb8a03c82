"""OpenAI's Codex CLI from its own traces: spans recorded from the real Codex
(``derive_spans/codex.json``, made by ``derive_spans/record_codex.py``) decoded and
derived as the collector does, and judged by the same rules as the SDK's spans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxledger import semconv as sc
from ctxledger.verdicts import Report, judge_trace
from ctxledger_collector.derive import SourceSpan, SpanEvent, derive_span, may_derive
from ctxledger_collector.derive.codex import (
    CODEX_CUT_UNKNOWN,
    SMALLEST_DEFAULT_LIMIT,
    TOOL_RESULT_EVENT,
)

RECORDED = Path(__file__).with_name("derive_spans") / "codex.json"


def recorded() -> list[SourceSpan]:
    return [
        SourceSpan(
            **{k: v for k, v in s.items() if k != "events"},
            events=tuple(SpanEvent(e["name"], e["attributes"]) for e in s["events"]),
        )
        for s in json.loads(RECORDED.read_text())
    ]


def judged(spans: list[SourceSpan]) -> dict[str, Report]:
    """Each call's one journey (Codex's telemetry names no request)."""
    reports: dict[str, Report] = {}
    for span in spans:
        derived = derive_span(span)
        assert derived is not None, span.name
        measurements = [s.measurement for s in derived.stages]
        for report in judge_trace(measurements, [], now=span.observed_at + 3600):
            reports[report.tool_call_id] = report
    return reports


def test_the_recorded_spans_are_codexs_tool_dispatches_and_are_derived() -> None:
    spans = recorded()
    assert {s.name for s in spans} == {"dispatch_tool_call_with_state"}
    # They carry no attribute of their own: their event says what derivation reads.
    assert all(may_derive(s.attributes, s.events) for s in spans)
    assert not any(may_derive(s.attributes) for s in spans)


def test_a_short_output_reached_the_model_whole() -> None:
    report = judged(recorded())["call_short"]
    assert (report.verdict, report.source, report.settled) == (
        sc.VERDICT_INTACT,
        sc.SOURCE_CODEX,
        True,
    )
    original, handed = report.stages
    assert (original.stage, handed.stage) == (sc.STAGE_ORIGINAL, sc.STAGE_LLM_INPUT)
    assert original.bytes == handed.bytes and original.bytes is not None
    assert original.bytes < SMALLEST_DEFAULT_LIMIT
    assert report.tool_name == "exec_command"


def test_a_long_output_is_unauditable_naming_the_settings_that_decide() -> None:
    report = judged(recorded())["call_long"]
    assert (report.verdict, report.settled) == (sc.VERDICT_UNAUDITABLE, True)
    assert report.lost_chars == 0  # never a loss the telemetry cannot show
    original = report.stages[0]
    assert original.bytes is not None and original.bytes > 260_000  # the 260,001 printed
    assert any(CODEX_CUT_UNKNOWN in note for note in report.notes), report.notes


def _span(attributes: dict[str, Any]) -> SourceSpan:
    event = SpanEvent("event otel/src/tool_result.rs:54", attributes)
    name = "dispatch_tool_call_with_state"
    return SourceSpan("ab" * 16, "cd" * 8, name, 1, 2, {}, events=(event,))


def test_an_event_without_a_call_or_a_size_gives_nothing() -> None:
    named = {"event.name": TOOL_RESULT_EVENT}
    assert derive_span(_span({**named, "output_length": "12"})) is None
    assert derive_span(_span({**named, "call_id": "c1", "output_length": "-3"})) is None
    assert derive_span(_span({**named, "call_id": "c1"})) is None
    derived = derive_span(_span({**named, "call_id": "c1", "output_length": 12}))
    assert derived is not None and [s.measurement.bytes for s in derived.stages] == [12, 12]
