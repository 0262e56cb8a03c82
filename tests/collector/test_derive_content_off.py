"""Inference spans that carry no message content, in the shape each instrumentation emits
with its content setting off: the journeys they touch are ``unauditable`` at once, named
by the setting to change, never ``intact`` while the grace period runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Report, judge_trace
from ctxledger.verdicts.memory_state import MemoryTraceState
from ctxledger_collector.derive import SourceSpan, derive_span

from .test_derive import ROWS, TRACE

CALL = "call_1"
#: The scopes the instrumentations installed here name their spans with.
UTIL_GENAI = "opentelemetry.util.genai.handler"  # openai-v2 2.4b0, latest conventions
OPENAI_V2 = "opentelemetry.instrumentation.openai_v2"  # openai-v2, older conventions
OPENLLMETRY = "opentelemetry.instrumentation.openai.v1"
OPENINFERENCE = "openinference.instrumentation.openai"

GENAI_CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
              "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 82}  # fmt: skip
OPENLLMETRY_CHAT = {**GENAI_CHAT, "gen_ai.is_streaming": False,
                    "gen_ai.openai.api_base": "http://127.0.0.1:1/v1/"}  # fmt: skip
OI_LLM = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.system": "openai",
          "llm.token_count.prompt": 82}  # fmt: skip
OI_INPUT = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
OI_RESULT = {"llm.input_messages.0.message.role": "user",
             "llm.input_messages.0.message.content": "which orders were refunded?",
             "llm.input_messages.1.message.role": "assistant",
             "llm.input_messages.1.message.tool_calls.0.tool_call.id": CALL,
             "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "search_orders",
             "llm.input_messages.2.message.role": "tool",
             "llm.input_messages.2.message.tool_call_id": CALL,
             "llm.input_messages.2.message.content": ROWS}  # fmt: skip


def genai_tool(result: bool = True) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search_orders",
        "gen_ai.tool.call.id": CALL,
    }
    if result:
        attributes["gen_ai.tool.call.result"] = ROWS
    return attributes


def oi_tool(output: str = ROWS) -> dict[str, Any]:
    return {"openinference.span.kind": "TOOL", "tool.name": "search_orders", "tool.id": CALL,
            "input.value": '{"query": "refunds"}', "output.value": output}  # fmt: skip


def spans(llm: dict[str, Any], tool: dict[str, Any], scope: str) -> list[SourceSpan]:
    """Request 1 (issues the call), the tool run, request 2 (should carry its result)."""
    made = []
    for number, (attributes, own_scope) in enumerate(
        [(llm, scope), (tool, "my-agent"), (llm, scope)], start=1
    ):
        made.append(
            SourceSpan(
                trace_id=TRACE,
                span_id=f"{number:016x}",
                name="span",
                start_time_unix_nano=number * 1_000_000_000,
                end_time_unix_nano=number * 1_000_000_000 + 500_000_000,
                attributes=attributes,
                scope_name=own_scope,
            )
        )
    return made


def derived(made: list[SourceSpan]) -> tuple[list[Measurement], list[Manifest]]:
    measurements: list[Measurement] = []
    manifests: list[Manifest] = []
    for one in made:
        found = derive_span(one)
        assert found is not None, f"span {one.span_id} derived nothing"
        measurements += [s.measurement for s in found.stages]
        manifests += [found.manifest] if found.manifest else []
    return measurements, manifests


#: Shape name -> (LLM span attributes, tool span attributes, LLM scope, the setting named).
SHAPES: dict[str, tuple[dict[str, Any], dict[str, Any], str, str]] = {
    "openai-v2 capture unset": (GENAI_CHAT, genai_tool(), UTIL_GENAI,
                                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only"),
    "openai-v2 capture unset, tool span without result": (
        GENAI_CHAT, genai_tool(result=False), UTIL_GENAI,
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only"),
    "openai-v2 older conventions (content in log events)": (
        {k: v for k, v in GENAI_CHAT.items() if k != "gen_ai.provider.name"} | {
            "gen_ai.system": "openai"}, genai_tool(), OPENAI_V2,
        "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental"),
    "OpenLLMetry TRACELOOP_TRACE_CONTENT=false": (OPENLLMETRY_CHAT, genai_tool(), OPENLLMETRY,
                                                  "TRACELOOP_TRACE_CONTENT"),
    "OpenLLMetry, tool span without result": (OPENLLMETRY_CHAT, genai_tool(result=False),
                                              OPENLLMETRY, "TRACELOOP_TRACE_CONTENT"),
    "OpenInference OPENINFERENCE_HIDE_INPUTS": (
        {**OI_LLM, "input.value": "__REDACTED__"}, oi_tool(), OPENINFERENCE,
        "OPENINFERENCE_HIDE_INPUTS"),
    "OpenInference OPENINFERENCE_HIDE_INPUT_MESSAGES": (
        {**OI_LLM, "input.value": OI_INPUT, "input.mime_type": "application/json"}, oi_tool(),
        OPENINFERENCE, "OPENINFERENCE_HIDE_INPUT_MESSAGES"),
    "OpenInference OPENINFERENCE_HIDE_OUTPUTS": (
        {**OI_LLM, **OI_RESULT}, oi_tool("__REDACTED__"), OPENINFERENCE,
        "OPENINFERENCE_HIDE_OUTPUTS"),
}  # fmt: skip


def of_the_call(reports: list[Report]) -> list[Report]:
    found = sorted((r for r in reports if r.tool_call_id == CALL), key=lambda r: r.key)
    assert found, "no report of the call"
    return found


@pytest.mark.parametrize("shape", list(SHAPES))
def test_content_off_is_unauditable_at_once_with_the_setting_to_change(shape: str) -> None:
    llm, tool, scope, setting = SHAPES[shape]
    measurements, manifests = derived(spans(llm, tool, scope))
    last_seen = max(m.observed_at for m in measurements)
    for now in (last_seen, last_seen + 3600):  # right away, and long after the grace period
        for report in of_the_call(judge_trace(measurements, manifests, now=now)):
            assert report.verdict == sc.VERDICT_UNAUDITABLE, (shape, report.notes)
            assert report.settled, shape
            assert any(setting in note for note in report.notes), (shape, report.notes)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_content_off_is_unauditable_whatever_arrives_first(shape: str) -> None:
    """Batch by batch (the collector's incremental judge), in both orders, the same report
    as judging the whole trace."""
    llm, tool, scope, _ = SHAPES[shape]
    measurements, manifests = derived(spans(llm, tool, scope))
    whole = [
        (r.key, r.verdict, r.notes, r.settled)
        for r in of_the_call(judge_trace(measurements, manifests, now=10.0))
    ]
    for tool_first in (True, False):
        state = MemoryTraceState()
        if tool_first:
            state.ingest(measurements=measurements, now=10.0)
            state.ingest(manifests=manifests, now=10.0)
        else:
            state.ingest(manifests=manifests, now=10.0)
            state.ingest(measurements=measurements, now=10.0)
        kept = of_the_call(list(state.reports.values()))
        assert [(r.key, r.verdict, r.notes, r.settled) for r in kept] == whole, tool_first


def test_the_sdks_own_stages_still_wait_for_their_request() -> None:
    """An SDK call keys its requests by the SDK's ids: a blind LLM span in the same trace
    says nothing about where its result went."""
    _, manifests = derived(spans(GENAI_CHAT, genai_tool(), UTIL_GENAI))
    original = Measurement(trace_id=TRACE, tool_call_id=CALL, stage=sc.STAGE_ORIGINAL,
                           order=10, chars=10, observed_at=5.0)  # fmt: skip
    (report,) = of_the_call(judge_trace([original], manifests, now=6.0))
    assert (report.verdict, report.settled) == (sc.VERDICT_INTACT, False)


def test_a_request_whose_content_is_on_is_judged_as_before() -> None:
    with_content = {**GENAI_CHAT, "gen_ai.input.messages": json.dumps([
        {"role": "user", "parts": [{"type": "text", "content": "refunds?"}]},
        {"role": "assistant",
         "parts": [{"type": "tool_call", "id": CALL, "name": "search_orders"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": CALL, "response": ROWS}]},
    ])}  # fmt: skip
    measurements, manifests = derived(spans(with_content, genai_tool(), UTIL_GENAI))
    reports = judge_trace(measurements, manifests, now=10.0)
    assert {r.verdict for r in reports if r.tool_call_id == CALL} == {sc.VERDICT_INTACT}
