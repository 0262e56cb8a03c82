"""The client side: the stock ``OTLPSpanExporter`` exporting ready batches from threads.

``exporter.export(batch)`` is what a ``BatchSpanProcessor`` calls with each batch it
forms, so calling it directly with batches of ``max_export_batch_size`` spans sends the
same requests, without the processor's queue or its schedule. Each thread has its own
exporter. Every HTTP attempt the exporter makes (its retries on 429/503 included) goes
through :class:`TimedSession`, a ``requests.Session`` that notes status and latency.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult


@dataclass(frozen=True)
class Attempt:
    """One HTTP request the exporter made: its status (None: no answer) and latency."""

    status: int | None
    seconds: float


class TimedSession(requests.Session):
    def __init__(self, attempts: list[Attempt], lock: threading.Lock) -> None:
        super().__init__()
        self._attempts = attempts
        self._lock = lock

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        started = time.perf_counter()
        status: int | None = None
        try:
            response = super().request(*args, **kwargs)
            status = response.status_code
            return response
        finally:
            with self._lock:
                self._attempts.append(Attempt(status, time.perf_counter() - started))


@dataclass
class FeedResult:
    seconds: float
    acknowledged: list[int] = field(default_factory=list)  # batch indexes exported
    failed: list[int] = field(default_factory=list)  # batch indexes the exporter gave up on
    attempts: list[Attempt] = field(default_factory=list)

    def statuses(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for attempt in self.attempts:
            key = "no answer" if attempt.status is None else str(attempt.status)
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))


def quiet_exporter_logs() -> None:
    """The exporter logs every retry and every give-up; the bench counts them instead."""
    logging.getLogger("opentelemetry.exporter").setLevel(logging.CRITICAL)


def batches_of(spans: Sequence[ReadableSpan], size: int) -> list[Sequence[ReadableSpan]]:
    return [spans[i : i + size] for i in range(0, len(spans), size)]


def feed(
    endpoint: str,
    batches: Sequence[Sequence[ReadableSpan]],
    threads: int,
    timeout_s: float = 10.0,
    assignment: Sequence[Sequence[int]] | None = None,
) -> FeedResult:
    """Export every batch; each thread takes the next unsent batch, or its own list of
    batch indexes when ``assignment`` gives one per thread. Timed from the first
    ``export()`` call until the last one returned."""
    lock = threading.Lock()
    result = FeedResult(seconds=0.0)
    exporters = [
        OTLPSpanExporter(
            endpoint=endpoint, timeout=timeout_s, session=TimedSession(result.attempts, lock)
        )
        for _ in range(threads)
    ]
    shared = iter(range(len(batches)))

    def next_index(own: Sequence[int] | None, position: int) -> int | None:
        if own is not None:
            return own[position] if position < len(own) else None
        with lock:
            return next(shared, None)

    def worker(index: int) -> None:
        own = assignment[index] if assignment is not None else None
        position = 0
        while (batch := next_index(own, position)) is not None:
            position += 1
            outcome = exporters[index].export(batches[batch])
            with lock:
                done = result.acknowledged if outcome is SpanExportResult.SUCCESS else result.failed
                done.append(batch)

    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    started = time.perf_counter()
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    result.seconds = time.perf_counter() - started
    for exporter in exporters:
        exporter.shutdown()  # type: ignore[no-untyped-call]
    return result
