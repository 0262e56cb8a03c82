"""Soak: the id-set invariant at a sustained rate, for as long as asked.

Run from the repository root::

    .venv/bin/python bench/soak.py --seconds 60                 # SQLite, 1,000 spans/s
    .venv/bin/python bench/soak.py --seconds 3600 --rate 3000 --database postgresql

``ctxledger serve`` runs as a subprocess on a fresh database. Client threads, each with
its own stock ``OTLPSpanExporter`` (protobuf over HTTP, 10 s timeout, its own retries),
export batches of agent-run spans built by the stock OpenTelemetry SDK: journeys of four
stage measurements and a request manifest, and a small share of measurements that break
the contract (rejected on purpose, so the rejections path is soaked too). The clients
pace themselves to ``--rate`` spans per second. Every ten seconds the bench prints the
spans sent, the rate achieved and the collector's resident memory (its process tree).

At the end, once every export has returned, the span ids sent are compared with the
span ids stored (the measurements and manifests tables) and the span ids listed as
rejected (``GET /api/v1/rejections``, every page): ``lost`` is what was sent and is in
neither set, and must be 0. This is a benchmark: it prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import sqlalchemy as sa
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.types import AttributeValue

from benchkit.collector_process import collector
from benchkit.databases import DATABASES, fresh_database, pg_admin_url_from_env
from benchkit.exporting import quiet_exporter_logs
from benchkit.process_memory import tree_rss_kib
from ctxledger import semconv as sc
from ctxledger.verdicts.duplicates import span_number

JOURNEYS_PER_BATCH = 100  # 4 stages + 1 manifest each: 500 spans per export
BROKEN_EVERY = 97  # one measurement in 97 breaks the contract (chars as text)


class Spans:
    """Agent-run spans from the stock SDK, a batch at a time (thread-safe)."""

    def __init__(self, seed: int) -> None:
        self._memory = InMemorySpanExporter()
        self._provider = TracerProvider(resource=Resource.create({"service.name": "soak-agent"}))
        self._provider.add_span_processor(SimpleSpanProcessor(self._memory))
        self._tracer = self._provider.get_tracer("ctxledger-soak")
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._counter = itertools.count()

    def _stage(self, call: str, request: str, stage: str, chars: int, broken: bool) -> None:
        attrs: dict[str, str | int] = {
            sc.STAGE: stage,
            sc.TOOL_CALL_ID: call,
            sc.TOOL_NAME: "search",
            sc.STEP: 1,
            sc.SIZE_CHARS: "many" if broken else chars,
            sc.SIZE_TOKENS: chars // 4,
        }
        if stage in (sc.STAGE_ASSEMBLED, sc.STAGE_SENT):
            attrs[sc.REQUEST_ID] = request
        self._tracer.start_span(sc.SPAN_MEASUREMENT, attributes=attrs).end()

    def batch(self) -> list[ReadableSpan]:
        with self._lock:
            self._memory.clear()
            root = self._tracer.start_span("agent.run")
            with trace.use_span(root, end_on_exit=True):
                for _ in range(JOURNEYS_PER_BATCH):
                    number = next(self._counter)
                    call, request = f"call_{number}", f"req_{number}"
                    chars = self._rng.randint(200, 20_000)
                    kept = chars if self._rng.random() < 0.9 else chars // 3  # some lose
                    stages = (sc.STAGE_ORIGINAL, sc.STAGE_SERIALIZED, sc.STAGE_ASSEMBLED)
                    for index, stage in enumerate((*stages, sc.STAGE_SENT)):
                        size = chars if index < 2 else kept
                        broken = (number * 4 + index) % BROKEN_EVERY == 0
                        self._stage(call, request, stage, size, broken)
                    manifest: dict[str, AttributeValue] = {
                        sc.REQUEST_ID: request,
                        sc.STEP: 1,
                        sc.REQUEST_TOOL_CALL_IDS: [call],
                    }
                    self._tracer.start_span(sc.SPAN_MANIFEST, attributes=manifest).end()
            spans = list(self._memory.get_finished_spans())
        return [s for s in spans if s.name != "agent.run"]  # ours only: ignored ones aside


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: set[str] = set()
        self.exports = 0
        self.failed_exports = 0


def _client(endpoint: str, spans: Spans, tally: Tally, deadline: float, rate_each: float) -> None:
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=10)
    started = time.monotonic()
    sent = 0
    while time.monotonic() < deadline:
        batch = spans.batch()
        ids = {format(s.context.span_id, "016x") for s in batch}
        outcome = exporter.export(batch)
        sent += len(batch)
        with tally.lock:
            tally.sent |= ids
            tally.exports += 1
            tally.failed_exports += outcome is not SpanExportResult.SUCCESS
        ahead = sent / rate_each - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
    exporter.shutdown()  # type: ignore[no-untyped-call]


def _stored_numbers(database_url: str) -> set[int]:
    engine = sa.create_engine(database_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            rows = connection.exec_driver_sql(
                "SELECT span_number FROM measurements UNION ALL SELECT span_number FROM manifests"
            )
            return {int(row[0]) for row in rows}
    finally:
        engine.dispose()


def _rejected_ids(base_url: str) -> Iterator[str]:
    with httpx.Client(base_url=base_url, timeout=30) as http:
        before: int | None = None
        while True:
            params = {"limit": 1000, **({"before": before} if before else {})}
            page = http.get("/api/v1/rejections", params=params).json()
            for row in page["rejections"]:
                yield row["span_id"]
            before = page["next_before"]
            if before is None:
                return


def soak(database_url: str, workdir: Path, seconds: float, rate: float, clients: int) -> None:
    settings = {"CTXLEDGER_REJECTIONS_KEPT": str(10**9), "CTXLEDGER_AUTO_MIGRATE": "true"}
    log = workdir / "collector.log"
    with collector(database_url, log, settings) as running:
        spans = Spans(seed=7)
        tally = Tally()
        deadline = time.monotonic() + seconds
        threads = [
            threading.Thread(
                target=_client,
                args=(running.traces_endpoint, spans, tally, deadline, rate / clients),
                daemon=True,
            )
            for _ in range(clients)
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        print(f"{'elapsed s':>10} {'spans sent':>12} {'spans/s':>9} {'RSS MiB':>9}")
        last_sent, last_time = 0, started
        while any(thread.is_alive() for thread in threads):
            time.sleep(min(10.0, max(0.1, deadline - time.monotonic() + 0.1)))
            now = time.monotonic()
            if now - last_time < 5 and any(thread.is_alive() for thread in threads):
                continue  # the clients are finishing their last exports
            with tally.lock:
                sent = len(tally.sent)
            rss = tree_rss_kib(running.pid) / 1024
            interval = (sent - last_sent) / max(now - last_time, 1e-9)
            print(f"{now - started:>10.0f} {sent:>12,} {interval:>9,.0f} {rss:>9.1f}", flush=True)
            last_sent, last_time = sent, now
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        stored_numbers = _stored_numbers(database_url)
        rejected = set(_rejected_ids(running.base_url))
        stored = {i for i in tally.sent if span_number(i) in stored_numbers}
        lost = tally.sent - stored - rejected
        both = stored & rejected
        print()
        print(
            f"sent      {len(tally.sent):>10,} spans in {tally.exports:,} exports "
            f"({tally.failed_exports:,} failed), {len(tally.sent) / elapsed:,.0f} spans/s"
        )
        print(f"stored    {len(stored):>10,}")
        print(f"rejected  {len(rejected & tally.sent):>10,}  (listed by /api/v1/rejections)")
        print(f"lost      {len(lost):>10,}  (sent, neither stored nor rejected)")
        print(f"both      {len(both):>10,}  (stored and rejected: must be 0 too)")
        print(f"RSS       {tree_rss_kib(running.pid) / 1024:>10.1f} MiB at the end")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to send")
    parser.add_argument("--rate", type=float, default=1_000.0, help="spans per second, in all")
    parser.add_argument("--clients", type=int, default=2, help="exporter threads")
    parser.add_argument("--database", choices=DATABASES, default="sqlite")
    args = parser.parse_args(argv)
    quiet_exporter_logs()
    with tempfile.TemporaryDirectory(prefix="ctxledger-soak-") as tmp:
        workdir = Path(tmp)
        with fresh_database(args.database, workdir, "soak", pg_admin_url_from_env()) as url:
            print(
                f"soak: {args.database}, {args.seconds:g} s at {args.rate:,.0f} spans/s, "
                f"{args.clients} clients, python {sys.version.split()[0]}"
            )
            soak(url, workdir, args.seconds, args.rate, args.clients)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
