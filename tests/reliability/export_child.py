"""One large export through the stock OTLP/HTTP exporter, in a process of its own.

    python -m tests.reliability.export_child <endpoint> <journeys> <ids-file> [<plain>]

The batch holds one trace per :data:`JOURNEYS_PER_TRACE` journeys, and ``plain`` spans
that are not ctxledger's (an agent's HTTP and tool spans: small, as the stock exporter
caps one export at 64 MiB). Writes its ctxledger span ids to ``ids-file`` (one a line),
then exports the batch once (the exporter's own retries, 60 s timeout) and prints
``SUCCESS`` or ``FAILURE``; the exporter logs each retry and its final answer to stderr.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.reliability.kit import make_batch

#: As an agent fleet's batch would: many runs, each of a few tool results.
JOURNEYS_PER_TRACE = 10


def _plain_spans(count: int) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("agent.run"):
        for index in range(count - 1):
            with tracer.start_as_current_span("http.client", attributes={"n": index}):
                pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def main(endpoint: str, journeys: int, ids_file: Path, plain: int = 0) -> int:
    logging.basicConfig(level=logging.WARNING, format="exporter: %(message)s")
    traces = [
        make_batch(min(JOURNEYS_PER_TRACE, journeys - start))
        for start in range(0, journeys, JOURNEYS_PER_TRACE)
    ]
    ids_file.write_text("\n".join(sorted(i for trace in traces for i in trace.ids)))
    exporter = OTLPSpanExporter(endpoint=endpoint + "/v1/traces", timeout=60)
    spans = [span for trace in traces for span in trace.spans]
    result = exporter.export([*spans, *(_plain_spans(plain) if plain else [])])
    print("SUCCESS" if result == SpanExportResult.SUCCESS else "FAILURE", flush=True)
    return 0


if __name__ == "__main__":
    plain = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    sys.exit(main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), plain))
