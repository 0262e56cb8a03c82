"""Measurements leave the agent's thread at once: the caller snapshots the text and
enqueues it; a worker thread measures it, emits the span and feeds the local ledger.

The queue is bounded; when it is full the oldest waiting measurement is dropped and
counted (the rule of every queue of the SDK, see docs/instrumenting.md), never waited for.

The worker is not woken for every job: it takes what is queued once a batch has gathered,
or when it looks and finds jobs waiting (every ``_LINGER_S`` while there is work, backing
off to ``_IDLE_LOOK_S`` while there is none). A journey's stages then reach it together,
and a flush soon after them measures them in the caller's thread without a cross-thread
hand-off: every wake-up of the worker makes the agent's thread hand the GIL over and
wait to get it back (on a 2-CPU VM about 20 us per journey when woken per job, and ~15 %
slower journeys when looking every 10 ms). A measurement is emitted within about a
second without a flush, the exporter sending every ``delay_s`` (0.5 s).

``flush()`` is the one call that waits, so it measures what is still queued itself rather
than waking the worker and sleeping until it is done: two cross-CPU wake-ups cost more
than a small result's whole measurement. Jobs are taken from the queue and measured under
one lock, by the worker or a flushing caller, so they are measured once and in order.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from ctxledger import semconv as sc
from ctxledger._analysis import TextAnalyzer, TextMeasurement
from ctxledger._encodings import encoding_name_for
from ctxledger._jobs import ManifestJob, RequestJob, ResponseJob, StageJob
from ctxledger._ledger import Ledger
from ctxledger._messages import parse_request_body
from ctxledger._models import context_window_for
from ctxledger._pipeline_stats import DropCounter
from ctxledger._received import ReceivedStage
from ctxledger._safety import raise_errors, report_failure
from ctxledger._stage_attributes import measurement_attributes, stage_attributes
from ctxledger.wire import manifest_from_attributes, measurement_from_attributes
from ctxledger.wire_received import received_from_attributes

_BATCH = 16
#: How long a job may wait for a batch to gather before the worker takes it anyway.
_LINGER_S = 0.1
#: The longest the worker sleeps between looks at a queue it keeps finding empty.
_IDLE_LOOK_S = 1.0


def _span_ids(span: trace.Span) -> tuple[str, str]:
    """The span's trace and span ids as the lower-case hex the wire uses."""
    context = span.get_span_context()
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


