"""Agent runs as OpenTelemetry's openai-v2 instrumentation records them, encoded as the
stock exporter sends them: step k's ``chat`` span carries the whole conversation so far in
``gen_ai.input.messages`` and issues one call, whose ``execute_tool`` span carries a
result (a JSON array of records, about ``result_chars``) every later request re-sends.
One OTLP request per step, built once, before anything is timed."""

from __future__ import annotations

import json
from dataclasses import dataclass

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

SPANS_PER_STEP = 2  # the chat span and its call's execute_tool span


@dataclass(frozen=True)
class EncodedRun:
    bodies: list[bytes]
    #: Bytes of ``gen_ai.input.messages`` over all its steps: the conversation JSON sent.
    conversation_bytes: int


def result_text(run: int, step: int, chars: int) -> str:
    rows = [
        {"id": f"r{run}-s{step}-{i}", "text": f"订单 {i} of step {step}, status paid"}
        for i in range(max(1, chars // 60))
    ]
    return json.dumps(rows, ensure_ascii=False)


def encoded_run(run: int, steps: int, result_chars: int, usage: bool = False) -> EncodedRun:
    """One run as OTLP requests, one per step; with ``usage``, each chat span reports
    its input tokens (``gen_ai.usage.input_tokens``, a rough count) as openai-v2 does."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    messages: list[dict[str, object]] = [
        {"role": "system", "parts": [{"type": "text", "content": "You help."}]},
        {"role": "user", "parts": [{"type": "text", "content": f"run {run}: go"}]},
    ]
    bodies: list[bytes] = []
    sent = 0
    with tracer.start_as_current_span("invoke_agent bench"):
        for step in range(1, steps + 1):
            call_id = f"call_{run}_{step}"
            call = {"type": "tool_call", "id": call_id, "name": "search", "arguments": {"q": step}}
            conversation = json.dumps(messages, ensure_ascii=False)
            sent += len(conversation.encode())
            with tracer.start_as_current_span("chat gpt-4o") as span:
                span.set_attributes({
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                    "gen_ai.input.messages": conversation,
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
                })  # fmt: skip
                if usage:
                    span.set_attribute("gen_ai.usage.input_tokens", len(conversation) // 4)
            result = result_text(run, step, result_chars)
            with tracer.start_as_current_span("execute_tool search") as span:
                span.set_attributes({
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.id": call_id, "gen_ai.tool.call.result": result,
                })  # fmt: skip
            messages.append({"role": "assistant", "parts": [call]})
            response = {"type": "tool_call_response", "id": call_id, "response": result}
            messages.append({"role": "tool", "parts": [response]})
            bodies.append(encode_spans(exporter.get_finished_spans()).SerializeToString())
            exporter.clear()
    provider.shutdown()
    return EncodedRun(bodies, sent)
