"""What the framework agents share (they run in the frameworks' own virtual environment,
without ctxledger): the tool's rows, the cuts a context manager makes, the tracer
provider exporting to every collector, and the answer they print."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROWS = [{"id": f"A-{i:04d}", "status": "refunding", "note": f"第{i}单"} for i in range(40)]
#: What each pipeline does to a tool result (a JSON list of rows) before the next request.
PIPELINES = ("whole", "cut", "marker")


def cut_rows(text: str, pipeline: str) -> str:
    """The result as the agent's context manager passes it on: whole, 15 of 40 rows kept
    silently, or 10 kept and the rest declared."""
    if pipeline == "whole":
        return text
    rows: list[Any] = json.loads(text)
    if pipeline == "marker":
        return json.dumps(
            [*rows[:10], f"[... {len(rows) - 10} more rows omitted]"], ensure_ascii=False
        )
    return json.dumps(rows[:15], ensure_ascii=False)


#: With ``--record FILE`` instead of endpoints: every span kept, then written as JSON.
RECORDED = InMemorySpanExporter()


def tracer_provider(service: str) -> TracerProvider:
    """Exports to every OTLP endpoint given on the command line after the cases."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    if sys.argv[2:3] == ["--record"]:
        provider.add_span_processor(SimpleSpanProcessor(RECORDED))
        return provider
    for endpoint in sys.argv[2:]:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def _recorded_spans() -> list[dict[str, Any]]:
    """The spans as the collector's unit tests load them (tests/collector/test_derive.py)."""
    return [
        {
            "trace_id": format(span.context.trace_id, "032x"),
            "span_id": format(span.context.span_id, "016x"),
            "parent_span_id": format(span.parent.span_id, "016x") if span.parent else None,
            "name": span.name,
            "start_time_unix_nano": span.start_time,
            "end_time_unix_nano": span.end_time,
            "status_code": span.status.status_code.value,
            "dropped_attributes_count": span.dropped_attributes,
            "attributes": {
                k: list(v) if isinstance(v, tuple) else v for k, v in span.attributes.items()
            },
            "events": [
                {"name": e.name, "attributes": dict(e.attributes or {})} for e in span.events
            ],
            "scope_name": span.instrumentation_scope.name if span.instrumentation_scope else None,
        }
        for span in RECORDED.get_finished_spans()
    ]


def cases() -> list[str]:
    return sys.argv[1].split(",")


def base_url() -> str:
    return os.environ["OPENAI_BASE_URL"]


def finish(provider: TracerProvider, found: dict[str, Any]) -> None:
    provider.force_flush()
    if sys.argv[2:3] == ["--record"]:
        with open(sys.argv[3], "w", encoding="utf-8") as target:
            json.dump(_recorded_spans(), target, ensure_ascii=False, indent=1)
            target.write("\n")
    provider.shutdown()
    print(json.dumps(found))
