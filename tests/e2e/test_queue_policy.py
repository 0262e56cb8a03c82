"""One queue policy (docs/instrumenting.md): when a queue of the SDK is full, the oldest
entries go first, counted. The measurement queue follows it, and so does the span
buffer; the on-disk spool follows it too (tests/e2e/test_spool.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxledger
from ctxledger import semconv as sc

from .helpers import wait_for
from .otlp_receiver import OTLPReceiver
from .pipeline_kit import free_port, install_client, span_id


@pytest.fixture(autouse=True)
def inert_client_afterwards() -> Iterator[None]:
    yield
    ctxledger.configure(service_name="e2e-idle", export=False)


def test_a_full_measurement_queue_drops_its_oldest_jobs(receiver: OTLPReceiver) -> None:
    entered, gate = threading.Event(), threading.Event()

    def must_keep(item: Any) -> bool:  # holds the measuring worker until the test lets go
        entered.set()
        gate.wait(30)
        return False

    client, recorded = install_client(
        receiver.url, None, client_options={"must_keep": must_keep}, max_queue=5
    )
    ctxledger.measure(sc.STAGE_ORIGINAL, [{"id": 1}], tool_call_id="held")
    assert entered.wait(30), "the worker is measuring the first result"
    for i in range(12):  # the queue holds 5: the 7 oldest of these must go
        assert ctxledger.measure(sc.STAGE_ORIGINAL, f"result {i}", tool_call_id=f"c{i:02d}") is None
    assert client.stats().queue_dropped == 7
    gate.set()
    assert client.recorder.flush(30)
    measured = [
        s.attributes[sc.TOOL_CALL_ID]
        for s in recorded.get_finished_spans()
        if s.name != sc.SPAN_SDK_DROPS
    ]
    assert measured == ["held", "c07", "c08", "c09", "c10", "c11"]
    assert client.stats().measured == 6


def test_a_full_span_buffer_drops_its_oldest_spans(tmp_path: Path) -> None:
    port = free_port()
    client, recorded = install_client(f"http://127.0.0.1:{port}", None, max_queue=50)
    for i in range(500):  # straight into the span buffer, no spool to take the overflow
        client.tracer.start_span(f"span {i:03d}").end()
    wait_for(lambda: client.stats().export_failures >= 1, what="a refused export")
    assert client.stats().spans_dropped >= 500 - 2 * 50

    with OTLPReceiver(port=port) as receiver:
        assert ctxledger.flush(timeout_s=30)
        ctxledger.configure(service_name="e2e-idle", export=False)  # shut down while it listens
        received = {s.span_id for s in receiver.spans}
    ended = recorded.get_finished_spans()  # drop reports included
    ended_ids = [span_id(s) for s in ended]
    kept = [i for i in ended_ids if i in received]
    assert received <= set(ended_ids)
    assert (
        0 < len([s for s in ended if span_id(s) in received and s.name != sc.SPAN_SDK_DROPS]) <= 50
    )
    # What arrived is the newest spans; what was dropped, the oldest (and counted).
    assert kept == ended_ids[len(ended_ids) - len(kept) :]
    assert client.stats().spans_dropped == len(ended_ids) - len(kept)
