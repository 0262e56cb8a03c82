"""Ingest throughput with 1, 2 and 3 ``ctxledger serve`` replicas behind HAProxy on one
PostgreSQL database, in the same run, and what limits it.

Run from the repository root::

    .venv/bin/python bench/replicas.py                 # 12,000 spans per setup, ~2 min
    .venv/bin/python bench/replicas.py --spans 30000 --replicas 1,2,3,4

For each replica count: a fresh database (``ctxledger db upgrade``), the replicas and
HAProxy exactly as ``tests/scaleout`` runs them (the compose file's commands,
``deploy/haproxy.cfg``), then the same deterministic SDK-shaped spans
(``benchkit.workload``) exported with the stock ``OTLPSpanExporter`` in batches of
``--batch`` from ``--threads`` client threads through HAProxy. The collector answers
only once a batch is stored and judged, so spans/s = spans / wall time. Afterwards the
stored rows are counted against what was sent.

What limits it is measured during each run from ``/proc`` (CPU seconds of each
replica, of HAProxy, of this client process, and of every PostgreSQL process on the
machine; so other work on the machine shows in the last one) and from
``pg_stat_activity`` sampled every 50 ms (the share of the database's busy backends
that wait on a lock, advisory locks included). CPU per second of wall time near the
machine's core count means the machine is the limit.

This is a benchmark: it prints numbers and asserts nothing about them.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the topology the tests run (tests/scaleout)

from tests.scaleout.topology import migrate, replicas_behind_haproxy  # noqa: E402

from benchkit import workload  # noqa: E402
from benchkit.databases import fresh_postgres_raw, pg_admin_url_from_env  # noqa: E402
from benchkit.exporting import batches_of, feed, quiet_exporter_logs  # noqa: E402
from benchkit.tables import print_table  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process, from /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def postgres_pids() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "postgres":
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def cpu_by_pid(pids: Iterable[int]) -> dict[int, float]:
    return {pid: cpu_seconds(pid) for pid in pids}


def cpu_since(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU used between two snapshots: processes that exited in between are left out
    (their last seconds are lost), new ones count from zero."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


class LockSampler:
    """Samples the benchmark database's backends: how many are active, how many wait
    on a lock (``wait_event_type = 'Lock'``: row, transaction and advisory locks)."""

    def __init__(self, libpq_url: str) -> None:
        self.url = libpq_url
        self.active = 0
        self.waiting = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as connection:
            while not self._stop.wait(0.05):
                row = connection.execute(
                    "SELECT count(*) FILTER (WHERE state = 'active'), "
                    "count(*) FILTER (WHERE wait_event_type = 'Lock') FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchone()
                assert row is not None
                self.active += row[0]
                self.waiting += row[1]

    def __enter__(self) -> LockSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def waiting_share(self) -> float:
        return self.waiting / self.active if self.active else 0.0


@dataclass
class Result:
    replicas: int
    spans: int
    seconds: float
    failed_batches: int
    statuses: dict[str, int]
    stored: int
    replica_cpu: list[float]
    haproxy_cpu: float
    client_cpu: float
    postgres_cpu: float
    lock_share: float
    machine_share: float

    @property
    def rate(self) -> float:
        return self.spans / self.seconds


def stored_rows(libpq_url: str) -> int:
    with psycopg.connect(libpq_url) as connection:
        row = connection.execute(
            "SELECT (SELECT count(*) FROM measurements) + (SELECT count(*) FROM manifests)"
        ).fetchone()
        assert row is not None
        return int(row[0])


def run_one(count: int, spans: workload.Workload, args: argparse.Namespace) -> Result:
    admin = pg_admin_url_from_env()
    with (
        tempfile.TemporaryDirectory(prefix="ctxledger-replicas-") as tmp,
        fresh_postgres_raw(admin) as libpq_url,
    ):
        url = libpq_url.replace("postgresql://", "postgresql+psycopg://", 1)
        migrate(url)
        settings = {"CTXLEDGER_SWEEP_INTERVAL_S": "3600"}
        with replicas_behind_haproxy(url, count, Path(tmp), **settings) as (proxy, replicas):
            pids = [r.pid for r in replicas]
            batches = batches_of(spans.spans, args.batch)
            pg_before = cpu_by_pid(postgres_pids())
            before = [cpu_seconds(p) for p in pids], cpu_seconds(proxy.pid)
            client_before = time.process_time()
            busy_before = machine_busy()
            threads = args.threads or 2 * count  # what the replicas admit at once
            with LockSampler(libpq_url) as locks:
                fed = feed(f"{proxy.url}/v1/traces", batches, threads, timeout_s=60)
            busy_after = machine_busy()
            client = time.process_time() - client_before
            replica_cpu = [cpu_seconds(p) - b for p, b in zip(pids, before[0], strict=True)]
            haproxy_cpu = cpu_seconds(proxy.pid) - before[1]
            postgres_cpu = cpu_since(pg_before, cpu_by_pid(postgres_pids()))
        return Result(
            replicas=count,
            spans=len(spans.spans),
            seconds=fed.seconds,
            failed_batches=len(fed.failed),
            statuses=fed.statuses(),
            stored=stored_rows(libpq_url),
            replica_cpu=replica_cpu,
            haproxy_cpu=haproxy_cpu,
            client_cpu=client,
            postgres_cpu=postgres_cpu,
            lock_share=locks.waiting_share,
            machine_share=(busy_after[0] - busy_before[0]) / (busy_after[1] - busy_before[1]),
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=12_000)
    parser.add_argument("--trace-spans", type=int, default=200)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument(
        "--threads", type=int, default=0, help="client threads (default: 2 per replica)"
    )
    parser.add_argument("--replicas", default="1,2,3")
    args = parser.parse_args()
    quiet_exporter_logs()
    spans = workload.build(args.spans, args.trace_spans)
    print(
        f"{platform.platform()} · {os.cpu_count()} CPUs · Python {platform.python_version()} · "
        f"{len(spans.spans)} spans in {spans.traces} traces · batches of {args.batch} from "
        f"{args.threads or '2 per replica'} threads · load average before: {os.getloadavg()[0]:.1f}"
    )
    results = [run_one(int(n), spans, args) for n in args.replicas.split(",")]
    rows = []
    for r in results:
        wall = r.seconds
        total = sum(r.replica_cpu) + r.haproxy_cpu + r.client_cpu + r.postgres_cpu
        rows.append(
            [
                str(r.replicas),
                f"{r.rate:,.0f}",
                f"{wall:.1f}",
                " ".join(f"{c / wall:.2f}" for c in r.replica_cpu),
                f"{r.postgres_cpu / wall:.2f}",
                f"{r.haproxy_cpu / wall:.2f}",
                f"{r.client_cpu / wall:.2f}",
                f"{total / wall:.2f}",
                f"{100 * r.lock_share:.0f} %",
                f"{100 * r.machine_share:.0f} %",
                f"{r.stored}/{r.spans}" + ("" if r.stored == r.spans else " LOST"),
                ", ".join(f"{k}: {v}" for k, v in r.statuses.items()),
            ]
        )
    print_table(
        [
            "replicas",
            "spans/s",
            "wall s",
            "CPU/s per replica",
            "CPU/s PostgreSQL",
            "CPU/s HAProxy",
            "CPU/s client",
            "CPU/s total",
            "backends waiting on locks",
            "machine CPU busy",
            "stored/sent",
            "HTTP answers",
        ],
        rows,
    )
    cores = os.cpu_count() or 1
    last = results[-1]
    busy = (sum(last.replica_cpu) + last.postgres_cpu + last.client_cpu) / last.seconds
    print(
        f"\nWith {last.replicas} replicas the measured processes used {busy:.2f} of "
        f"{cores} cores and the machine as a whole was {100 * last.machine_share:.0f} % busy: "
        + (
            "the machine's CPU is the limit (other work on it included)."
            if last.machine_share > 0.85
            else "CPU is not saturated; look at the lock share and PostgreSQL."
        )
    )
    return 0 if all(r.stored == r.spans and not r.failed_batches for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
