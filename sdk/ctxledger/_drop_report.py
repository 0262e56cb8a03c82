"""The drop report: what the SDK had to drop, sent as a span of its own, so the collector
can say "the SDK dropped N spans on host H" even when no manifest follows the drop.

Totals are running totals of the process (its resource's ``service.instance.id``): a
report that is itself lost costs nothing, the next one carries the same count and more.
"""

from __future__ import annotations

import threading
import time

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from ctxledger import semconv as sc
from ctxledger._pipeline_stats import DropCounter


class DropReporter:
    def __init__(self, tracer: trace.Tracer, counter: DropCounter, every_s: float = 5.0) -> None:
        self._tracer = tracer
        self._counter = counter
        self._every_s = every_s
        self._lock = threading.Lock()
        self._reported = (0, 0, 0)
        self._reported_at = -every_s

    def report(self, force: bool = False) -> None:
        """Emit a report if a drop total changed since the last one, at most every
        ``every_s`` seconds unless ``force`` (at shutdown)."""
        stats = self._counter.snapshot()
        totals = (stats.queue_dropped, stats.spans_dropped, stats.spool_dropped)
        with self._lock:
            now = time.monotonic()
            if totals == self._reported or (not force and now - self._reported_at < self._every_s):
                return
            self._reported, self._reported_at = totals, now
        attributes: dict[str, AttributeValue] = {
            sc.SDK_DROPPED_SPANS: sum(totals),
            sc.SDK_DROPS_QUEUE: totals[0],
            sc.SDK_DROPS_BUFFER: totals[1],
            sc.SDK_DROPS_SPOOL: totals[2],
            sc.SDK_SPOOL_SPANS: stats.spool_spans,
        }
        # A root span of its own (an empty context): it belongs to no agent run.
        span = self._tracer.start_span(sc.SPAN_SDK_DROPS, context=Context(), attributes=attributes)
        span.end()
