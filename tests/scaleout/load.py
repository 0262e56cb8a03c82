"""A sustained load: agent runs measured by the SDK, exported by the stock
``OTLPSpanExporter`` behind a ``BatchSpanProcessor``, every span and every answer kept.

Each span the SDK ends is recorded (an in-memory exporter on the same provider), each
batch the OTLP exporter gave up on is recorded with its spans, and each HTTP answer's
``partial_success`` is read: what the test compares with what the database holds.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ctxledger


@dataclass
class Answers:
    """What the collectors answered through the load balancer."""

    statuses: dict[int | None, int] = field(default_factory=dict)
    rejected_spans: int = 0
    rejection_messages: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, status: int | None, body: bytes) -> None:
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if status == 200 and body:
                answer = ExportTraceServiceResponse()
                answer.ParseFromString(body)
                if answer.partial_success.rejected_spans:
                    self.rejected_spans += answer.partial_success.rejected_spans
                    self.rejection_messages.append(answer.partial_success.error_message)


class AnsweredSession(requests.Session):
    def __init__(self, answers: Answers) -> None:
        super().__init__()
        self.answers = answers

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        try:
            response = super().request(*args, **kwargs)
        except requests.RequestException:
            self.answers.note(None, b"")
            raise
        self.answers.note(response.status_code, response.content)
        return response


class KeepingFailures(SpanExporter):
    """The stock exporter, with the batches it gave up on kept."""

    def __init__(self, inner: OTLPSpanExporter) -> None:
        self.inner = inner
        self.failed: list[ReadableSpan] = []
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.failed.extend(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()


class AgentLoad:
    """Runs ``runs`` (callables, each one agent run) in a loop on a thread until
    stopped, then flushes everything to ``endpoint``."""

    def __init__(
        self,
        endpoint: str,
        runs: Sequence[Callable[[], None]],
        service_name: str = "svc-scaleout",
        context_windows: dict[str, int] | None = None,
        backlog: int = 400,
        pause_s: float = 0.0,
    ) -> None:
        self.answers = Answers()
        self.recorded = InMemorySpanExporter()
        self.exporter = KeepingFailures(
            OTLPSpanExporter(
                endpoint=f"{endpoint}/v1/traces", timeout=60, session=AnsweredSession(self.answers)
            )
        )
        self.provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.recorded))
        self.provider.add_span_processor(
            BatchSpanProcessor(
                self.exporter,
                max_export_batch_size=64,
                schedule_delay_millis=50,
                max_queue_size=100_000,
            )
        )
        self.runs = runs
        #: The agents wait while more spans than this are ended but not yet exported:
        #: the load runs at what the collectors take, without the SDK dropping any.
        self.backlog = backlog
        #: An agent's think time between runs (0: as fast as the collectors take them).
        self.pause_s = pause_s
        self.context_windows = context_windows or {}
        self.service_name = service_name
        self.runs_done = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._saved: dict[str, str] = {}
        self.error: BaseException | None = None

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self.runs[self.runs_done % len(self.runs)]()
                self.runs_done += 1
                self._stop.wait(self.pause_s)
                while self.waiting > self.backlog and not self._stop.is_set():
                    time.sleep(0.01)
        except BaseException as error:  # surfaced by stop()
            self.error = error

    def start(self) -> None:
        self._saved = {
            k: os.environ.pop(k) for k in list(os.environ) if k.startswith(("CTXLEDGER_", "OTEL_"))
        }
        self.client = ctxledger.configure(
            service_name=self.service_name,
            tracer_provider=self.provider,
            ledger="off",
            context_windows=self.context_windows,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop after the current run, export everything, shut the pipeline down."""
        self._stop.set()
        self._thread.join(timeout=60)
        try:
            assert ctxledger.flush(timeout_s=60)
            assert self.client.stats().dropped == 0, self.client.stats()
            assert self.provider.force_flush(timeout_millis=120_000)
        finally:
            self.client.shutdown()
            self.provider.shutdown()
            ctxledger.configure(service_name="idle", export=False, ledger="off")
            os.environ.update(self._saved)
        if self.error is not None:
            raise self.error

    @property
    def waiting(self) -> int:
        done = self.exporter.exported + len(self.exporter.failed)
        return len(self.recorded.get_finished_spans()) - done

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.recorded.get_finished_spans())
