"""What the reliability tests share: batches of real stock-SDK spans with known ids, a
load that sends them with the stock OTLP/HTTP exporter (its own retries) and records
which exports were acknowledged, the span ids a database holds, and collectors run as
`ctxledger serve` processes.

The invariant every test checks: span ids sent = span ids stored ∪ span ids explicitly
rejected; nothing acknowledged is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import create_engine

from ctxledger import semconv as sc
from ctxledger.verdicts.duplicates import span_id_of
from ctxledger_collector.ops.settings import Settings
from tests.collector import otlp_payloads as op
from tests.collector.live_collector import free_port
from tests.e2e.helpers import subprocess_env


@dataclass(frozen=True)
class Batch:
    spans: Sequence[ReadableSpan]
    ids: frozenset[str]
    """The ids of its ctxledger spans (the stages and manifests; not the root span)."""


def make_batch(journeys: int) -> Batch:
    """One trace of ``journeys`` reference journeys (each judged ``silent``), each with
    its own call and request id: 5 ctxledger spans per journey."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: op.SERVICE_NAME}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("reliability")
    with tracer.start_as_current_span("agent.run"):
        for _ in range(journeys):
            tag = uuid.uuid4().hex[:12]
            for attrs in op.journey_attributes(f"call_{tag}", f"req_{tag}"):
                name = sc.SPAN_MEASUREMENT if sc.STAGE in attrs else sc.SPAN_MANIFEST
                with tracer.start_as_current_span(name, attributes=attrs):
                    pass
    provider.shutdown()
    spans = memory.get_finished_spans()
    ids = frozenset(
        format(s.context.span_id, "016x")
        for s in spans
        if s.context is not None
        and s.attributes
        and (sc.STAGE in s.attributes or sc.REQUEST_ID in s.attributes)
    )
    return Batch(spans, ids)


@dataclass
class Load:
    """Sends batches from ``senders`` threads, each with its own stock exporter, until
    stopped; records the ids of every batch by the exporter's result."""

    endpoint: str
    journeys: int = 20
    senders: int = 2
    timeout_s: float = 30.0
    pause_s: float = 0.0
    """Between one sender's exports."""
    acked: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    exports: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    @property
    def sent(self) -> set[str]:
        return self.acked | self.failed

    def start(self) -> Load:
        for _ in range(self.senders):
            thread = threading.Thread(target=self._send, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _send(self) -> None:
        exporter = OTLPSpanExporter(endpoint=self.endpoint + "/v1/traces", timeout=self.timeout_s)
        while not self._stop.is_set():
            batch = make_batch(self.journeys)
            result = exporter.export(batch.spans)
            with self._lock:
                self.exports += 1
                (self.acked if result == SpanExportResult.SUCCESS else self.failed).update(
                    batch.ids
                )
            self._stop.wait(self.pause_s)
        exporter.shutdown()  # type: ignore[no-untyped-call]

    def wait_for_exports(self, count: int, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.exports < count:
            assert time.monotonic() < deadline, f"only {self.exports} exports in {timeout_s} s"
            time.sleep(0.05)

    def stop(self, timeout_s: float = 120.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout_s)
            assert not thread.is_alive(), "an exporter never returned"


def stored_span_ids(database_url: str) -> set[str]:
    """Every measurement and manifest span id the database holds."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            numbers = [
                row[0]
                for table in ("measurements", "manifests")
                for row in connection.exec_driver_sql(f"SELECT span_number FROM {table}")
            ]
    finally:
        engine.dispose()
    assert len(numbers) == len(set(numbers)), "a span stored twice"
    return {span_id_of(number) for number in numbers}


def wait_until(predicate: object, timeout_s: float = 120.0, what: str = "") -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def metric(url: str, name: str, **labels: str) -> float:
    """One sample of the collector's /metrics (0 when absent)."""
    text = httpx.get(url + "/metrics", timeout=10).text
    wanted = name + (
        "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else ""
    )
    for line in text.splitlines():
        if line.startswith(wanted + " "):
            return float(line.split()[-1])
    return 0.0


class ServeProcess:
    """``ctxledger serve`` in a child process on a free port, with ``CTXLEDGER_*`` env."""

    def __init__(self, env: dict[str, str], log: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._env = subprocess_env(**env)
        self._log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *extra: str) -> ServeProcess:
        with self._log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "ctxledger_cli", "serve", "--port", str(self.port), *extra],
                env=self._env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self._log.read_text()[-3000:]
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the collector did not start"
            time.sleep(0.05)

    def signal(self, signal_number: int) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal_number)

    def wait(self, timeout_s: float) -> int:
        assert self.process is not None
        return self.process.wait(timeout_s)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def spooling_settings(database_url: str, spool_dir: Path) -> Settings:
    """A collector that spools what the database cannot take, its readiness read fresh."""
    return Settings(
        database_url=database_url,
        sweep_interval_s=3600,
        ingest_spool_dir=str(spool_dir),
        ready_cache_s=0,
        ready_min_free_bytes=0,
    )
