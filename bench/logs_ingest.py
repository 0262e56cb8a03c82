"""Logs ingest against traces ingest, same payload size, same run (contract section 8).

    .venv/bin/python bench/logs_ingest.py [--items 10000] [--batch 512] [--pairs 3]
    .venv/bin/python bench/logs_ingest.py --database postgresql

Starts ``ctxledger serve`` on a fresh database and posts, from 2 client threads,
pre-encoded protobuf bodies of ``--batch`` items: the SDK-shaped measurement spans of
``benchkit.workload`` (decoded, stored *and judged*), then ``claude_code.tool_result`` log
records padded to the same bytes per item (decoded and stored). The bodies are built
before the clock starts, so the client's encoding is not timed; the collector answers
only once a batch is committed. Each pair runs spans then logs on the same server; the
pair with the median ratio is printed with every pair's records/s, spans/s, MB/s and
logs ÷ spans (the issue's goal: at least 0.8).

A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from benchkit import floor, workload
from benchkit.collector_process import collector
from benchkit.databases import fresh_database, pg_admin_url_from_env
from benchkit.exporting import batches_of

PROTOBUF = "application/x-protobuf"


def span_bodies(items: int, batch: int) -> list[bytes]:
    spans = workload.build(items, 200).spans
    return floor.request_bodies(batches_of(spans, batch))


def _attribute(key: str, value: str | int) -> KeyValue:
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def log_bodies(items: int, batch: int, bytes_per_item: int) -> list[bytes]:
    """Bodies of ``claude_code.tool_result`` records, each padded (in its body) to about
    ``bytes_per_item`` encoded bytes."""
    session = f"session-{uuid.uuid4().hex[:12]}"
    now = time.time_ns()
    bodies: list[bytes] = []
    for first in range(0, items, batch):
        request = ExportLogsServiceRequest()
        resource = request.resource_logs.add()
        resource.resource.attributes.append(_attribute("service.name", "claude-code"))
        scope = resource.scope_logs.add()
        scope.scope.name = "com.anthropic.claude_code.events"
        for index in range(first, min(first + batch, items)):
            record = LogRecord(
                time_unix_nano=now + index,
                event_name="claude_code.tool_result",
                attributes=[
                    _attribute("session.id", session),
                    _attribute("tool_use_id", f"toolu_{index:08d}_{uuid.uuid4().hex[:8]}"),
                    _attribute("tool_name", "Bash"),
                    _attribute("tool_result_size_bytes", 4_096),
                ],
            )
            pad = max(0, bytes_per_item - record.ByteSize() - 4)
            record.body.string_value = "输出" * (pad // 6) + "x" * (pad % 6)
            scope.log_records.append(record)
        bodies.append(request.SerializeToString())
    return bodies


def post_all(endpoint: str, bodies: Sequence[bytes], threads: int = 2) -> float:
    """Seconds to have every body acknowledged (200) from ``threads`` clients."""
    pending = iter(range(len(bodies)))
    lock = threading.Lock()
    failures: list[int] = []

    def worker() -> None:
        with httpx.Client(timeout=120) as http:
            while True:
                with lock:
                    index = next(pending, None)
                if index is None:
                    return
                answer = http.post(
                    endpoint, content=bodies[index], headers={"content-type": PROTOBUF}
                )
                if answer.status_code != 200:
                    failures.append(answer.status_code)

    started = time.perf_counter()
    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if failures:
        print(f"  {len(failures)} exports NOT ACKNOWLEDGED: {sorted(set(failures))}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args()

    spans = span_bodies(args.items, args.batch)
    span_count = args.items
    span_bytes = sum(map(len, spans))
    per_item = span_bytes // span_count
    logs = log_bodies(span_count, args.batch, per_item)
    log_bytes = sum(map(len, logs))
    print(
        f"{span_count:,} spans in {len(spans)} bodies, {span_bytes / 1e6:.1f} MB "
        f"({per_item} B each); {span_count:,} log records, {log_bytes / 1e6:.1f} MB "
        f"({log_bytes // span_count} B each); database {args.database}"
    )
    ratios: list[tuple[float, str]] = []
    with tempfile.TemporaryDirectory() as workdir:
        for pair in range(args.pairs):
            with (
                fresh_database(
                    args.database, Path(workdir), f"p{pair}", pg_admin_url_from_env()
                ) as url,
                collector(url, Path(workdir) / f"serve{pair}.log") as running,
            ):
                span_s = post_all(f"{running.base_url}/v1/traces", spans)
                log_s = post_all(f"{running.base_url}/v1/logs", logs)
            spans_rate, logs_rate = span_count / span_s, span_count / log_s
            span_mb, log_mb = span_bytes / span_s / 1e6, log_bytes / log_s / 1e6
            line = (
                f"pair {pair + 1}: spans {spans_rate:,.0f}/s ({span_mb:.1f} MB/s), "
                f"log records {logs_rate:,.0f}/s ({log_mb:.1f} MB/s), "
                f"logs/spans {logs_rate / spans_rate:.2f}"
            )
            print(line)
            ratios.append((logs_rate / spans_rate, line))
    median = statistics.median_low([r for r, _ in ratios])
    print("median " + next(line for r, line in ratios if r == median))
    return 0


if __name__ == "__main__":
    sys.exit(main())
