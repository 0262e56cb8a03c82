"""Derivation, pure: recorded spans of each real emitter (``derive_spans/*.json``, made by
``derive_spans/record.py``) and the older forms real packages emit, in; rule records out,
judged by the same rules as the SDK's spans."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Report, judge_trace
from ctxledger_collector.derive import Derived, SourceSpan, SpanEvent, derive_span
from ctxledger_collector.derive.tool_outputs import arguments_signature
from ctxledger_collector.ingest.otlp_decode import decode_export_request

RECORDED = Path(__file__).with_name("derive_spans")
TRACE = "ab" * 16
ROWS = json.dumps([{"id": f"ord-{i}", "status": "paid"} for i in range(40)])


def recorded(name: str) -> list[SourceSpan]:
    spans = json.loads((RECORDED / f"{name}.json").read_text())
    return [
        SourceSpan(
            **{k: v for k, v in s.items() if k != "events"},
            events=tuple(SpanEvent(e["name"], e["attributes"]) for e in s["events"]),
        )
        for s in spans
    ]


def span(span_id: str, attributes: dict[str, Any], start: int = 1, **kwargs: Any) -> SourceSpan:
    return SourceSpan(
        trace_id=TRACE,
        span_id=span_id * 16 if len(span_id) == 1 else span_id,
        name="span",
        start_time_unix_nano=start * 1_000_000,
        end_time_unix_nano=start * 1_000_000 + 500,
        attributes=attributes,
        **kwargs,
    )


def derive_all(spans: list[SourceSpan]) -> tuple[list[Measurement], list[Manifest], Derived]:
    measurements: list[Measurement] = []
    manifests: list[Manifest] = []
    rest = Derived()
    for one in spans:
        derived = derive_span(one)
        if derived is None:
            continue
        measurements += [s.measurement for s in derived.stages]
        manifests += [derived.manifest] if derived.manifest else []
        rest.issued += derived.issued
        rest.unmatched += derived.unmatched
    return measurements, manifests, rest


def judged(spans: list[SourceSpan]) -> dict[str, list[Report]]:
    """Reports per trace, the journeys in a request only."""
    measurements, manifests, _ = derive_all(spans)
    by_trace: dict[str, tuple[list[Measurement], list[Manifest]]] = defaultdict(lambda: ([], []))
    for m in measurements:
        by_trace[m.trace_id][0].append(m)
    for man in manifests:
        by_trace[man.trace_id][1].append(man)
    return {
        trace: [r for r in judge_trace(ms, mans) if r.request_id is not None]
        for trace, (ms, mans) in by_trace.items()
    }


@pytest.mark.parametrize(
    ("emitter", "source"),
    [
        ("openai_v2", sc.SOURCE_GENAI),
        ("openinference", sc.SOURCE_OPENINFERENCE),
        ("openllmetry", sc.SOURCE_GENAI),
    ],
)
def test_each_emitters_recorded_spans_give_the_verdicts(emitter: str, source: str) -> None:
    verdicts = {
        tuple(sorted((r.tool_call_id, r.verdict) for r in reports))
        for reports in judged(recorded(emitter)).values()
    }
    assert verdicts == {
        (("call_row_cut", sc.VERDICT_SILENT),),
        (("call_orphan", sc.VERDICT_ORPHANED),),
    }
    for reports in judged(recorded(emitter)).values():
        for report in reports:
            assert source in report.source
            if report.verdict == sc.VERDICT_SILENT:
                assert report.lost_items == 25
                assert len(report.lost_item_ids) == 25


def test_the_three_emitters_derive_the_same_records() -> None:
    """Sizes, digests, steps and manifests do not depend on who recorded the spans."""

    def shape(emitter: str) -> list[tuple[Any, ...]]:
        ms, mans, _ = derive_all(recorded(emitter))
        stages = sorted(
            (m.tool_call_id, m.stage, m.step, m.chars, m.items, m.canonical_sha256) for m in ms
        )
        requests = sorted(
            (m.step, m.tool_call_ids, m.tool_calls, m.issued_calls, m.conversation) for m in mans
        )
        return [*stages, *requests]

    assert shape("openai_v2") == shape("openinference") == shape("openllmetry")


# --- the older forms ----------------------------------------------------------------------


def openllmetry_legacy(call: str, result: str) -> list[SourceSpan]:
    """What OpenLLMetry up to 0.54 set: gen_ai.prompt.{i}.* / gen_ai.completion.{i}.*."""
    first = span("1", {
        "llm.request.type": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You help.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "refunds?",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.id": call,
        "gen_ai.completion.0.tool_calls.0.name": "search_orders",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"query": "refunds"}',
    }, start=1)  # fmt: skip
    second = span("2", {
        "llm.request.type": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You help.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "refunds?",
        "gen_ai.prompt.2.role": "assistant",
        "gen_ai.prompt.2.tool_calls.0.id": call,
        "gen_ai.prompt.2.tool_calls.0.name": "search_orders",
        "gen_ai.prompt.2.tool_calls.0.arguments": '{"query": "refunds"}',
        "gen_ai.prompt.3.role": "tool", "gen_ai.prompt.3.tool_call_id": call,
        "gen_ai.prompt.3.content": result,
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "done",
    }, start=3)  # fmt: skip
    tool = span("3", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_orders",
        "gen_ai.tool.call.id": call, "gen_ai.tool.call.result": ROWS,
    }, start=2)  # fmt: skip
    return [first, tool, second]


def test_openllmetrys_legacy_indexed_attributes() -> None:
    cut = json.dumps(json.loads(ROWS)[:15])
    (reports,) = judged(openllmetry_legacy("call_1", cut)).values()
    assert [(r.verdict, r.source) for r in reports] == [
        (sc.VERDICT_SILENT, f"{sc.SOURCE_GENAI}+{sc.SOURCE_OPENLLMETRY}")
    ]


def test_per_message_span_events() -> None:
    """The older GenAI events on the span: a JSON body under gen_ai.event.content (as
    Azure AI Inference sends them) or flat fields, and gen_ai.choice for the answer."""
    first = span("1", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"},
                 start=1, events=(
        SpanEvent("gen_ai.user.message", {"gen_ai.event.content": '{"content": "refunds?"}'}),
        SpanEvent("gen_ai.choice", {"gen_ai.event.content": json.dumps({
            "index": 0, "finish_reason": "tool_calls",
            "message": {"tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "search_orders", "arguments": "{}"}}]}})}),
    ))  # fmt: skip
    second = span("2", {"gen_ai.operation.name": "chat"}, start=2, events=(
        SpanEvent("gen_ai.user.message", {"content": "refunds?"}),
        SpanEvent("gen_ai.assistant.message", {"tool_calls": json.dumps(
            [{"id": "call_1", "function": {"name": "search_orders", "arguments": "{}"}}])}),
        SpanEvent("gen_ai.tool.message", {"id": "call_1", "content": ROWS}),
    ))  # fmt: skip
    ms, mans, _ = derive_all([first, second])
    assert [(m.tool_call_id, m.items, m.source) for m in ms] == [
        ("call_1", 40, sc.SOURCE_GENAI_EVENTS)
    ]
    assert mans[0].issued_calls == ("call_1",)
    assert mans[1].tool_call_ids == mans[1].tool_calls == ("call_1",)
    assert mans[0].conversation == mans[1].conversation


def test_tool_returns_under_role_user_with_a_result_key() -> None:
    """pydantic-ai sends tool returns as role user, the value under ``result``."""
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "refunds?"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "s"}]},
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "c1", "result": ROWS}]},
    ]
    derived = derive_span(span("1", {
        "gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(messages),
    }))  # fmt: skip
    assert derived is not None and derived.manifest is not None
    assert derived.manifest.tool_call_ids == ("c1",)
    assert derived.manifest.step == 2
    assert [s.measurement.items for s in derived.stages] == [40]


# --- what the telemetry itself cut ----------------------------------------------------------


def chat(span_id: str, messages: list[dict[str, Any]], start: int, **attrs: Any) -> SourceSpan:
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(messages)}
    return span(span_id, {**attributes, **attrs}, start=start)


OPENING = [
    {"role": "system", "parts": [{"type": "text", "content": "You help."}]},
    {"role": "user", "parts": [{"type": "text", "content": "refunds?"}]},
]
CALL = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "s"}]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": ROWS}]}


def test_messages_cut_by_the_length_limit_make_the_request_unauditable() -> None:
    whole = json.dumps([*OPENING, CALL, RESULT])
    limit = 1000  # not a common one: the JSON no longer parsing gives the cut away
    cut = span("2", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": whole[:limit]},
               start=3)  # fmt: skip
    issuer = chat("1", OPENING, 1, **{"gen_ai.output.messages": json.dumps([CALL])})
    tool = span("3", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "c1",
                      "gen_ai.tool.call.result": ROWS}, start=2)  # fmt: skip
    ms, mans, _ = derive_all([issuer, tool, cut])
    cut_manifest = next(m for m in mans if m.request_id == "2" * 16)
    assert cut_manifest.telemetry_cut is not None and "not valid JSON" in cut_manifest.telemetry_cut
    assert cut_manifest.conversation == mans[0].conversation  # the opening survived the cut
    (report,) = [r for r in judge_trace(ms, mans) if r.request_id]
    assert report.verdict == sc.VERDICT_UNAUDITABLE
    assert "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in " ".join(report.notes)


def test_a_tool_result_exactly_at_a_common_limit_is_not_trusted() -> None:
    tool = span("3", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "c1",
                      "gen_ai.tool.call.result": "x" * 4096})  # fmt: skip
    (stage,) = derive_span(tool).stages  # type: ignore[union-attr]
    assert stage.measurement.telemetry_cut is not None


def test_openinference_attributes_evicted_or_redacted_are_not_auditable() -> None:
    base = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "refunds?",
        "llm.input_messages.1.message.role": "tool",
        "llm.input_messages.1.message.tool_call_id": "c1",
        "llm.input_messages.1.message.content": "__REDACTED__",
    }
    evicted = derive_span(span("1", base, dropped_attributes_count=40))
    assert evicted is not None and evicted.manifest is not None
    assert "count limit" in (evicted.manifest.telemetry_cut or "")
    redacted = derive_span(span("2", base))
    assert redacted is not None
    assert "OPENINFERENCE_HIDE" in (redacted.stages[0].measurement.telemetry_cut or "")
    cut_value = {
        **base,
        "llm.input_messages.1.message.content": "y" * 5000,
        "input.value": '{"messages": [' + "z" * 4986,
        "input.mime_type": "application/json",
    }
    limited = derive_span(span("3", cut_value))
    assert limited is not None and limited.stages[0].measurement.telemetry_cut is not None


def test_content_stored_off_span_is_not_auditable() -> None:
    derived = derive_span(span("1", {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages_ref": "file:///uploads/x_inputs.json",
    }))  # fmt: skip
    assert derived is not None and derived.manifest is not None
    assert "stored off span" in (derived.manifest.telemetry_cut or "")
    without = derive_span(span("2", {"gen_ai.operation.name": "chat"}))
    assert without is not None and without.manifest is not None  # content capture is off
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in (
        without.manifest.telemetry_cut or ""
    )


def test_openllmetrys_tool_decorator_output_sliced_at_the_limit() -> None:
    kind = {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "search_orders",
        "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"query": "refunds"}}),
    }
    sliced = derive_span(span("1", {**kind, "traceloop.entity.output": json.dumps(ROWS)[:300]}))
    assert sliced is not None
    (waiting,) = sliced.unmatched
    assert "not valid JSON" in (waiting.stage.measurement.telemetry_cut or "")
    whole = derive_span(span("2", {**kind, "traceloop.entity.output": json.dumps(ROWS)}))
    assert whole is not None
    (waiting,) = whole.unmatched
    assert waiting.stage.measurement.items == 40 and waiting.stage.measurement.inferred
    assert waiting.signature == arguments_signature("search_orders", '{"query":  "refunds"}')


# --- decoding: what is kept, what is dropped ----------------------------------------------


def _otlp_json(attributes: dict[str, str], span_id: str = "1" * 16) -> bytes:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{
        "spans": [{"traceId": TRACE, "spanId": span_id, "name": "chat", "parentSpanId": "9" * 16,
                   "startTimeUnixNano": "1000", "endTimeUnixNano": "2000",
                   "status": {"code": 2},
                   "attributes": [{"key": k, "value": {"stringValue": v}}
                                  for k, v in attributes.items()]}]}]}]}).encode()  # fmt: skip


def test_content_is_parsed_and_dropped_unless_the_operator_opts_in() -> None:
    body = _otlp_json({"gen_ai.operation.name": "chat",
                       "gen_ai.input.messages": json.dumps([*OPENING, CALL, RESULT])})  # fmt: skip
    batch = decode_export_request(body, "application/json")
    assert (batch.derived, batch.ignored, len(batch.measurements)) == (1, 0, 1)
    assert batch.measurements[0].attributes == {}
    assert batch.manifests[0].manifest.issued_calls == ()  # the request failed: issued nothing
    kept = decode_export_request(body, "application/json", keep_content=True)
    assert kept.measurements[0].attributes == {sc.CONTENT_TEXT: ROWS}


def test_spans_of_no_convention_are_ignored_and_counted() -> None:
    body = _otlp_json({"http.method": "GET"})
    batch = decode_export_request(body, "application/json")
    assert (batch.derived, batch.ignored, batch.measurements, batch.manifests) == (0, 1, [], [])


@pytest.mark.parametrize(
    ("arguments", "result"),
    [
        ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"),
        ("tool_arguments", "tool_response"),
    ],
    ids=["conventions", "pydantic-ai-v2"],
)
def test_a_tool_spans_result_under_either_name(arguments: str, result: str) -> None:
    """pydantic-ai's instrumentation version 2 writes ``running tool`` spans with the
    result under ``tool_response``; later versions follow the conventions."""
    derived = derive_span(span("3", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_orders",
        "gen_ai.tool.call.id": "c1", arguments: '{"status": "paid"}', result: ROWS,
    }, scope_name="pydantic-ai"))  # fmt: skip
    assert derived is not None
    (stage,) = derived.stages
    assert (stage.measurement.stage, stage.measurement.chars) == (sc.STAGE_ORIGINAL, len(ROWS))
    assert stage.measurement.telemetry_cut is None