class Recorder:
    """Owns the measurement queue and the worker that turns jobs into spans."""

    def __init__(
        self,
        tracer: trace.Tracer,
        analyzer: TextAnalyzer,
        counter: DropCounter,
        ledger: Ledger | None = None,
        max_queue: int = 65_536,
        capture_content: bool = False,
        after_batch: Callable[[], None] | None = None,
    ) -> None:
        self.tracer = tracer
        self.analyzer = analyzer
        self.counter = counter
        self.ledger = ledger
        self.capture_content = capture_content
        self._max_queue = max_queue
        self._after_batch = after_batch
        self.received = ReceivedStage(analyzer.counter)
        self._queue: deque[StageJob | ManifestJob | RequestJob | ResponseJob] = deque()
        self._cond = threading.Condition()
        # Held while a batch is taken and measured; reentrant so that a flush from code
        # the measuring runs (a span processor, the drop report) cannot deadlock.
        self._measuring = threading.RLock()
        self._closed = False
        self._errors: list[BaseException] = []
        self._measured_in_batch = 0
        self._previous_context: tuple[
            trace.Span | None, otel_context.Context | None, otel_context.Context | None
        ] = (None, None, None)
        # The stages of one journey usually measure the same text one after the other.
        self._previous_measurement: tuple[TextMeasurement | None, dict[str, AttributeValue]] = (
            None,
            {},
        )
        self._thread = threading.Thread(target=self._run, name="ctxledger-measure", daemon=True)
        self._thread.start()

    def submit(self, job: StageJob | ManifestJob | RequestJob | ResponseJob) -> bool:
        """Enqueue without blocking. A full queue drops its oldest job to make room (and
        counts it); False (counted) only when the recorder is closed."""
        with self._cond:
            accepted = not self._closed
            dropped = accepted and len(self._queue) >= self._max_queue
            if dropped:
                self._queue.popleft()
            if accepted:
                self._queue.append(job)
                if len(self._queue) >= _BATCH:
                    self._cond.notify()
        if dropped or not accepted:
            self.counter.add("queue_dropped")
        return accepted

    def _run(self) -> None:
        # Each look costs the agent a GIL hand-off, so an idle worker looks ever less often
        # (up to _IDLE_LOOK_S); a full batch wakes it at once.
        timeout = _LINGER_S
        while True:
            with self._cond:
                while len(self._queue) < _BATCH and not self._closed:
                    if not self._cond.wait(timeout=timeout):
                        if self._queue:
                            break  # lingered long enough: take what has gathered
                        timeout = min(timeout * 2, _IDLE_LOOK_S)
                if not self._queue:
                    return
            timeout = _LINGER_S
            self._measure_batch()

    def _measure_batch(self) -> bool:
        """Take up to a batch of jobs off the queue and measure them; False when the
        queue was empty."""
        with self._measuring:
            with self._cond:
                # A few jobs at a time (a journey's stages arrive together); few enough
                # that what is held outside the bounded queue stays small.
                batch = [self._queue.popleft() for _ in range(min(len(self._queue), _BATCH))]
            if not batch:
                return False
            for job in batch:
                try:
                    if isinstance(job, StageJob):
                        self._emit_stage(job)
                    elif isinstance(job, RequestJob):
                        self._emit_request(job)
                    elif isinstance(job, ResponseJob):
                        self._emit_received(job)
                    else:
                        self._emit_manifest(job)
                except Exception as error:
                    self._errors.append(error)
                    report_failure("ctxledger measurement", error)
            # Counted once per batch (before flush can return), not once per span.
            if self._measured_in_batch:
                self.counter.add("measured", self._measured_in_batch)
                self._measured_in_batch = 0
            if self._after_batch is not None:
                try:
                    self._after_batch()
                except Exception as error:
                    self._errors.append(error)
                    report_failure("ctxledger drop report", error)
            return True

    def _start_span(
        self, name: str, job: StageJob | ManifestJob | ResponseJob, attrs: Any
    ) -> trace.Span:
        ctx = job.context
        if job.parent is not None:
            # Consecutive jobs of a run share its parent and usually the caller's context.
            parent, context, with_parent = self._previous_context
            if job.parent is not parent or ctx is not context:
                with_parent = trace.set_span_in_context(job.parent, ctx)
                self._previous_context = (job.parent, ctx, with_parent)
            ctx = with_parent
        return self.tracer.start_span(name, context=ctx, attributes=attrs, start_time=job.start_ns)

    def _emit_stage(self, job: StageJob) -> None:
        measured = self.analyzer.measure(job.text, job.encoding)
        previous, shared = self._previous_measurement
        if measured is not previous:
            shared = measurement_attributes(measured)
            self._previous_measurement = (measured, shared)
        attrs = stage_attributes(job, measured, self.capture_content, shared)
        span = self._start_span(f"{sc.SPAN_MEASUREMENT} {job.stage}", job, attrs)
        span.end()
        self._measured_in_batch += 1
        if self.ledger is not None:
            trace_id, span_id = _span_ids(span)
            self.ledger.observe_measurement(
                measurement_from_attributes(
                    attrs, trace_id=trace_id, span_id=span_id, observed_at=time.time()
                )
            )

    def _emit_request(self, job: RequestJob) -> None:
        """Every tool result of a sent body as the ``sent`` stage, then its manifest."""
        body_text = job.body if isinstance(job.body, str) else job.body.decode("utf-8", "replace")
        parsed = parse_request_body(body_text)
        model = job.model or parsed.model
        encoding = encoding_name_for(model or job.run_model, job.default_encoding)
        if job.read_response:
            # Parsed again (the parse above keeps only the tool parts): worker time only.
            self.received.remember(
                job.request_id, job.step, body_text, encoding, model or job.run_model
            )
        for part in parsed.messages.results:
            self._emit_stage(
                StageJob(
                    stage=sc.STAGE_SENT,
                    order=sc.BUILTIN_STAGE_ORDER[sc.STAGE_SENT],
                    text=part.text,
                    tool_call_id=part.tool_call_id,
                    tool_name=part.tool_name,
                    request_id=job.request_id,
                    step=job.step,
                    agent_name=job.agent_name,
                    encoding=encoding,
                    parent=job.parent,
                    context=job.context,
                    start_ns=job.start_ns,
                )
            )
        self._emit_manifest(
            ManifestJob(
                request_id=job.request_id,
                step=job.step,
                tool_call_ids=[p.tool_call_id for p in parsed.messages.results],
                tool_calls=[c.tool_call_id for c in parsed.messages.calls],
                agent_name=job.agent_name,
                model=model,
                body_text=body_text,
                encoding=encoding,
                context_window=context_window_for(model, dict(job.context_windows)),
                parent=job.parent,
                context=job.context,
                start_ns=job.start_ns,
            )
        )

    def _emit_received(self, job: ResponseJob) -> None:
        """The ``received`` span of one request, once its response has been read."""
        attrs = self.received.attributes(job)
        if attrs is None:
            return
        span = self._start_span(f"{sc.SPAN_MEASUREMENT} {sc.STAGE_RECEIVED}", job, attrs)
        span.end()
        self._measured_in_batch += 1
        if self.ledger is not None:
            trace_id, span_id = _span_ids(span)
            self.ledger.observe_received(
                received_from_attributes(
                    attrs, trace_id=trace_id, span_id=span_id, observed_at=time.time()
                )
            )

    def _emit_manifest(self, job: ManifestJob) -> None:
        attrs: dict[str, AttributeValue] = {
            sc.REQUEST_ID: job.request_id,
            sc.REQUEST_TOOL_CALL_IDS: list(job.tool_call_ids),
            sc.SDK_DROPPED_SPANS: self.counter.snapshot().dropped,
        }
        if job.tool_calls is not None:
            attrs[sc.REQUEST_TOOL_CALLS] = list(job.tool_calls)
        if job.step is not None:
            attrs[sc.STEP] = job.step
        if job.model:
            attrs[sc.REQUEST_MODEL] = job.model
        if job.agent_name:
            attrs[sc.AGENT_NAME] = job.agent_name
        if job.context_window:
            attrs[sc.REQUEST_CONTEXT_WINDOW] = job.context_window
        if job.body_text is not None:
            measured = self.analyzer.counter.count(
                job.body_text,
                hashlib.sha256(job.body_text.encode("utf-8", "surrogatepass")).hexdigest(),
                job.encoding,
            )
            attrs[sc.REQUEST_TOKENS] = measured.tokens
            attrs[sc.TOKENIZER] = measured.tokenizer
        span = self._start_span(sc.SPAN_MANIFEST, job, attrs)
        span.end()
        if self.ledger is not None:
            trace_id, span_id = _span_ids(span)
            self.ledger.observe_manifest(
                manifest_from_attributes(
                    attrs, trace_id=trace_id, span_id=span_id, observed_at=time.time()
                )
            )

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Measure and emit every queued job, in the caller's thread where the worker
        has not taken them yet. False when ``timeout_s`` passed first (the worker may be
        inside one long measurement). Under pytest, re-raise the first failure met."""
        deadline = time.monotonic() + timeout_s
        while True:
            if not self._measuring.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
                return False
            try:
                if not self._measure_batch():
                    break
            finally:
                self._measuring.release()
            if time.monotonic() >= deadline:
                return False
        if self._errors and raise_errors():
            error = self._errors[0]
            self._errors.clear()
            raise error
        return True

    def close(self, timeout_s: float = 30.0) -> None:
        self.flush(timeout_s)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=timeout_s)
