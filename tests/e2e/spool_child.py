"""A process that uses the SDK as an agent would, for the spool's process-restart tests.

    python spool_child.py measure <endpoint> <journeys>   measure, print the span ids, exit
    python spool_child.py send <endpoint>                  configure, flush, print the stats

Both read the spool folder from ``CTXLEDGER_SPOOL_DIR``. ``measure`` exports batches of
``SPOOL_CHILD_BATCH`` spans (if set; many small spool files). ``send`` waits for the file
named by ``SPOOL_CHILD_GO`` (if set) before it configures the SDK, so that several senders
can be started at the same moment.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time

from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ctxledger
from ctxledger import semconv as sc
from ctxledger._client import Client, install
from ctxledger._settings import Settings

SERVICE = "spool-child"


def measure_journeys(count: int, prefix: str = "call") -> None:
    """``count`` tool results, each through its four stages and a request manifest."""
    with ctxledger.run("spool-agent"):
        for i in range(count):
            call_id = f"{prefix}_{i:04d}"
            result = {"results": [{"id": f"{call_id}-r{j}", "v": j} for j in range(3)]}
            text = json.dumps(result)
            ctxledger.measure(sc.STAGE_ORIGINAL, result, tool_call_id=call_id, tool_name="search")
            ctxledger.measure(sc.STAGE_SERIALIZED, text, tool_call_id=call_id, tool_name="search")
            messages = [
                {"role": "user", "content": "find it"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "search", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": text},
            ]
            ctxledger.measure_messages(messages, model="gpt-4-turbo")
            body = json.dumps({"model": "gpt-4-turbo", "messages": messages})
            ctxledger.measure_request(body.encode())


def _measure(endpoint: str, journeys: int) -> None:
    settings = Settings.resolve(service_name=SERVICE, endpoint=endpoint)
    batch = os.environ.get("SPOOL_CHILD_BATCH")
    if batch:
        settings = dataclasses.replace(settings, export_batch=int(batch))
    client = install(Client(settings))
    assert client.owned_provider is not None
    recorded = InMemorySpanExporter()
    client.owned_provider.add_span_processor(SimpleSpanProcessor(recorded))
    measure_journeys(journeys)
    assert client.recorder.flush(30)
    ids = [format(s.get_span_context().span_id, "016x") for s in recorded.get_finished_spans()]
    print(json.dumps(ids), flush=True)
    # Exit with the collector down: the exit hook puts what is left in the spool.


def _send(endpoint: str) -> None:
    go = os.environ.get("SPOOL_CHILD_GO")
    if go:
        print("ready", flush=True)
        while not os.path.exists(go):
            time.sleep(0.01)
    client = ctxledger.configure(service_name=SERVICE, endpoint=endpoint)
    flushed = client.flush(timeout_s=60)
    stats = dataclasses.asdict(client.stats())
    print(json.dumps({"flushed": flushed, **stats}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "measure":
        _measure(sys.argv[2], int(sys.argv[3]))
    else:
        _send(sys.argv[2])
