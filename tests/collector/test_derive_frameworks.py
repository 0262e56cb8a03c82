"""Agent frameworks' own telemetry, derived and judged: spans recorded from the real
packages (``derive_spans/langchain_openinference.json``, ``pydantic_ai.json`` and
``strands_*.json``, made by ``record_frameworks.py``): LangChain under OpenInference,
pydantic-ai's instrumentation, Strands Agents' own telemetry."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from ctxledger import semconv as sc
from ctxledger.verdicts import Report, judge_trace
from ctxledger_collector.derive import SourceSpan, derive_span, may_derive

from .test_derive import derive_all, recorded, span


def judged(name: str) -> dict[str, list[Report]]:
    """Each recorded run's reports, by the run's root span name, judged right away."""
    traces: dict[str, list[SourceSpan]] = defaultdict(list)
    for one in recorded(name):
        traces[one.trace_id].append(one)
    found = {}
    for spans in traces.values():
        root = next(s.name for s in spans if s.name.startswith("orders-agent"))
        measurements, manifests, _ = derive_all(spans)
        now = max(s.observed_at for s in spans)
        found[root] = judge_trace(measurements, manifests, now=now)
    return found


def test_langchain_tool_spans_name_their_call_in_the_tool_message() -> None:
    """OpenInference's LangChain ``TOOL`` spans carry no ``tool.id``; the serialized
    ``ToolMessage`` they record does, so the tool's own output is matched for certain."""
    (report,) = judged("langchain_openinference")["orders-agent cut"]
    assert report.verdict == sc.VERDICT_SILENT
    assert report.lost_items == 25
    original = report.stages[0]
    assert (original.stage, original.inferred, original.items) == (sc.STAGE_ORIGINAL, False, 40)


def test_a_hidden_langchain_run_is_unauditable_at_once() -> None:
    """OPENINFERENCE_HIDE_INPUTS and _OUTPUTS: no call id, no arguments, no output, no
    message anywhere; the tool run is a journey of its own, settled unauditable."""
    (report,) = judged("langchain_openinference")["orders-agent whole"]
    assert report.tool_call_id.startswith(sc.HIDDEN_TOOL_RUN_PREFIX)
    assert (report.verdict, report.settled) == (sc.VERDICT_UNAUDITABLE, True)
    assert any("OPENINFERENCE_HIDE_OUTPUTS" in note for note in report.notes)


def test_pydantic_ai_cut_and_content_off() -> None:
    runs = judged("pydantic_ai")
    (cut,) = runs["orders-agent cut"]
    assert (cut.verdict, cut.lost_items) == (sc.VERDICT_SILENT, 25)
    (off,) = runs["orders-agent whole-off"]
    assert (off.verdict, off.settled) == (sc.VERDICT_UNAUDITABLE, True)
    # The request's tool_call_response part carries no value: never measured as empty.
    in_request = next(s for s in off.stages if s.stage == sc.STAGE_LLM_INPUT)
    assert in_request.telemetry_cut is not None
    assert "include_content=True" in in_request.telemetry_cut


def test_a_tool_message_with_content_blocks_is_read_as_its_texts() -> None:
    rows = json.dumps([{"id": f"A-{i}"} for i in range(3)])
    message = {"type": "tool", "data": {"content": [{"type": "text", "text": rows}],
               "tool_call_id": "call_9", "type": "tool", "name": "search"}}  # fmt: skip
    derived = derive_span(
        span(
            "t",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "search",
                "input.value": "x",
                "output.value": json.dumps(message),
                "output.mime_type": "application/json",
            },
        )
    )
    assert derived is not None
    (stage,) = derived.stages
    assert (stage.measurement.tool_call_id, stage.measurement.items) == ("call_9", 3)


def test_an_output_that_is_not_a_tool_message_still_waits_for_its_call() -> None:
    derived = derive_span(
        span("t", {"openinference.span.kind": "TOOL", "tool.name": "search",
                   "input.value": '{"q": 1}', "output.value": '{"type": "tool", "rows": []}'})
    )  # fmt: skip
    assert derived is not None
    assert derived.stages == [] and len(derived.unmatched) == 1


#: Each framework agent's pipeline: its verdict and the rows it lost (of 40).
PIPELINES = {
    "whole": (sc.VERDICT_INTACT, 0),
    "cut": (sc.VERDICT_SILENT, 25),
    "marker": (sc.VERDICT_DECLARED, 30),
}


def check_pipelines(runs: dict[str, list[Report]], source: str) -> None:
    """Each pipeline's one journey judged as it must be, against the tool's 40 rows."""
    for case, (verdict, lost) in PIPELINES.items():
        (report,) = runs[f"orders-agent {case}"]
        assert (report.verdict, report.lost_items, report.source) == (verdict, lost, source)
        assert [(s.stage, s.items) for s in report.stages][:1] == [(sc.STAGE_ORIGINAL, 40)]


@pytest.mark.parametrize("recording", ["strands_legacy", "strands_latest"])
def test_strands_cuts_and_redaction(recording: str) -> None:
    """Strands' default span events and its latest conventions: each result's blocks read
    as the text the model got (40 rows), the hook's silent cut and declared cut found, and
    with everything redacted, unauditable naming the setting."""
    runs = judged(recording)
    check_pipelines(runs, sc.SOURCE_STRANDS)
    (off,) = runs["orders-agent whole-off"]
    assert (off.verdict, off.settled) == (sc.VERDICT_UNAUDITABLE, True)
    assert any("gen_ai_unredacted_attributes" in note for note in off.notes), off.notes


@pytest.mark.parametrize("recording", ["adk_semconv", "adk_legacy"])
def test_google_adk_cuts_and_content_off(recording: str) -> None:
    """Google ADK's default GenAI spans and its older ``call_llm`` spans: its
    ``{"result": ...}`` wrapping taken off (40 rows), the callback's silent cut and
    declared cut found, and with content off, unauditable naming ADK's settings."""
    runs = judged(recording)
    check_pipelines(runs, sc.SOURCE_ADK)
    off = runs["orders-agent whole-off"]
    assert off and all(r.verdict == sc.VERDICT_UNAUDITABLE and r.settled for r in off), off
    # The older call_llm spans name no operation: decoding must still derive them.
    assert all(may_derive(s.attributes) for s in recorded(recording) if s.name == "call_llm")
    notes = " ".join(n for r in off for n in r.notes)
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in notes, notes
