"""The forwarder: every accepted export, as it arrived, to each destination's queue.

:meth:`Forwarder.submit` is what ingest calls, on the event loop, after answering 200:
it only appends to in-memory queues (O(1), never waiting), so forwarding cannot slow
or fail ingest. Each destination has its own queue and sender thread, so one slow or
down destination delays nobody else. At shutdown the senders get a bounded time to
flush; whatever is left then is counted ``dropped_shutdown``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from prometheus_client import Counter

from ctxledger_collector.forwarding.destinations import Destination
from ctxledger_collector.forwarding.limits import ForwardLimits
from ctxledger_collector.forwarding.queue import ForwardQueue, ForwardRequest, QueueSize
from ctxledger_collector.forwarding.retry import OUTCOMES, Outcome
from ctxledger_collector.forwarding.sender import DestinationSender

logger = logging.getLogger("ctxledger.collector.forward")

#: After the flush deadline, how long a sender may take to notice it should stop.
_STOP_GRACE_S = 2.0


class ForwardMetrics(Protocol):
    """The metrics the forwarder counts in (the collector's ``CollectorMetrics``)."""

    forward_requests: Counter
    forward_bytes: Counter

    def watch_forward_queues(self, sizes: Callable[[], Iterable[QueueSize]]) -> None: ...


class _MetricsTally:
    """Counts every outcome in the metrics; warns once per destination and reason."""

    def __init__(self, metrics: ForwardMetrics) -> None:
        self.metrics = metrics
        self._warned: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def count(self, destination: str, outcome: Outcome, size: int) -> None:
        self.metrics.forward_requests.labels(destination, outcome).inc()
        self.metrics.forward_bytes.labels(destination, outcome).inc(size)

    def warn_once(self, destination: str, reason: str, message: str) -> None:
        with self._lock:
            if (destination, reason) in self._warned:
                return
            self._warned.add((destination, reason))
        logger.warning(
            "ctxledger forward to %s: %s (logged once per reason; counted in "
            "ctxledger_forward_requests_total)",
            destination,
            message,
        )


class Forwarder:
    def __init__(
        self, destinations: Sequence[Destination], limits: ForwardLimits, metrics: ForwardMetrics
    ) -> None:
        self.limits = limits
        self._tally = _MetricsTally(metrics)
        self._senders = [
            DestinationSender(
                destination,
                ForwardQueue(limits.queue_max_requests, limits.queue_max_bytes),
                limits.retry,
                limits.timeout_s,
                self._tally,
            )
            for destination in destinations
        ]
        self._stopping = False
        for destination in destinations:  # every series exists from the start, at 0
            for outcome in OUTCOMES:
                metrics.forward_requests.labels(destination.name, outcome)
                metrics.forward_bytes.labels(destination.name, outcome)
        metrics.watch_forward_queues(self.queue_sizes)

    @property
    def enabled(self) -> bool:
        return bool(self._senders)

    def start(self) -> None:
        for sender in self._senders:
            sender.start()
            logger.info(
                "ctxledger collector: forwarding accepted exports to %s", sender.destination.name
            )

    def submit(
        self,
        body: bytes,
        content_type: str,
        content_encoding: str | None,
        signal: str = "traces",
    ) -> None:
        """Queue one accepted export for every destination (a logs export for those with
        a logs endpoint); never waits."""
        if not self._senders:
            return
        request = ForwardRequest(bytes(body), content_type, content_encoding, signal)
        for sender in self._senders:
            if signal == "logs" and sender.destination.logs_url is None:
                continue
            name = sender.destination.name
            if self._stopping:
                self._tally.count(name, "dropped_shutdown", request.size)
                continue
            for dropped in sender.queue.put(request):
                self._tally.count(name, "dropped_full", dropped.size)
                self._tally.warn_once(
                    name,
                    "queue full",
                    "the queue is full; dropping the oldest requests (raise "
                    "CTXLEDGER_FORWARD_QUEUE_MAX_REQUESTS / _MAX_BYTES, or fix the destination)",
                )

    def stop(self) -> None:
        """Flush for at most ``flush_timeout_s``, then count what is left as dropped."""
        self._stopping = True
        deadline = time.monotonic() + self.limits.flush_timeout_s
        for sender in self._senders:
            sender.close(deadline)
        for sender in self._senders:
            sender.join(deadline - time.monotonic())
        for sender in self._senders:
            sender.abandon()
        for sender in self._senders:
            if sender.join(_STOP_GRACE_S):
                sender.release()
            else:
                logger.warning(
                    "ctxledger forward to %s: the sender did not stop", sender.destination.name
                )
            left = sender.queue.drain()
            for request in left:
                self._tally.count(sender.destination.name, "dropped_shutdown", request.size)
            if left:
                logger.warning(
                    "ctxledger forward to %s: %d requests not sent at shutdown",
                    sender.destination.name,
                    len(left),
                )

    def queue_sizes(self) -> Iterator[QueueSize]:
        for sender in self._senders:
            yield QueueSize(sender.destination.name, sender.queue.requests, sender.queue.bytes)
