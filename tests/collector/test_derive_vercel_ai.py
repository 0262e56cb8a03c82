"""The Vercel AI SDK's own telemetry, derived and judged: the spans recorded from the real
npm packages (``derive_spans/vercel_ai_*.json``, made by ``record_vercel_ai.py``) under
both of ``@ai-sdk/otel``'s integrations, and the spellings of earlier AI SDK versions."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from ctxledger import semconv as sc
from ctxledger.verdicts import Report, judge_trace
from ctxledger.verdicts.memory_state import MemoryTraceState
from ctxledger_collector.derive import SourceSpan, derive_span

from .test_derive import derive_all, recorded

#: Each recorded case: the verdict of its call's journey in the request that follows it.
CASES = {
    "orders-agent stream-cut": sc.VERDICT_SILENT,
    "orders-agent generate-marker": sc.VERDICT_DECLARED,
    "orders-agent generate-whole-off": sc.VERDICT_UNAUDITABLE,
}
SOURCES = {"vercel_ai_legacy": sc.SOURCE_VERCEL_AI, "vercel_ai_otel": sc.SOURCE_GENAI}


def by_case(name: str) -> dict[str, list[SourceSpan]]:
    traces: dict[str, list[SourceSpan]] = defaultdict(list)
    for one in recorded(name):
        traces[one.trace_id].append(one)
    return {next(s.name for s in spans if s.name in CASES): spans for spans in traces.values()}


def issuers(spans: list[SourceSpan]) -> dict[str, set[str]]:
    """Which requests issued each call, as derived."""
    found: dict[str, set[str]] = defaultdict(set)
    for one in spans:
        derived = derive_span(one)
        if derived is not None and derived.manifest is not None:
            for call in derived.manifest.issued_calls or ():
                found[call].add(derived.manifest.request_id)
    return found


@pytest.mark.parametrize("recording", list(SOURCES))
@pytest.mark.parametrize("case", list(CASES))
def test_each_journey_is_judged_in_the_request_that_carried_it(recording: str, case: str) -> None:
    spans = by_case(recording)[case]
    measurements, manifests, _ = derive_all(spans)
    reports = judge_trace(measurements, manifests, now=max(s.observed_at for s in spans))
    (report,) = reports  # one call, one journey: never one in the request that issued it
    assert report.verdict == CASES[case], report.notes
    assert report.source == SOURCES[recording]
    assert report.request_id not in issuers(spans)[report.tool_call_id]
    # With content off no request shows the call: the journey is the call's own.
    assert (report.request_id is None) == (report.verdict == sc.VERDICT_UNAUDITABLE)
    if report.verdict == sc.VERDICT_SILENT:
        assert report.lost_items == 25
    if report.verdict == sc.VERDICT_DECLARED:
        assert report.lost_items == 30
    if report.verdict == sc.VERDICT_UNAUDITABLE:
        assert report.settled
        assert any("recordInputs and recordOutputs" in n for n in report.notes), report.notes


@pytest.mark.parametrize("recording", list(SOURCES))
def test_agent_step_and_wrapper_spans_are_not_requests(recording: str) -> None:
    """``invoke_agent`` lists every call of its run in its output, and ``ai.generateText``
    / ``ai.streamText`` wrap the provider calls: neither is one LLM request."""
    for spans in by_case(recording).values():
        for one in spans:
            derived = derive_span(one)
            operation = one.attributes.get(sc.GEN_AI_OPERATION_NAME)
            ai_operation = str(one.attributes.get(sc.AI_OPERATION_ID, ""))
            is_request = operation == "chat" or ai_operation.endswith((".doGenerate", ".doStream"))
            assert (derived is not None and derived.manifest is not None) == is_request, one.name


def _older(attributes: dict[str, Any]) -> dict[str, Any]:
    """A legacy span rewritten in AI SDK 4's spellings: ``args`` for a call's input, the
    raw ``result`` of a tool result, ``promptTokens``."""
    changed = dict(attributes)
    if sc.AI_PROMPT_MESSAGES in changed:
        messages = json.loads(changed[sc.AI_PROMPT_MESSAGES])
        for message in messages:
            for part in message["content"] if isinstance(message["content"], list) else ():
                if part["type"] == "tool-call":
                    part["args"] = part.pop("input")
                if part["type"] == "tool-result":
                    part["result"] = part.pop("output")["value"]
        changed[sc.AI_PROMPT_MESSAGES] = json.dumps(messages, ensure_ascii=False)
    if sc.AI_RESPONSE_TOOL_CALLS in changed:
        calls = json.loads(changed[sc.AI_RESPONSE_TOOL_CALLS])
        for call in calls:
            call["args"] = json.dumps(call.pop("input"))
        changed[sc.AI_RESPONSE_TOOL_CALLS] = json.dumps(calls)
    if "ai.usage.inputTokens" in changed:
        changed["ai.usage.promptTokens"] = changed.pop("ai.usage.inputTokens")
    if "ai.toolCall.result" in changed:  # the output spelling some versions use
        changed["ai.toolCall.output"] = changed.pop("ai.toolCall.result")
        changed["ai.toolCall.input"] = changed.pop("ai.toolCall.args")
    return changed


@pytest.mark.parametrize("case", list(CASES))
def test_earlier_ai_sdk_spellings_give_the_same_verdicts(case: str) -> None:
    spans = [
        SourceSpan(**{**one.__dict__, "attributes": _older(one.attributes)})
        for one in by_case("vercel_ai_legacy")[case]
    ]
    measurements, manifests, _ = derive_all(spans)
    (report,) = judge_trace(measurements, manifests, now=1e12)
    assert report.verdict == CASES[case], report.notes


@pytest.mark.parametrize("recording", list(SOURCES))
def test_arrival_order_changes_nothing(recording: str) -> None:
    """Batch by batch, spans in reverse and in order, as judging the whole trace."""
    for spans in by_case(recording).values():
        measurements, manifests, _ = derive_all(spans)
        whole = sorted((r.key, r.verdict) for r in judge_trace(measurements, manifests, now=1.0))
        for ordered in (spans, spans[::-1]):
            state = MemoryTraceState()
            for one in ordered:
                derived = derive_span(one)
                if derived is None:
                    continue
                state.ingest(
                    measurements=[s.measurement for s in derived.stages],
                    manifests=[derived.manifest] if derived.manifest else [],
                    now=1.0,
                )
            got: list[Report] = list(state.reports.values())
            assert sorted((r.key, r.verdict) for r in got) == whole
