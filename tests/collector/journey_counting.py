"""Reference counting for the journey counters: what ``journey_counts`` and
``run_journey_counts`` must hold, and what any aggregate must answer, computed in Python
from the stored reports themselves."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine, select

from ctxledger.verdicts import layer_name
from ctxledger_collector.query.report_filters import ReportFilter
from ctxledger_collector.query.time_slices import Slice
from ctxledger_collector.storage.counter_tables import JOURNEY_COUNTS, RUN_JOURNEY_COUNTS
from ctxledger_collector.storage.journey_counts import GRAINS, bucket_of
from ctxledger_collector.storage.tables import REPORTS, RUNS


def report_rows(connection: Connection) -> list[Any]:
    query = select(
        REPORTS.c.run_id,
        REPORTS.c.agent_name,
        REPORTS.c.tool_name,
        REPORTS.c.verdict,
        REPORTS.c.last_observed_at,
        REPORTS.c.lost_items,
        REPORTS.c.lost_tokens,
        REPORTS.c.first_lost,
        REPORTS.c.lost_tokens_unknown,
        REPORTS.c.layer,
        RUNS.c.service_name,
    ).join_from(REPORTS, RUNS, RUNS.c.id == REPORTS.c.run_id)
    return list(connection.execute(query))


def _sums(row: Any) -> list[int]:
    """A report's part of every sum: journeys, lost items and tokens, then the same for
    lost results (its first lost journey only), then whether its lost tokens are unknown,
    as a journey and as a lost result."""
    first = bool(row.first_lost)
    own = [1, row.lost_items, row.lost_tokens]
    unknown = int(row.lost_tokens_unknown is not None)
    return [*own, *(own if first else [0, 0, 0]), unknown, unknown if first else 0]


def expected_counters(
    rows: Sequence[Any],
) -> tuple[dict[tuple[Any, ...], tuple[int, ...]], dict[tuple[Any, ...], tuple[int, int]]]:
    journeys: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0] * 8)
    runs: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        for grain in GRAINS:
            key = (grain, bucket_of(r.last_observed_at, grain), r.agent_name or "")
            sums = journeys[(*key, r.tool_name or "", r.verdict, r.layer or "")]
            for i, value in enumerate(_sums(r)):
                sums[i] += value
        counts = runs[(r.run_id, r.agent_name or "", r.verdict, r.layer or "")]
        counts[0] += 1
        counts[1] += int(bool(r.first_lost))
    return {k: tuple(v) for k, v in journeys.items()}, {k: (v[0], v[1]) for k, v in runs.items()}


def stored_counters(
    connection: Connection,
) -> tuple[dict[tuple[Any, ...], tuple[int, ...]], dict[tuple[Any, ...], tuple[int, int]]]:
    c, r = JOURNEY_COUNTS.c, RUN_JOURNEY_COUNTS.c
    sums = (
        c.journeys,
        c.lost_items,
        c.lost_tokens,
        c.lost_results,
        c.result_lost_items,
        c.result_lost_tokens,
        c.tokens_unknown,
        c.result_tokens_unknown,
    )
    journeys = {
        tuple(row[:6]): tuple(row[6:])
        for row in connection.execute(
            select(c.grain, c.bucket, c.agent_name, c.tool_name, c.verdict, c.layer, *sums)
        )
        if any(row[6:])
    }
    runs = {
        (row.run_id, row.agent_name, row.verdict, row.layer): (row.journeys, row.lost_results)
        for row in connection.execute(
            select(r.run_id, r.agent_name, r.verdict, r.layer, r.journeys, r.lost_results)
        )
        if row.journeys or row.lost_results
    }
    return journeys, runs


def assert_counters_match_reports(engine: Engine) -> None:
    with engine.connect() as connection:
        expected = expected_counters(report_rows(connection))
        stored = stored_counters(connection)
    assert stored[0] == expected[0]
    assert stored[1] == expected[1]


def _matches(row: Any, f: ReportFilter) -> bool:
    if f.verdicts and row.verdict not in f.verdicts:
        return False
    if f.tool and row.tool_name != f.tool:
        return False
    if f.layers and layer_name(row.layer or None) not in f.layers:
        return False
    return not f.agent or f.agent in (row.agent_name, row.service_name)


def expected_tally(
    rows: Sequence[Any],
    f: ReportFilter,
    slices: Sequence[Slice],
    by: Sequence[str],
    width: int | None,
) -> dict[tuple[Any, ...], list[int]]:
    """What ``journey_aggregates.tally`` must answer, by counting ``rows``."""
    totals: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0] * 8)
    for row in rows:
        if not _matches(row, f):
            continue
        t = row.last_observed_at
        inside = any(
            (s.start is None or t >= s.start) and (s.end is None or t < s.end) for s in slices
        )
        if not inside:
            continue
        label = bucket_of(t, width) if width else 0
        sums = totals[(label, *(getattr(row, name) for name in by))]
        for i, value in enumerate(_sums(row)):
            sums[i] += value
    return dict(totals)
