"""The SDK's own counters: what it measured, exported, spooled, dropped and had refused.

Every drop is counted and warned about (at most every 10 s); every rejection is counted
by its reason and logged once per reason, so the auditor never loses anything silently.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field, fields

logger = logging.getLogger("ctxledger")

#: Distinct rejection reasons kept in the stats; later new reasons share one entry.
MAX_REASONS = 64
OTHER_REASONS = "(other reasons)"

_DROP_COUNTERS = ("queue_dropped", "spans_dropped", "spool_dropped")


@dataclass
class PipelineStats:
    """Counters of the SDK's own pipeline since the process configured ctxledger.

    ``dropped`` is everything that never left and never will. Spans sent from the spool
    count in the process that sent them, which may be a later process than the one
    that measured them.
    """

    measured: int = 0
    """Measurements emitted as spans."""
    queue_dropped: int = 0
    """Measurement jobs dropped because the measurement queue was full (oldest first)."""
    spans_exported: int = 0
    """Spans the collector accepted."""
    spans_dropped: int = 0
    """Spans dropped from memory: the span buffer was full (oldest first) while they could
    not go to the spool, or they could not leave before shutdown."""
    spans_spooled: int = 0
    """Spans written to the on-disk spool because they could not be exported then."""
    spool_dropped: int = 0
    """Spans deleted from a full spool, oldest first."""
    spans_rejected: int = 0
    """Spans the collector refused for good (400, 413, ``partial_success``)."""
    rejected_reasons: dict[str, int] = field(default_factory=dict)
    """``spans_rejected`` by reason."""
    export_failures: int = 0
    """Export attempts that failed and are retried (outage, 503, 429, network error)."""
    export_problem: str = ""
    """Why the latest export attempt failed ("the collector is unreachable: [Errno 111]
    Connection refused"); empty once an attempt succeeds."""
    spool_spans: int = 0
    """Spans waiting in the spool now (every process's), as of the last export cycle."""
    spool_bytes: int = 0
    """Bytes the spool holds now, as of the last export cycle."""

    @property
    def dropped(self) -> int:
        return self.queue_dropped + self.spans_dropped + self.spool_dropped


class DropCounter:
    """Thread-safe stats, a rate-limited warning whenever something is dropped, and a
    warning once per distinct rejection reason."""

    def __init__(self, warn_every_s: float = 10.0) -> None:
        self.stats = PipelineStats()
        self._lock = threading.Lock()
        self._warn_every_s = warn_every_s
        self._last_warning = 0.0

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + amount)
            should_warn = name in _DROP_COUNTERS and (
                time.monotonic() - self._last_warning >= self._warn_every_s
            )
            if should_warn:
                self._last_warning = time.monotonic()
            dropped = self.stats.dropped
        if should_warn:
            logger.warning(
                "ctxledger: %d measurements dropped so far in this process (%s); "
                "raise CTXLEDGER_MAX_QUEUE or CTXLEDGER_SPOOL_MAX_BYTES, or check the collector",
                dropped,
                name.replace("_", " "),
            )

    def reject(self, reason: str, spans: int, detail: str = "") -> None:
        """Count ``spans`` refused for ``reason``; the first time a reason is seen, log it
        (with ``detail``, e.g. the collector's message)."""
        with self._lock:
            reasons = self.stats.rejected_reasons
            if reason not in reasons and len(reasons) >= MAX_REASONS:
                reason = OTHER_REASONS
            first = reason not in reasons
            reasons[reason] = reasons.get(reason, 0) + spans
            self.stats.spans_rejected += spans
        if first:
            logger.warning(
                "ctxledger: the collector refused %d span(s): %s%s; they are not retried "
                "(counted in ctxledger.stats().rejected_reasons; this reason is logged once)",
                spans,
                reason,
                f" ({detail})" if detail and detail != reason else "",
            )

    def set_export_problem(self, problem: str) -> None:
        with self._lock:
            self.stats.export_problem = problem

    def set_spool(self, spans: int, size: int) -> None:
        with self._lock:
            self.stats.spool_spans = spans
            self.stats.spool_bytes = size

    def snapshot(self) -> PipelineStats:
        with self._lock:
            copied = {f.name: getattr(self.stats, f.name) for f in fields(PipelineStats)}
            copied["rejected_reasons"] = dict(self.stats.rejected_reasons)
            return PipelineStats(**copied)
