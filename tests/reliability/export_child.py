"""One large export through the stock OTLP/HTTP exporter, in a process of its own.

    python -m tests.reliability.export_child <endpoint> <journeys> <ids-file>

The batch holds one trace per :data:`JOURNEYS_PER_TRACE` journeys. Writes its ctxledger
span ids to ``ids-file`` (one a line), then exports the
batch once (the exporter's own retries, 60 s timeout) and prints ``SUCCESS`` or
``FAILURE``; the exporter logs each retry and its final answer to stderr.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.reliability.kit import make_batch

#: As an agent fleet's batch would: many runs, each of a few tool results.
JOURNEYS_PER_TRACE = 10


def main(endpoint: str, journeys: int, ids_file: Path) -> int:
    logging.basicConfig(level=logging.WARNING, format="exporter: %(message)s")
    traces = [
        make_batch(min(JOURNEYS_PER_TRACE, journeys - start))
        for start in range(0, journeys, JOURNEYS_PER_TRACE)
    ]
    ids_file.write_text("\n".join(sorted(i for trace in traces for i in trace.ids)))
    exporter = OTLPSpanExporter(endpoint=endpoint + "/v1/traces", timeout=60)
    result = exporter.export([span for trace in traces for span in trace.spans])
    print("SUCCESS" if result == SpanExportResult.SUCCESS else "FAILURE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])))
