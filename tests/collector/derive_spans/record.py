"""Record what the real instrumentations emit, for the derivation's unit tests.

``python -m tests.collector.derive_spans.record INSTRUMENTATION`` runs the zero-SDK agent's
``row_cut`` and ``orphan`` cases (tests/e2e/zero_sdk_agent.py) into an in-memory exporter
and writes every span (name, ids, times, status, attributes, events) to
``<instrumentation>.json`` beside this file. Re-run after upgrading a package:
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only`` for openai-v2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import openai
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ctxledger_cli.provider import ProviderStandIn
from tests.e2e import zero_sdk_agent as agent_module


def _event(attributes: object) -> dict[str, object]:
    kept = dict(attributes or {})  # type: ignore[call-overload]
    if "exception.stacktrace" in kept:  # this machine's paths: not what is tested
        kept["exception.stacktrace"] = "(left out)"
    return kept


def main(instrumentation: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent_module.instrument(instrumentation, provider)
    tracer = provider.get_tracer("recorder")
    with ProviderStandIn() as llm:
        client = openai.OpenAI(base_url=llm.base_url, api_key="test")
        agent = agent_module.Agent(
            client, agent_module.ToolSpans(instrumentation, provider), tracer
        )
        for case in ("row_cut", "orphan"):
            with tracer.start_as_current_span(f"invoke_agent {case}"):
                agent_module.CASES[case](agent, llm, case)
    spans = [
        {
            "trace_id": format(s.context.trace_id, "032x"),
            "span_id": format(s.context.span_id, "016x"),
            "parent_span_id": format(s.parent.span_id, "016x") if s.parent else None,
            "name": s.name,
            "start_time_unix_nano": s.start_time,
            "end_time_unix_nano": s.end_time,
            "status_code": s.status.status_code.value,
            "dropped_attributes_count": s.dropped_attributes,
            "attributes": {
                k: list(v) if isinstance(v, tuple) else v for k, v in s.attributes.items()
            },
            "events": [{"name": e.name, "attributes": _event(e.attributes)} for e in s.events],
        }
        for s in exporter.get_finished_spans()
    ]
    target = Path(__file__).with_name(f"{instrumentation.replace('-', '_')}.json")
    target.write_text(json.dumps(spans, indent=1, ensure_ascii=False, default=str) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
