"""What a GenAI span costs the collector as a run grows: each LLM span re-sends the whole
conversation, so its bytes grow with the run; the collector should spend per span what
its own bytes cost, not more as the stored trace grows.

A synthetic agent run of ``--steps`` requests in one trace, as OpenTelemetry's openai-v2
instrumentation records it (``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON,
one ``execute_tool`` span per call): step k issues one call whose result (about
``--result-chars``) every later request carries. Each step's two spans are encoded with
the real OTLP encoder, then decoded and derived, then stored and judged on SQLite, one
export per step. The table prints, at a few points of the run, the span's bytes and the
time per step of decode + derive and of storing + judging, and those times per KiB.

    python bench/derive_ingest.py [--steps 300] [--result-chars 2000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ctxledger.verdicts import Tolerances
from ctxledger_collector.ingest.otlp_decode import PROTOBUF, decode_export_request
from ctxledger_collector.judge.store import Store
from ctxledger_collector.storage.column_limits import fit_to_columns
from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade


def result_text(step: int, chars: int) -> str:
    rows = [
        {"id": f"s{step}-{i}", "text": f"row {i} of step {step} " * 3} for i in range(chars // 60)
    ]
    return json.dumps(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--result-chars", type=int, default=2000)
    args = parser.parse_args()

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    folder = Path(tempfile.mkdtemp())
    url = f"sqlite:///{folder / 'bench.db'}"
    upgrade(url)
    store = Store(make_engine(url), Tolerances())

    messages: list[dict[str, object]] = [
        {"role": "system", "parts": [{"type": "text", "content": "You help."}]},
        {"role": "user", "parts": [{"type": "text", "content": "go"}]},
    ]
    checkpoints = {1, 10, 50, 100, 200, 300, 500, 1000, args.steps}
    heads = ("step", "span KiB", "decode ms", "store ms", "decode ms/KiB", "store ms/KiB")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (6, 9, 10, 9, 14, 13), strict=True)))
    with tracer.start_as_current_span("invoke_agent bench"):
        for step in range(1, args.steps + 1):
            call = {
                "type": "tool_call",
                "id": f"call_{step}",
                "name": "search",
                "arguments": {"q": step},
            }
            with tracer.start_as_current_span("chat gpt-4o") as span:
                span.set_attributes({
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.input.messages": json.dumps(messages),
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
                })  # fmt: skip
            result = result_text(step, args.result_chars)
            with tracer.start_as_current_span("execute_tool search") as span:
                span.set_attributes({
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.id": f"call_{step}", "gen_ai.tool.call.result": result,
                })  # fmt: skip
            messages.append({"role": "assistant", "parts": [call]})
            response = {"type": "tool_call_response", "id": f"call_{step}", "response": result}
            messages.append({"role": "tool", "parts": [response]})
            body = encode_spans(exporter.get_finished_spans()).SerializeToString()
            exporter.clear()
            started = time.perf_counter()
            batch = fit_to_columns(decode_export_request(body, PROTOBUF))
            decoded = time.perf_counter()
            store.ingest(batch)
            stored = time.perf_counter()
            if step in checkpoints:
                kib = len(body) / 1024
                decode_ms, store_ms = (decoded - started) * 1e3, (stored - decoded) * 1e3
                print(f"{step:>6} {kib:>9.0f} {decode_ms:>10.1f} {store_ms:>9.1f} "
                      f"{decode_ms / kib:>14.3f} {store_ms / kib:>13.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
