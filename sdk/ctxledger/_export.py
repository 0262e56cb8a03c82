"""The span pipeline ctxledger builds when the application has no OpenTelemetry SDK.

The stock BatchSpanProcessor drops spans silently when its 2,048-span queue is full and
its exporter gives a batch up after about ten seconds of outage. This processor keeps a
large bounded buffer, puts a failed batch back and retries it with backoff, and counts
every span it had to drop, so the auditor never loses data silently itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

logger = logging.getLogger("ctxledger")


@dataclass
class PipelineStats:
    """Counters of the SDK's own pipeline; ``dropped`` is everything that never left."""

    measured: int = 0
    queue_dropped: int = 0
    spans_exported: int = 0
    spans_dropped: int = 0
    export_failures: int = 0

    @property
    def dropped(self) -> int:
        return self.queue_dropped + self.spans_dropped


class DropCounter:
    """Thread-safe stats plus a rate-limited warning whenever something is dropped."""

    def __init__(self, warn_every_s: float = 10.0) -> None:
        self.stats = PipelineStats()
        self._lock = threading.Lock()
        self._warn_every_s = warn_every_s
        self._last_warning = 0.0

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + amount)
            should_warn = name in ("queue_dropped", "spans_dropped") and (
                time.monotonic() - self._last_warning >= self._warn_every_s
            )
            if should_warn:
                self._last_warning = time.monotonic()
            dropped = self.stats.dropped
        if should_warn:
            logger.warning(
                "ctxledger: %d measurements dropped so far in this process (%s); "
                "raise CTXLEDGER_MAX_QUEUE or check the collector",
                dropped,
                name.replace("_", " "),
            )

    def snapshot(self) -> PipelineStats:
        with self._lock:
            return PipelineStats(**vars(self.stats))


class BufferedSpanProcessor(SpanProcessor):
    """Batches ended spans to an exporter from a background thread, never blocking the
    caller. A full buffer drops the oldest span and counts it; a failed export is
    retried with exponential backoff (up to ``max_backoff_s``) while it fits the buffer.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        counter: DropCounter,
        max_queue: int = 65_536,
        batch_size: int = 1024,
        delay_s: float = 0.5,
        max_backoff_s: float = 30.0,
    ) -> None:
        self._exporter = exporter
        self._counter = counter
        self._queue: deque[ReadableSpan] = deque()
        self._max_queue = max_queue
        self._batch_size = batch_size
        self._delay_s = delay_s
        self._max_backoff_s = max_backoff_s
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._stopping = False
        self._backoff_s = 0.0
        self._in_flight = 0
        self._abandoned = False
        self._thread = threading.Thread(target=self._run, name="ctxledger-export", daemon=True)
        self._thread.start()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            if len(self._queue) >= self._max_queue:
                self._queue.popleft()
                self._counter.add("spans_dropped")
            self._queue.append(span)
            self._idle.clear()
            full = len(self._queue) >= self._batch_size
        if full:
            self._wake.set()

    def _take(self) -> list[ReadableSpan]:
        with self._lock:
            count = min(self._batch_size, len(self._queue))
            return [self._queue.popleft() for _ in range(count)]

    def _put_back(self, batch: Sequence[ReadableSpan]) -> None:
        with self._lock:
            room = self._max_queue - len(self._queue)
            keep = list(batch[: max(room, 0)])
            self._queue.extendleft(reversed(keep))
            lost = len(batch) - len(keep)
        if lost:
            self._counter.add("spans_dropped", lost)

    def _export_once(self) -> bool:
        """Export one batch; False when the exporter failed (the batch was put back)."""
        batch = self._take()
        if not batch:
            return True
        with self._lock:
            self._in_flight = len(batch)
        try:
            result = self._exporter.export(batch)
        except Exception as error:
            logger.debug("ctxledger: export raised %r", error)
            result = SpanExportResult.FAILURE
        with self._lock:
            self._in_flight = 0
            if self._abandoned:  # shutdown already counted this batch as dropped
                return False
        if result == SpanExportResult.SUCCESS:
            self._counter.add("spans_exported", len(batch))
            return True
        self._counter.add("export_failures")
        if self._stopping:
            self._counter.add("spans_dropped", len(batch))
        else:
            self._put_back(batch)
        return False

    def _run(self) -> None:
        while True:
            self._wake.wait(self._backoff_s or self._delay_s)
            self._wake.clear()
            while True:
                ok = self._export_once()
                with self._lock:
                    empty = not self._queue
                if not ok:
                    self._backoff_s = min(max(self._backoff_s * 2, 1.0), self._max_backoff_s)
                    break
                self._backoff_s = 0.0
                if empty:
                    self._idle.set()
                    break
            if self._stopping and (self._idle.is_set() or not ok):
                return

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        self._wake.set()
        return self._idle.wait(timeout_millis / 1000)

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Export what is buffered within ``timeout_s``; count the rest as dropped."""
        if self._stopping:
            return
        deadline = time.monotonic() + timeout_s
        self.force_flush(int(timeout_s * 1000))
        self._stopping = True
        self._wake.set()
        self._exporter.shutdown()  # ends the exporter's own retry wait early
        self._thread.join(timeout=max(deadline - time.monotonic(), 0.0))
        with self._lock:
            # A batch still in the exporter's hands past the deadline is counted as
            # dropped: we cannot know it arrived.
            self._abandoned = self._thread.is_alive()
            left = len(self._queue) + (self._in_flight if self._abandoned else 0)
            self._queue.clear()
        if left:
            self._counter.add("spans_dropped", left)
