"""Joining an application's own OpenTelemetry SDK.

The OTel API lets a process set the global tracer provider only once, so the
application is a child Python process: it installs its provider (an in-memory exporter),
opens a span, configures ctxledger inside it and measures. The parent checks that the
measurements went to the application's exporter, in the application's trace, under its
span, and that ctxledger exported nothing itself (``CTXLEDGER_ENDPOINT`` points at a
live receiver that must stay empty).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from ctxledger import semconv as sc

from .helpers import REPO_ROOT, subprocess_env
from .otlp_receiver import OTLPReceiver

APPLICATION = textwrap.dedent(
    """
    import json

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import ctxledger

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    tracer = trace.get_tracer("the-application")

    with tracer.start_as_current_span("handle user message") as app_span:
        ctxledger.configure()
        with ctxledger.run("app-agent"):
            ctxledger.measure("original", {"results": [{"id": "r1"}, {"id": "r2"}]},
                              tool_call_id="call_1", tool_name="lookup")
            messages = [
                {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                 "function": {"name": "lookup", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": '[{"id": "r1"}]'},
            ]
            request_id = ctxledger.measure_messages(messages)
            ctxledger.measure_request(json.dumps({"model": "gpt-4", "messages": messages}))
        ctxledger.measure("original", "outside any ctxledger.run", tool_call_id="call_2")
        assert ctxledger.flush()
        app = app_span.get_span_context()

    spans = [
        {
            "name": s.name,
            "trace_id": format(s.context.trace_id, "032x"),
            "span_id": format(s.context.span_id, "016x"),
            "parent_id": format(s.parent.span_id, "016x") if s.parent else None,
            "attributes": {k: list(v) if isinstance(v, tuple) else v
                           for k, v in s.attributes.items()},
        }
        for s in exporter.get_finished_spans()
    ]
    print(json.dumps({
        "app_trace_id": format(app.trace_id, "032x"),
        "app_span_id": format(app.span_id, "016x"),
        "request_id": request_id,
        "measured": ctxledger.stats().measured,
        "spans": spans,
    }))
    """
)


def test_measurements_join_the_application_trace(receiver: OTLPReceiver) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", APPLICATION],
        cwd=REPO_ROOT,
        env=subprocess_env(CTXLEDGER_ENDPOINT=receiver.url, CTXLEDGER_RAISE_ERRORS="1"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    spans = result["spans"]
    app_spans = [s for s in spans if s["span_id"] == result["app_span_id"]]
    assert [s["name"] for s in app_spans] == ["handle user message"]

    runs = [s for s in spans if s["name"] == sc.SPAN_RUN]
    ours = [s for s in spans if s["span_id"] != result["app_span_id"] and s not in runs]
    stages = sorted(
        (s["attributes"][sc.TOOL_CALL_ID], s["attributes"][sc.STAGE])
        for s in ours
        if sc.STAGE in s["attributes"]
    )
    assert stages == [
        ("call_1", sc.STAGE_ASSEMBLED),
        ("call_1", sc.STAGE_ORIGINAL),
        ("call_1", sc.STAGE_SENT),
        ("call_2", sc.STAGE_ORIGINAL),
    ]
    manifests = [s for s in ours if sc.REQUEST_TOOL_CALL_IDS in s["attributes"]]
    assert [m["attributes"][sc.REQUEST_ID] for m in manifests] == [result["request_id"]]
    assert len(ours) == 5 == result["measured"] + len(manifests)
    # Measurements inside ctxledger.run() hang under its run span, itself a child of
    # the application's span; those outside a run hang under the application's span.
    run_ids = {r["span_id"] for r in runs}
    for span in [*ours, *runs]:
        assert span["trace_id"] == result["app_trace_id"], span
        assert span["parent_id"] in {result["app_span_id"], *run_ids}, span
    for run_span in runs:
        assert run_span["parent_id"] == result["app_span_id"]
    # ctxledger used the application's pipeline, not one of its own
    assert receiver.requests == []
