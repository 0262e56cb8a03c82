"""What ``bench/ingest.py`` measured, as tables: one :class:`Point` per end-to-end run,
the end-to-end-vs-floor table, the growth table and issue 10's ratios."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchkit import verify
from benchkit.cpu_time import CpuUse
from benchkit.tables import mib, print_table, ratio


@dataclass(frozen=True)
class Point:
    """One end-to-end run: one database, one trace length, a fresh collector."""

    database: str
    trace_spans: int
    spans: int
    traces: int
    seconds: float
    peak_rss_kib: int
    statuses: dict[str, int]
    completeness: verify.Completeness
    reports: int
    stored_bytes: int
    cpu: CpuUse

    @property
    def bytes_per_span(self) -> float:
        return self.stored_bytes / self.spans

    @property
    def spans_per_s(self) -> float:
        return self.spans / self.seconds


def cpu_split(point: Point) -> str:
    """CPU milliseconds per 1,000 spans: client / collector / database server, and the
    cores the three kept busy together over the run's wall time."""
    per_k = 1000 / point.spans * 1000
    cpu = point.cpu
    return (
        f"{cpu.client_s * per_k:,.0f} / {cpu.collector_s * per_k:,.0f} / "
        f"{cpu.database_s * per_k:,.0f} ms per 1k spans, "
        f"{cpu.total_s / point.seconds:.2f} cores"
    )


def _stored(point: Point) -> str:
    c = point.completeness
    if c.complete and c.unexpected == 0:
        return f"all {c.stored:,}"
    return f"{c.stored:,} of {c.sent:,}: LOST {c.lost:,}"


def _answers(statuses: dict[str, int]) -> str:
    return ", ".join(f"{status} x{count}" for status, count in statuses.items())


def print_end_to_end(points: Sequence[Point], floors: dict[str, float], spans: int) -> None:
    print(f"## End to end vs floor (traces of {points[0].trace_spans:,} spans)\n")
    rows = []
    for p in points:
        rows.append(
            (
                p.database,
                f"{p.spans:,}",
                f"{p.traces:,}",
                f"{p.seconds:.1f}",
                f"{p.spans_per_s:,.0f}",
                f"{spans / floors[p.database]:,.0f}" if p.database in floors else "n/a",
                ratio(p.spans_per_s, spans / floors[p.database] if p.database in floors else None),
                mib(p.peak_rss_kib),
                cpu_split(p),
                _stored(p),
                f"{p.reports:,}",
                _answers(p.statuses),
            )
        )
    print_table(
        (
            "database",
            "spans",
            "runs",
            "seconds",
            "spans/s",
            "floor spans/s",
            "end-to-end ÷ floor",
            "collector peak RSS",
            "CPU: client / collector / database",
            "stored",
            "reports",
            "HTTP answers",
        ),
        rows,
    )


def print_growth(points: Sequence[Point], databases: Sequence[str]) -> None:
    print("## Growth: spans/s as traces get longer (fresh collector and database each)\n")
    lengths = sorted({p.trace_spans for p in points})
    by_key = {(p.database, p.trace_spans): p for p in points}
    header = ["spans per trace"]
    for database in databases:
        header += [f"{database} spans", f"{database} spans/s", f"{database} peak RSS"]
    rows = []
    for length in lengths:
        row = [f"{length:,}"]
        for database in databases:
            p = by_key.get((database, length))
            row += (
                [f"{p.spans:,}", f"{p.spans_per_s:,.0f}", mib(p.peak_rss_kib)]
                if p
                else ["-", "-", "-"]
            )
        rows.append(row)
    print_table(header, rows)


def growth_ratios(pairs: Sequence[tuple[Point, Point]]) -> list[float]:
    """long ÷ short spans/s of each (short, long) pair, in the order run."""
    return [long.spans_per_s / short.spans_per_s for short, long in pairs]


def median_of(values: Sequence[float]) -> float:
    return statistics.median(values)


