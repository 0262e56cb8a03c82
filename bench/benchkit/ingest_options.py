"""The command line of ``bench/ingest.py``: ingest throughput of the collector, stored and
judged, against the floor, as traces grow."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from benchkit import workload
from benchkit.collector_process import REPO
from benchkit.databases import DATABASES, pg_admin_url_from_env

DEFAULT_LENGTHS = (200, 2_000, 10_000, 40_000)
QUICK_LENGTHS = (200, 2_000)
DEFAULT_PLOT = REPO / "docs" / "performance-growth.png"


def _lengths(text: str) -> tuple[int, ...]:
    return tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Ingest throughput of the collector, stored and judged, against the floor."
    )
    parser.add_argument(
        "--spans",
        type=int,
        default=None,
        help="spans per run (default 20,000; --quick 4,000); "
        "a trace longer than this is sent alone",
    )
    parser.add_argument(
        "--lengths",
        type=_lengths,
        default=None,
        help="comma-separated spans per trace (default 200,2000,10000,40000; --quick 200,2000)",
    )
    parser.add_argument("--only", choices=DATABASES, help="one database instead of both")
    parser.add_argument(
        "--pg-max-length",
        type=int,
        default=10_000,
        help="longest trace length run on PostgreSQL (default 10,000: its 40,000 point took "
        "10 min before the storage rewrite); 0 for no limit",
    )
    parser.add_argument("--quick", action="store_true", help="a small run to try the bench")
    parser.add_argument("--batch", type=int, default=512, help="spans per export request")
    parser.add_argument("--threads", type=int, default=2, help="client threads exporting")
    parser.add_argument(
        "--pg-workers",
        type=int,
        default=1,
        help="collector worker processes on PostgreSQL (`ctxledger serve --workers`)",
    )
    parser.add_argument(
        "--sqlite-synchronous",
        choices=("FULL", "NORMAL"),
        default="FULL",
        help="CTXLEDGER_SQLITE_SYNCHRONOUS of the collector (FULL: every commit on disk "
        "before the answer, the default; NORMAL: synced at checkpoints)",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=3,
        help="floor + end-to-end pairs at the first trace length (the median ratio is "
        "reported; --quick: 1)",
    )
    parser.add_argument(
        "--growth-pairs",
        type=int,
        default=3,
        help="pairs of (traces of ~200, traces of ~10,000) run back to back per database "
        "for the growth ratio; the median pair is reported (default 3; --quick: 0)",
    )
    parser.add_argument("--seed", type=int, default=workload.SEED)
    parser.add_argument(
        "--plot",
        type=Path,
        default=None,
        help=f"PNG of the growth curves (default {DEFAULT_PLOT.relative_to(REPO)}; "
        "none with --quick)",
    )
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--pg-admin-url",
        default=pg_admin_url_from_env(),
        help="libpq URL used to create and drop the temporary databases "
        "(or CTXLEDGER_BENCH_PG_ADMIN_URL)",
    )
    args = parser.parse_args(argv)
    args.spans = args.spans or (4_000 if args.quick else 20_000)
    if args.quick and "--pairs" not in (argv if argv is not None else sys.argv):
        args.pairs = 1
    if args.quick and "--growth-pairs" not in (argv if argv is not None else sys.argv):
        args.growth_pairs = 0
    args.lengths = args.lengths or (QUICK_LENGTHS if args.quick else DEFAULT_LENGTHS)
    if args.plot is None and not args.quick and not args.no_plot:
        args.plot = DEFAULT_PLOT
    if args.no_plot:
        args.plot = None
    return args
