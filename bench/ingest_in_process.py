"""The collector's own cost per span, without HTTP and without a client on its cores:
the same request bodies as ``bench/ingest.py``, decoded (``decode_export_request``) and
stored and judged (``Store.ingest``) in this process on a fresh SQLite file (or a fresh
PostgreSQL database, ``--database postgresql``), in pairs with the same database's floor
(``benchkit.floor``) measured right before each. The garbage collector
is set as the served app sets it (start-up frozen, ``SERVING_GC_THRESHOLDS``).

    .venv/bin/python bench/ingest_in_process.py [--spans 20000] [--trace-spans 200] [--pairs 3]
    .venv/bin/python bench/ingest_in_process.py --database postgresql

Prints, per pair, decode and store microseconds per span, spans/s, the floor's spans/s
and the ratio, and on PostgreSQL the CPU its server processes spent per span while the
collector stored (what the store's wall time waits for); then the median pair.
A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
from pathlib import Path

from benchkit import cpu_time, floor, workload
from benchkit.databases import fresh_database, pg_admin_url_from_env
from benchkit.exporting import batches_of
from benchkit.in_process import collector_seconds
from ctxledger_collector.app import SERVING_GC_THRESHOLDS
from ctxledger_collector.storage.migrate import upgrade


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--trace-spans", type=int, default=200)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args()
    load = workload.build(args.spans, args.trace_spans)
    bodies = floor.request_bodies(batches_of(load.spans, args.batch))
    # As the served app runs: what exists now out of the cyclic collector's sight, its
    # thresholds raised.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_GC_THRESHOLDS)
    spans = len(load.spans)
    print(
        f"{spans:,} spans, {load.traces} runs of {load.spans_per_trace}, batches of "
        f"{args.batch}, {args.database}"
    )
    admin_url = pg_admin_url_from_env()
    ratios = []
    for pair in range(1, args.pairs + 1):
        with tempfile.TemporaryDirectory() as folder:
            floor_s = floor.floor_seconds(args.database, bodies, Path(folder), admin_url)
        with (
            tempfile.TemporaryDirectory() as folder,
            fresh_database(args.database, Path(folder), "in-process", admin_url) as url,
        ):
            upgrade(url)  # a fresh PostgreSQL database is migrated already; SQLite is not
            before = cpu_time.snapshot(os.getpid())
            decoding, storing = collector_seconds(url, bodies)
            used = cpu_time.between(before, cpu_time.snapshot(os.getpid()))
        total = decoding + storing
        ratios.append(floor_s / total)
        server = (
            f"; database server CPU {used.database_s * 1e6 / spans:.1f} us/span"
            if args.database == "postgresql"
            else ""
        )
        print(
            f"pair {pair}: decode {decoding * 1e6 / spans:.1f} + store and judge "
            f"{storing * 1e6 / spans:.1f} us/span = {spans / total:,.0f} spans/s; "
            f"floor {spans / floor_s:,.0f} spans/s; collector ÷ floor {floor_s / total:.2f}"
            + server,
            flush=True,
        )
    print(f"median collector ÷ floor: {sorted(ratios)[len(ratios) // 2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
