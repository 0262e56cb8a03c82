"""Overload and burst: what the collector acknowledges, stores and holds in memory.

Run from the repository root::

    .venv/bin/python bench/admission.py                  # SQLite, ~2 min
    .venv/bin/python bench/admission.py --only postgresql
    .venv/bin/python bench/admission.py --unlimited      # admission off: the old behaviour

Two scenarios against ``ctxledger serve`` as a subprocess, each on a fresh database:

* **overload**: 10 client threads, each exporting 3 batches of 8,192 spans with its own
  stock ``OTLPSpanExporter`` (10 s timeout; the exporter retries 429/503 itself,
  honouring Retry-After, until its deadline). Far more work than the collector can
  store within the clients' patience: the question is what it does with the excess.
* **burst**: one client exports 100,000 spans in batches of 512, back to back.

Afterwards (once no request is in flight) the natural keys of the stored spans are
compared with those sent and those acknowledged: nothing acknowledged may be missing.
Peak RSS is the collector's process tree (sampled VmRSS and VmHWM), latency is per HTTP
attempt as the client saw it. This is a benchmark: it prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan

from benchkit import collector_metrics, verify, workload
from benchkit.collector_process import collector
from benchkit.databases import DATABASES, fresh_database, pg_admin_url_from_env
from benchkit.exporting import FeedResult, batches_of, feed, quiet_exporter_logs
from benchkit.process_memory import RssSampler
from benchkit.tables import mib, percentile, print_table

UNLIMITED = {
    "CTXLEDGER_INGEST_MAX_REQUESTS": "100000",
    "CTXLEDGER_INGEST_MAX_INFLIGHT_BYTES": str(2**60),
}


@dataclass(frozen=True)
class Scenario:
    name: str
    clients: int
    batches_per_client: int
    batch: int
    timeout_s: float


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario
    database: str
    sent: int
    acknowledged: int
    stored: int
    lost: int
    stored_unacknowledged: int
    client_seconds: float
    drain_seconds: float
    peak_rss_kib: int
    feed: FeedResult
    refused: dict[str, float]


def run_scenario(
    scenario: Scenario,
    database: str,
    spans: Sequence[ReadableSpan],
    workdir: Path,
    pg_admin_url: str,
    settings: dict[str, str],
) -> Outcome:
    batches = batches_of(spans, scenario.batch)
    per_client = scenario.batches_per_client
    assignment = [
        list(range(i * per_client, (i + 1) * per_client)) for i in range(scenario.clients)
    ]
    keys = {span.context.span_id: workload.natural_key(span) for span in spans}
    name = f"{scenario.name}-{database}"
    with (
        fresh_database(database, workdir, name, pg_admin_url) as url,
        collector(url, workdir / f"serve-{name}.log", settings) as running,
    ):
        sampler = RssSampler(running.pid).start()
        result = feed(
            running.traces_endpoint, batches, scenario.clients, scenario.timeout_s, assignment
        )
        drain = collector_metrics.wait_until_idle(running.base_url)
        peak = sampler.stop()
        refused = collector_metrics.by_label(
            running.base_url, "ctxledger_ingest_refused_total", "reason"
        )
        stored = verify.read_stored(url, running.base_url)
    sent = set(keys.values())
    acknowledged = {keys[s.context.span_id] for i in result.acknowledged for s in batches[i]}
    return Outcome(
        scenario,
        database,
        len(sent),
        len(acknowledged),
        len(stored.keys & sent),
        len(acknowledged - stored.keys),
        len((stored.keys & sent) - acknowledged),
        result.seconds,
        drain,
        peak,
        result,
        refused,
    )


def print_outcomes(outcomes: Sequence[Outcome]) -> None:
    rows = []
    for o in outcomes:
        latencies = [a.seconds for a in o.feed.attempts]
        ok = [a.seconds for a in o.feed.attempts if a.status == 200]
        s = o.scenario
        rows.append(
            (
                f"{s.name} ({s.clients} x {s.batches_per_client} x {s.batch:,})",
                o.database,
                f"{o.sent:,}",
                f"{o.acknowledged:,}",
                f"{o.stored:,}",
                f"{o.lost:,}" if o.lost == 0 else f"{o.lost:,} LOST",
                f"{o.stored_unacknowledged:,}",
                mib(o.peak_rss_kib),
                f"{percentile(latencies, 0.5):.2f} / {percentile(latencies, 0.99):.2f}",
                f"{percentile(ok, 0.5):.2f} / {percentile(ok, 0.99):.2f}" if ok else "-",
                ", ".join(f"{k} x{v}" for k, v in o.feed.statuses().items()),
                f"{o.client_seconds:.1f} + {o.drain_seconds:.1f}",
                f"{o.acknowledged / o.client_seconds:,.0f}",
            )
        )
    print_table(
        (
            "scenario (clients x batches x spans)",
            "database",
            "spans sent",
            "acknowledged",
            "stored",
            "acknowledged, not stored",
            "stored, not acknowledged",
            "collector peak RSS",
            "latency p50 / p99 s (all attempts)",
            "latency p50 / p99 s (200s)",
            "HTTP answers",
            "client s + drain s",
            "acknowledged spans/s",
        ),
        rows,
    )


def _stop(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _stop)
    quiet_exporter_logs()
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", choices=DATABASES, default=None, help="default: sqlite")
    parser.add_argument("--both", action="store_true", help="SQLite and PostgreSQL")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--batches-per-client", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8_192)
    parser.add_argument("--burst-spans", type=int, default=100_000, help="0 skips the burst")
    parser.add_argument(
        "--unlimited", action="store_true", help="admission off (limits far above the load)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a CTXLEDGER_* setting for the collector, e.g. CTXLEDGER_INGEST_MAX_REQUESTS=1",
    )
    parser.add_argument("--pg-admin-url", default=pg_admin_url_from_env())
    args = parser.parse_args(argv)
    databases = DATABASES if args.both else (args.only or "sqlite",)
    settings = dict(UNLIMITED) if args.unlimited else {}
    settings.update(item.split("=", 1) for item in args.set)
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs "
        f"(shared: clients, collector and database on one machine); stock OTLPSpanExporter; "
        f"collector settings: {settings or 'defaults'}\n"
    )
    overload = Scenario("overload", args.clients, args.batches_per_client, args.batch, 10.0)
    burst = Scenario("burst", 1, -(-args.burst_spans // 512), 512, 10.0)
    scenarios = [overload] + ([burst] if args.burst_spans else [])
    started = time.perf_counter()
    # Exactly the spans the clients send: whole batches, cut from runs of ~200 spans.
    loads = {
        s.name: workload.build(s.clients * s.batches_per_client * s.batch + 200, 200).spans[
            : s.clients * s.batches_per_client * s.batch
        ]
        for s in scenarios
    }
    print(f"workloads built in {time.perf_counter() - started:.1f} s (not timed)\n")
    workdir = Path(tempfile.mkdtemp(prefix="ctxledger-admission-bench-"))
    outcomes: list[Outcome] = []
    try:
        for scenario in scenarios:
            for database in databases:
                outcome = run_scenario(
                    scenario, database, loads[scenario.name], workdir, args.pg_admin_url, settings
                )
                outcomes.append(outcome)
                print(
                    f"  {scenario.name:<8} {database:<10} acknowledged {outcome.acknowledged:,}, "
                    f"stored {outcome.stored:,}, lost {outcome.lost:,}, "
                    f"peak RSS {mib(outcome.peak_rss_kib)}",
                    flush=True,
                )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print()
    print_outcomes(outcomes)
    for o in outcomes:
        if o.refused:
            refusals = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(o.refused.items()))
            print(f"refused by admission ({o.scenario.name}, {o.database}): {refusals}")
    if any(o.lost for o in outcomes):
        print("!!! SPANS WERE ACKNOWLEDGED AND NOT STORED: see 'acknowledged, not stored'")
        return 1
    print("nothing acknowledged was lost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