def print_growth_pairs(growth: dict[str, list[tuple[Point, Point]]]) -> None:
    if not growth:
        return
    print("## Growth pairs: long traces right after short ones\n")
    rows = []
    for database, pairs in growth.items():
        short, long = pairs[0]
        ratios = growth_ratios(pairs)
        rows.append(
            (
                database,
                f"{long.trace_spans:,} ÷ {short.trace_spans:,}",
                ", ".join(
                    f"{b.spans_per_s:,.0f} ÷ {a.spans_per_s:,.0f} = {r:.2f}"
                    for (a, b), r in zip(pairs, ratios, strict=True)
                ),
                f"{median_of(ratios):.2f}",
            )
        )
    print_table(("database", "spans per trace", "pairs (spans/s)", "median ratio"), rows)


def _nearest(points: Sequence[Point], database: str, length: int) -> Point | None:
    mine = [p for p in points if p.database == database]
    if not mine:
        return None
    return min(mine, key=lambda p: abs(p.trace_spans - length))


def print_ratios(
    points: Sequence[Point],
    floors: dict[str, float],
    spans: int,
    databases: Sequence[str],
    growth: dict[str, list[tuple[Point, Point]]] | None = None,
    rounds: Sequence[dict[str, Point]] = (),
) -> None:
    """``rounds``: each database's point per round of the first trace length."""
    print("## Ratios (issue 10's goals)\n")
    rows = []
    for database in databases:
        short, long = _nearest(points, database, 200), _nearest(points, database, 10_000)
        pairs = (growth or {}).get(database)
        if pairs:
            first_short, first_long = pairs[0]
            rows.append(
                (
                    f"spans/s, traces of {first_long.trace_spans:,} ÷ traces of "
                    f"{first_short.trace_spans:,}, "
                    f"{database} (median of {len(pairs)} pairs)",
                    f"{median_of(growth_ratios(pairs)):.2f}",
                    "≥ 0.9",
                )
            )
        elif short and long and long.trace_spans != short.trace_spans:
            rows.append(
                (
                    f"spans/s, traces of {long.trace_spans:,} ÷ traces of {short.trace_spans:,}, "
                    f"{database}",
                    ratio(long.spans_per_s, short.spans_per_s),
                    "≥ 0.9",
                )
            )
        if short and database in floors:
            rows.append(
                (
                    f"end-to-end ÷ floor, {database}",
                    ratio(short.spans_per_s, spans / floors[database]),
                    "≥ 0.25 (stretch 0.5)" if database == "sqlite" else "-",
                )
            )
    both = [r for r in rounds if "sqlite" in r and "postgresql" in r]
    if both:
        # Within a round the databases ran back to back: compare them there, not the
        # median points of each, which may come from rounds minutes apart.
        each = ", ".join(ratio(r["postgresql"].spans_per_s, r["sqlite"].spans_per_s) for r in both)
        ordered = sorted(both, key=lambda r: r["postgresql"].spans_per_s / r["sqlite"].spans_per_s)
        middle = ordered[len(ordered) // 2]
        rows.append(
            (
                "end-to-end spans/s, PostgreSQL vs SQLite in the same round "
                f"(median of {len(both)} rounds: {each})",
                f"{ratio(middle['postgresql'].spans_per_s, middle['sqlite'].spans_per_s)}× "
                f"({middle['postgresql'].spans_per_s:,.0f} vs {middle['sqlite'].spans_per_s:,.0f})",
                "≥ 1× and ≥ 10,000 spans/s",
            )
        )
    for database in databases:
        point = _nearest(points, database, 200)
        if point:
            rows.append(
                (
                    f"bytes stored per span ({database}: tables + indexes)",
                    f"{point.bytes_per_span:,.0f}",
                    "≤ 1,000" if database == "sqlite" else "-",
                )
            )
    print_table(("what", "measured", "goal"), rows)
