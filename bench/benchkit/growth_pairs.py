"""The growth goal measured in pairs: traces of ~200 spans, then traces of ~10,000,
back to back on each database, so each ratio compares two runs on the same machine."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from benchkit import workload
from benchkit.ingest_report import Point


def growth_lengths(
    loads: Sequence[workload.Workload],
) -> tuple[workload.Workload, workload.Workload] | None:
    """The loads nearest the goal's traces of 200 and of 10,000 spans; None with fewer
    than two lengths."""
    if len(loads) < 2:
        return None
    short = min(loads, key=lambda w: abs(w.spans_per_trace - 200))
    long = min(loads, key=lambda w: abs(w.spans_per_trace - 10_000))
    return None if short is long else (short, long)


def measure_growth(
    loads: Sequence[workload.Workload],
    databases: Sequence[str],
    args: argparse.Namespace,
    point_of: Callable[[str, workload.Workload], Point],
) -> dict[str, list[tuple[Point, Point]]]:
    """``--growth-pairs`` pairs per database of (short traces, long traces), run one right
    after the other: their ratio is the growth goal's, each pair seeing the same machine."""
    chosen = growth_lengths(loads)
    if chosen is None or args.growth_pairs < 1:
        return {}
    short, long = chosen
    print(
        f"\ngrowth pairs: traces of {long.spans_per_trace:,} right after traces of "
        f"{short.spans_per_trace:,}, {args.growth_pairs} per database",
        flush=True,
    )
    growth: dict[str, list[tuple[Point, Point]]] = {}
    for _ in range(args.growth_pairs):
        for database in databases:
            if database == "postgresql" and 0 < args.pg_max_length < long.spans_per_trace:
                continue
            pair = (point_of(database, short), point_of(database, long))
            growth.setdefault(database, []).append(pair)
            print(
                f"  {database:<10} {pair[0].spans_per_s:>7,.0f} then {pair[1].spans_per_s:>7,.0f} "
                f"spans/s: ratio {pair[1].spans_per_s / pair[0].spans_per_s:.2f}",
                flush=True,
            )
    return growth
