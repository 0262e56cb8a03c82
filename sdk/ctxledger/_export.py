"""The span pipeline ctxledger builds when the application has no OpenTelemetry SDK.

The stock BatchSpanProcessor drops spans silently when its 2,048-span queue is full, and
its exporter gives a batch up after about ten seconds of outage. This processor batches
ended spans from a background thread and never blocks the caller:

* a batch the collector cannot take now (unreachable, 503, 429, timeout) goes to the
  on-disk spool and is sent again, oldest first, when the collector takes batches again
  (honouring ``Retry-After``, else backing off 1 s doubling to ``max_backoff_s``); while
  the spool holds a backlog, new batches queue behind it;
* a batch refused for good (400, an answer of 413 for a single span) is counted as
  rejected with its reason; a 413 for several spans is halved and sent again;
* memory is bounded by ``max_queue`` spans (waiting, plus failed batches when there is no
  spool); when it is full the oldest go first, counted.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from ctxledger._backoff import Backoff
from ctxledger._delivery import Delivery, Parts
from ctxledger._memory_store import MemoryStore
from ctxledger._otlp_sender import OTLPSender
from ctxledger._otlp_split import encode
from ctxledger._pipeline_stats import DropCounter
from ctxledger._safety import raise_errors, report_failure
from ctxledger._spool import Claim, DiskSpool

_RECOVER_EVERY_S = 30.0


class BufferedSpanProcessor(SpanProcessor):
    def __init__(
        self,
        sender: OTLPSender,
        counter: DropCounter,
        spool: DiskSpool | None = None,
        max_queue: int = 65_536,
        batch_size: int = 1024,
        delay_s: float = 0.5,
        max_backoff_s: float = 30.0,
        after_cycle: Callable[[], None] | None = None,
    ) -> None:
        self._counter = counter
        self._spool = spool
        self._memory = MemoryStore()
        self._max_queue = max_queue
        self._batch_size = batch_size
        self._delay_s = delay_s
        kept_in = f"the spool {spool.directory}" if spool is not None else "memory"
        backoff = Backoff(floor_s=delay_s, max_s=max_backoff_s)
        self._delivery = Delivery(sender, counter, backoff, kept_in)
        self._after_cycle = after_cycle
        self._queue: deque[ReadableSpan] = deque()
        self._cond = threading.Condition()
        self._wake = threading.Event()
        self._settled = False
        self._cycles_started = 0
        self._cycles_finished = 0
        self._stopping = False
        self._closed = False
        self._deadline = float("inf")
        self._last_recovery = -_RECOVER_EVERY_S
        self._in_flight: Claim | None = None
        self._abandoned = False
        self._errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="ctxledger-export", daemon=True)
        self._thread.start()

    @property
    def spool(self) -> DiskSpool | None:
        return self._spool

    # --- the caller's side: never blocks ----------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        with self._cond:
            if self._closed:  # ended after shutdown: it can no longer leave
                lost, full = 1, False
            else:
                lost = self._make_room_locked(1)
                self._queue.append(span)
                self._settled = False
                full = len(self._queue) >= self._batch_size
        if lost:
            self._counter.add("spans_dropped", lost)
        if full:
            self._wake.set()

    def _make_room_locked(self, incoming: int) -> int:
        """Drop the oldest spans in memory (failed batches first: they are older than
        anything queued) until ``incoming`` more fit; how many were dropped."""
        lost = 0
        while self._queue or self._memory.spans:
            if len(self._queue) + self._memory.spans + incoming <= self._max_queue:
                break
            dropped = self._memory.drop_oldest()
            if not dropped:
                self._queue.popleft()
                dropped = 1
            lost += dropped
        return lost

    # --- the export thread -----------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(self._delay_s)
            self._wake.clear()
            with self._cond:
                final = self._stopping  # asked to stop before this cycle: the last one
                self._cycles_started += 1
                cycle = self._cycles_started
            try:
                self._cycle()
                self._update_settled(cycle)
            except Exception as error:  # a bug: never let it end the export thread
                self._errors.append(error)
                report_failure("ctxledger export", error)
            if final:
                return

    def _cycle(self) -> None:
        if self._spool is not None and time.monotonic() - self._last_recovery >= _RECOVER_EVERY_S:
            self._last_recovery = time.monotonic()
            self._spool.recover_stale()
        self._export_queue()
        if self._spool is not None:
            self._drain(self._spool)
        self._drain(self._memory)
        if self._spool is not None:
            self._counter.set_spool(*self._spool.pending())
        if self._after_cycle is not None and not self._stopping:
            self._after_cycle()

    def _can_send(self) -> bool:
        if self._abandoned:  # shutdown took over what was left: send nothing more
            return False
        past_deadline = self._stopping and time.monotonic() >= self._deadline
        return self._delivery.backoff.ready() and not past_deadline

    def _backlog(self) -> bool:
        return bool(self._memory.spans) or (self._spool is not None and self._spool.has_backlog())

    def _take(self) -> list[ReadableSpan]:
        with self._cond:
            count = min(self._batch_size, len(self._queue))
            return [self._queue.popleft() for _ in range(count)]

    def _export_queue(self) -> None:
        """Send the queued spans, or keep them (spool) behind a backlog or during an outage.
        Without a spool that can be written, spans that cannot go wait in the queue."""
        while True:
            sending = self._can_send() and not self._backlog()
            if not sending and self._spool is None:
                return
            batch = self._take()
            if not batch:
                return
            try:
                body = encode(batch)
            except Exception:
                self._counter.add("spans_dropped", len(batch))
                raise
            if sending:
                kept = self._send_tracked(Claim("queue", len(batch), body=body), body)
                if kept is None:
                    return
            else:
                kept = [(body, len(batch))]
            if kept == [(body, len(batch))]:  # the whole batch waits
                if not self._keep(body, len(batch), batch):
                    return  # back in the queue: try again next cycle
                continue
            for part, spans in kept:  # the halves of a 413 that could not go yet
                self._keep(part, spans)

    def _drain(self, store: DiskSpool | MemoryStore) -> None:
        """Send what waits in ``store``, oldest first, while the collector takes it."""
        while self._can_send() and (claim := store.claim()) is not None:
            body = claim.body if claim.body is not None else self._read(claim)
            if body is None:
                continue
            kept = self._send_tracked(claim, body)
            if kept is None:
                return
            if kept == [(body, claim.spans)]:  # not taken now: back in its place
                store.release(claim)
                return
            if isinstance(store, DiskSpool):
                store.done(claim)
            for part, spans in kept:  # the halves of a 413 that could not go yet
                self._keep(part, spans)

    def _read(self, claim: Claim) -> bytes | None:
        assert self._spool is not None
        body = self._spool.read(claim)
        if body is None:  # unreadable: it can never be sent
            self._counter.add("spool_dropped", claim.spans)
            self._spool.done(claim)
        return body

    def _send_tracked(self, claim: Claim, body: bytes) -> Parts | None:
        """:meth:`_send`, with the batch known as in flight; None when shutdown gave up on
        it meanwhile (it then took care of the batch)."""
        with self._cond:
            self._in_flight = claim
        kept = self._delivery.send(body, claim.spans, self._can_send)
        with self._cond:
            self._in_flight = None
            return None if self._abandoned else kept

    def _keep(self, body: bytes, spans: int, batch: list[ReadableSpan] | None = None) -> bool:
        """Keep a batch that could not be sent: in the spool (True), else in memory: its
        spans back at the front of the queue, or the body in the memory store. Memory
        stays within ``max_queue`` spans, the oldest dropped first."""
        if self._spool is not None and self._spool.put(body, spans):
            return True
        with self._cond:
            if batch is not None:
                self._queue.extendleft(reversed(batch))
            else:
                self._memory.put(body, spans)
            lost = self._make_room_locked(0)
        if lost:
            self._counter.add("spans_dropped", lost)
        return False

    def _update_settled(self, cycle: int) -> None:
        backlog = self._backlog()
        with self._cond:
            self._settled = not (self._queue or self._in_flight or backlog)
            self._cycles_finished = cycle
            self._cond.notify_all()

    # --- flush and shutdown ----------------------------------------------------------

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until every span was exported or refused (the spool drained too); False
        when that did not happen in time, e.g. during an outage."""
        deadline = time.monotonic() + timeout_millis / 1000
        with self._cond:
            wanted = self._cycles_started + 1  # a whole cycle that starts after this call
        self._wake.set()
        with self._cond:
            while self._thread.is_alive():
                if self._cycles_finished >= wanted and self._settled:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            settled = self._settled and self._cycles_finished >= wanted
        if self._errors and raise_errors():
            error = self._errors[0]
            self._errors.clear()
            raise error
        return settled

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Export what is queued within ``timeout_s``; what cannot leave by then stays in
        the spool for the next process (or, without a spool, is counted as dropped)."""
        with self._cond:
            if self._stopping:
                return
            self._stopping = True
            self._deadline = time.monotonic() + timeout_s
        self._wake.set()
        self._thread.join(timeout=max(self._deadline - time.monotonic(), 0.0))
        with self._cond:
            # Past the deadline the thread is still waiting on the collector: its batch
            # (unless it is a spool file, which stays claimed until this process is gone)
            # and the queue are kept here. It may yet arrive: a duplicate, never a loss.
            self._abandoned = self._thread.is_alive()
            in_flight = self._in_flight if self._abandoned else None
            left = list(self._queue)
            self._queue.clear()
            self._closed = True
        if in_flight is not None and in_flight.path is None and in_flight.body is not None:
            self._keep(in_flight.body, in_flight.spans)
        for start in range(0, len(left), self._batch_size):
            chunk = left[start : start + self._batch_size]
            self._keep(encode(chunk), len(chunk))
        lost = self._memory.drain()
        if lost:
            self._counter.add("spans_dropped", lost)
        if not self._abandoned:
            self._delivery.sender.close()
