"""A request is never expected to carry the result of a call it issued, whatever the
spans' times and arrival order say: random tool loops, in the GenAI and the Vercel AI SDK
shapes, with agent spans listing every call, two nested instrumentations' copies of each request,
tools ending before the request that issued
them (a streamed response), times at millisecond resolution (JavaScript's clock), and
spans arriving in random batches. Every pipeline here is whole: any loss is a false one."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxledger import semconv as sc
from ctxledger.verdicts import Report, judge_trace
from ctxledger.verdicts.memory_state import MemoryTraceState
from ctxledger_collector.derive import SourceSpan, derive_span

TRACE = "cd" * 16
MS = 1_000_000
ROWS = [{"id": f"A-{i:04d}", "note": f"第{i}单"} for i in range(6)]
RESULT = json.dumps(ROWS, ensure_ascii=False, separators=(",", ":"))


def _genai_request(history: list[dict[str, Any]], issued: list[str]) -> dict[str, Any]:
    def parts(message: dict[str, Any]) -> dict[str, Any]:
        if message["role"] == "tool":
            return {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": message["id"], "response": ROWS}],
            }
        return {"role": message["role"], "parts": [
            *([{"type": "text", "content": message["text"]}] if message.get("text") else []),
            *({"type": "tool_call", "id": c, "name": "search", "arguments": {"n": c}}
              for c in message.get("calls", ()))]}  # fmt: skip

    output = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": c, "name": "search", "arguments": {"n": c}}
                for c in issued
            ],
        }
    ]
    return {
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.REQUEST_MODEL: "gpt-4o",
        sc.GEN_AI_INPUT_MESSAGES: json.dumps([parts(m) for m in history], ensure_ascii=False),
        sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(output),
    }  # fmt: skip


def _vercel_request(history: list[dict[str, Any]], issued: list[str]) -> dict[str, Any]:
    def message(m: dict[str, Any]) -> dict[str, Any]:
        if m["role"] == "tool":
            return {
                "role": "tool",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": m["id"],
                        "toolName": "search",
                        "output": {"type": "json", "value": ROWS},
                    }
                ],
            }
        return {"role": m["role"], "content": [
            *([{"type": "text", "text": m["text"]}] if m.get("text") else []),
            *({"type": "tool-call", "toolCallId": c, "toolName": "search", "input": {"n": c}}
              for c in m.get("calls", ()))]}  # fmt: skip

    attributes = {
        sc.AI_OPERATION_ID: "ai.streamText.doStream",
        sc.REQUEST_MODEL: "gpt-4o",
        sc.AI_PROMPT_MESSAGES: json.dumps([message(m) for m in history], ensure_ascii=False),
        "ai.response.text": "",
    }
    if issued:
        attributes[sc.AI_RESPONSE_TOOL_CALLS] = json.dumps(
            [{"toolCallId": c, "toolName": "search", "input": {"n": c}} for c in issued]
        )
    return attributes


def _tool(shape: str, call: str) -> dict[str, Any]:
    if shape == "genai":
        return {sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.TOOL_NAME: "search",
                sc.TOOL_CALL_ID: call, sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"n": call}),
                sc.GEN_AI_TOOL_CALL_RESULT: RESULT}  # fmt: skip
    return {sc.AI_OPERATION_ID: "ai.toolCall", "ai.toolCall.name": "search",
            "ai.toolCall.id": call, "ai.toolCall.args": json.dumps({"n": call}),
            "ai.toolCall.result": RESULT}  # fmt: skip


@st.composite
def tool_loops(draw: st.DrawFn) -> tuple[list[SourceSpan], dict[str, set[str]]]:
    """Spans of one run, and which request ids issued each call."""
    shape = draw(st.sampled_from(["genai", "vercel"]))
    calls_per_step = [*draw(st.lists(st.integers(0, 2), min_size=1, max_size=4)), 0]
    spans: list[SourceSpan] = []
    issuers: dict[str, set[str]] = {}
    history: list[dict[str, Any]] = [{"role": "user", "text": "which orders?"}]
    clock = draw(st.integers(1, 10**6)) * MS
    number = 0

    def add(attributes: dict[str, Any], start: int, end: int) -> str:
        nonlocal number
        number += 1
        span_id = f"{number:016x}"
        spans.append(SourceSpan(TRACE, span_id, "span", start, end, attributes,
                                scope_name="ai" if shape == "vercel" else None))  # fmt: skip
        return span_id

    # Two instrumentations nested around one request (a framework's and the client's):
    # two spans of the same request, both issuing its calls, the inner one starting later.
    nested = draw(st.booleans())
    every_call: list[str] = []
    for step, count in enumerate(calls_per_step):
        issued = [f"call_{step}_{i}" for i in range(count)]
        every_call += issued
        maker = _genai_request if shape == "genai" else _vercel_request
        # Responses take at least a millisecond; the span may end anywhere after the tools.
        start = clock
        requests = [add(maker(history, issued), start, start + draw(st.integers(0, 50)) * MS)]
        if nested:
            inner = start + draw(st.integers(0, 1)) * MS
            requests.append(
                add(maker(history, issued), inner, inner + draw(st.integers(0, 50)) * MS)
            )
        for call in issued:
            issuers.setdefault(call, set()).update(requests)
            # A streamed response runs each tool while the request's span is still open.
            tool_start = start + draw(st.integers(0, 3)) * MS
            add(_tool(shape, call), tool_start, tool_start + draw(st.integers(0, 2)) * MS)
        clock = start + draw(st.integers(1, 5)) * MS
        history = [*history, {"role": "assistant", "calls": issued}]
        history += [{"role": "tool", "id": call} for call in issued]
    if draw(st.booleans()):  # an agent span over the run, listing every call it issued
        first = spans[0].start_time_unix_nano - draw(st.integers(0, 2)) * MS
        agent = _genai_request(history[:1], every_call)
        add({**agent, sc.GEN_AI_OPERATION_NAME: "invoke_agent"}, first, clock)
    return spans, issuers


def _records(spans: list[SourceSpan]) -> list[tuple[list[Any], list[Any]]]:
    found = []
    for one in spans:
        derived = derive_span(one)
        if derived is not None:
            manifests = [derived.manifest] if derived.manifest else []
            found.append(([s.measurement for s in derived.stages], manifests))
    return found


def _check(reports: list[Report], issuers: dict[str, set[str]]) -> None:
    for report in reports:
        assert report.request_id not in issuers.get(report.tool_call_id, set()), report
        assert report.verdict == sc.VERDICT_INTACT, (report.tool_call_id, report.notes)


@settings(max_examples=150, deadline=None)
@given(loop=tool_loops(), order=st.randoms(use_true_random=False), batch=st.integers(1, 4))
def test_no_request_is_expected_to_carry_a_result_it_issued(
    loop: tuple[list[SourceSpan], dict[str, set[str]]], order: Any, batch: int
) -> None:
    spans, issuers = loop
    records = _records(spans)
    measurements = [m for ms, _ in records for m in ms]
    manifests = [man for _, mans in records for man in mans]
    whole = judge_trace(measurements, manifests, now=1e12)
    _check(whole, issuers)
    carried = {r.tool_call_id for r in whole if r.request_id is not None}
    assert carried == set(issuers), "every call's result judged in the request after it"

    order.shuffle(records)
    state = MemoryTraceState()
    for start in range(0, len(records), batch):
        chunk = records[start : start + batch]
        state.ingest(
            measurements=[m for ms, _ in chunk for m in ms],
            manifests=[man for _, mans in chunk for man in mans],
            now=1e12,
        )
    incremental = list(state.reports.values())
    _check(incremental, issuers)
    assert sorted((r.key, r.verdict) for r in incremental) == sorted(
        (r.key, r.verdict) for r in whole
    )
