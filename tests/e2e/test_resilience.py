"""Never blocks, never loses silently: a collector outage is ridden out by retrying (and
the spool), and whatever cannot be kept is counted in ``ctxledger.stats()``."""

from __future__ import annotations

import socket
from collections.abc import Callable

from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ctxledger
from ctxledger import semconv as sc
from ctxledger._client import Client

from .helpers import wait_for
from .otlp_receiver import OTLPReceiver


def _free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (until a test starts a receiver on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_outage_then_recovery_loses_nothing(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver
) -> None:
    configure_sdk()
    receiver.fail(503)  # with Retry-After: 0, so the SDK's own retry loop does the work
    call_ids = [f"call_{i:04d}" for i in range(2000)]
    with ctxledger.run("busy-agent"):
        for call_id in call_ids:
            assert (
                ctxledger.measure(sc.STAGE_ORIGINAL, f"result {call_id}", tool_call_id=call_id)
                is None
            )
    wait_for(lambda: ctxledger.stats().measured == 2000, what="2000 measurements")
    wait_for(lambda: ctxledger.stats().export_failures >= 1, what="a failed export")
    assert any(r.status == 503 for r in receiver.requests)
    assert receiver.spans == []
    during = ctxledger.stats()
    assert during.spans_exported == 0
    assert during.dropped == 0

    receiver.recover()
    assert ctxledger.flush(timeout_s=30)
    spans = [s for s in receiver.spans if sc.STAGE in s.attributes]
    assert {s.attributes[sc.TOOL_CALL_ID] for s in spans} == set(call_ids)
    assert len({s.span_id for s in spans}) == 2000
    assert [s.name for s in receiver.spans if sc.STAGE not in s.attributes] == [sc.SPAN_RUN]
    after = ctxledger.stats()
    assert after.spans_exported == 2000 + 1  # the measurements and their run span
    assert after.dropped == 0


def test_overflow_with_a_dead_endpoint_and_no_spool_is_counted(
    configure_sdk: Callable[..., Client],
) -> None:
    port = _free_port()
    client = configure_sdk(endpoint=f"http://127.0.0.1:{port}", max_queue=50, spool_dir="off")
    assert client.owned_provider is not None
    ended = InMemorySpanExporter()  # every span the SDK ended, drop reports included
    client.owned_provider.add_span_processor(SimpleSpanProcessor(ended))
    # No ctxledger.run() here: every span the pipeline sees is one measurement.
    for i in range(500):
        ctxledger.measure(sc.STAGE_ORIGINAL, f"result {i}", tool_call_id=f"call_{i}")
    wait_for(
        lambda: (s := ctxledger.stats()).measured + s.queue_dropped == 500,
        what="every measurement measured or counted as dropped",
    )
    wait_for(lambda: ctxledger.stats().export_failures >= 1, what="a refused export")
    stats = ctxledger.stats()
    assert stats.spans_exported == 0
    assert stats.spans_spooled == 0
    assert stats.dropped > 0

    # The collector comes up on that port: what was kept arrives, the rest was counted.
    with OTLPReceiver(port=port) as late_receiver:
        assert ctxledger.flush(timeout_s=30)
        ctxledger.configure(service_name="e2e-idle", export=False)  # shut down while it listens
        final = client.stats()
        received = {s.span_id for s in late_receiver.spans}
        all_ended = {
            format(s.get_span_context().span_id, "016x") for s in ended.get_finished_spans()
        }
        assert final.spans_exported == len(received) > 0
        assert received <= all_ended
        assert len(all_ended) == final.spans_exported + final.spans_dropped
        assert final.measured + final.queue_dropped == 500


def test_replacing_a_client_during_an_outage_keeps_its_spans_in_the_spool(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver
) -> None:
    old = configure_sdk()
    receiver.fail(503)
    ctxledger.measure(sc.STAGE_ORIGINAL, "result", tool_call_id="call_1")
    wait_for(lambda: ctxledger.stats().export_failures >= 1, what="a failed export")
    ctxledger.configure(service_name="e2e-idle", export=False)
    # The old client could not export and left its span on disk: nothing lost, nothing silent.
    assert old.stats().spans_spooled == 1
    assert old.stats().dropped == 0
    receiver.recover()
    configure_sdk()  # the next client with the same spool sends it
    assert ctxledger.flush(timeout_s=30)
    assert [s.attributes[sc.TOOL_CALL_ID] for s in receiver.spans] == ["call_1"]


def test_replacing_a_client_during_an_outage_without_a_spool_counts_the_loss(
    configure_sdk: Callable[..., Client], receiver: OTLPReceiver
) -> None:
    old = configure_sdk(spool_dir="off")
    receiver.fail(503)
    ctxledger.measure(sc.STAGE_ORIGINAL, "result", tool_call_id="call_1")
    wait_for(lambda: ctxledger.stats().export_failures >= 1, what="a failed export")
    ctxledger.configure(service_name="e2e-idle", export=False)
    # The old client gave up within its shutdown budget and said so: nothing silent.
    assert old.stats().spans_dropped == 1
    assert old.stats().spans_exported == 0
