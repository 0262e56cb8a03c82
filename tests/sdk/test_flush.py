"""flush() measures what is still queued, with the worker, each job exactly once and in
order, and returns False at its timeout instead of hanging."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ctxledger
from ctxledger import semconv as sc
from ctxledger._client import Client

STAGES = ("original", "serialized", "assembled", "sent")


class CallbackOnEnd(SpanProcessor):
    """Runs ``callback`` with each ended span, on the thread that measured it."""

    def __init__(self, callback: Callable[[ReadableSpan], None]) -> None:
        self.callback = callback

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self.callback(span)


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def _client(exporter: InMemorySpanExporter, *extra: SpanProcessor) -> Client:
    provider = TracerProvider()
    for processor in extra:
        provider.add_span_processor(processor)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return ctxledger.configure(export=False, ledger=None, tracer_provider=provider)


@pytest.fixture
def client(exporter: InMemorySpanExporter) -> Iterator[Client]:
    client = _client(exporter)
    yield client
    client.shutdown()


def _stages(exporter: InMemorySpanExporter) -> list[tuple[str, str]]:
    spans = [span.attributes or {} for span in exporter.get_finished_spans()]
    return [(str(a[sc.TOOL_CALL_ID]), str(a[sc.STAGE])) for a in spans if sc.STAGE in a]


def test_concurrent_flushes_measure_every_job_once_and_each_journey_in_order(
    client: Client, exporter: InMemorySpanExporter
) -> None:
    threads, journeys = 4, 150

    def agent(worker: int) -> None:
        for n in range(journeys):
            text = f'[{{"id": "{worker}-{n}", "body": "检索返回了 {n} 条"}}]'
            for stage in STAGES:
                ctxledger.measure(stage, text, tool_call_id=f"call-{worker}-{n}")
            assert ctxledger.flush(timeout_s=10.0)

    running = [threading.Thread(target=agent, args=(w,)) for w in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()

    measured = _stages(exporter)
    calls = [f"call-{w}-{n}" for w in range(threads) for n in range(journeys)]
    expected = {(call_id, stage) for call_id in calls for stage in STAGES}
    assert len(measured) == len(expected)  # nothing measured twice
    assert set(measured) == expected  # nothing lost
    by_call: dict[str, list[str]] = {}
    for call_id, stage in measured:
        by_call.setdefault(call_id, []).append(stage)
    assert all(stages == list(STAGES) for stages in by_call.values())
    assert ctxledger.stats().measured == len(expected)


def test_flush_returns_false_at_its_timeout_while_a_measurement_is_under_way(
    exporter: InMemorySpanExporter,
) -> None:
    entered, release = threading.Event(), threading.Event()

    def hold_the_slow_one(span: ReadableSpan) -> None:
        if (span.attributes or {}).get(sc.TOOL_CALL_ID) == "call-slow":
            entered.set()
            release.wait(10.0)

    client = _client(exporter, CallbackOnEnd(hold_the_slow_one))
    try:
        ctxledger.measure("original", "slow", tool_call_id="call-slow")
        assert entered.wait(10.0)
        ctxledger.measure("original", "queued behind it", tool_call_id="call-next")
        assert ctxledger.flush(timeout_s=0.2) is False
        release.set()
        assert ctxledger.flush(timeout_s=10.0) is True
        assert _stages(exporter) == [("call-slow", "original"), ("call-next", "original")]
    finally:
        release.set()
        client.shutdown()


def test_a_flush_from_inside_the_measuring_does_not_deadlock(
    exporter: InMemorySpanExporter,
) -> None:
    answers: list[bool] = []

    def flush_from_a_processor(span: ReadableSpan) -> None:
        if not answers:
            answers.append(ctxledger.flush(timeout_s=5.0))

    client = _client(exporter, CallbackOnEnd(flush_from_a_processor))
    try:
        for stage in STAGES:
            ctxledger.measure(stage, "[1, 2, 3]", tool_call_id="call-1")
        assert ctxledger.flush(timeout_s=10.0) is True
        assert answers == [True]
        assert sorted(_stages(exporter)) == sorted(("call-1", s) for s in STAGES)
    finally:
        client.shutdown()
