"""What the collector stored, compared with what was sent: natural-key sets, reports, runs.

Stored spans are read from the database (a measurement is stored under (trace, call,
stage) and a manifest under (trace, request), whatever else the storage keeps); the
runs and reports are read through the query API, as a user would see them.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import create_engine, text

Key = tuple[str, ...]


@dataclass(frozen=True)
class Stored:
    keys: frozenset[Key]
    calls_with_reports: int
    reports: int
    runs: int
    verdicts: dict[str, int]


def stored_keys(database_url: str) -> tuple[frozenset[Key], int, dict[str, int]]:
    """Natural keys of the stored spans, the tool calls with a report, the verdict mix."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            keys: set[Key] = set()
            for trace_id, call, stage in connection.execute(
                text(
                    "SELECT r.trace_id, m.tool_call_id, m.stage FROM measurements m "
                    "JOIN runs r ON r.id = m.run_id"
                )
            ):
                keys.add(("measurement", trace_id, call, stage))
            for trace_id, request in connection.execute(
                text(
                    "SELECT r.trace_id, m.request_id FROM manifests m "
                    "JOIN runs r ON r.id = m.run_id"
                )
            ):
                keys.add(("manifest", trace_id, request))
            calls = connection.scalar(
                text("SELECT count(*) FROM (SELECT DISTINCT run_id, tool_call_id FROM reports) c")
            )
            verdicts = {
                str(verdict): int(count)
                for verdict, count in connection.execute(
                    text("SELECT verdict, count(*) FROM reports GROUP BY verdict ORDER BY 1")
                )
            }
    finally:
        engine.dispose()
    return frozenset(keys), int(calls or 0), verdicts


def _api_total(base_url: str, path: str) -> int:
    with urllib.request.urlopen(f"{base_url}{path}?limit=1", timeout=60) as answer:
        total: int = json.load(answer)["total"]
        return total


def read_stored(database_url: str, base_url: str) -> Stored:
    keys, calls, verdicts = stored_keys(database_url)
    return Stored(
        keys=keys,
        calls_with_reports=calls,
        reports=_api_total(base_url, "/api/v1/reports"),
        runs=_api_total(base_url, "/api/v1/runs"),
        verdicts=verdicts,
    )


@dataclass(frozen=True)
class Completeness:
    """Sent vs stored. ``lost`` are spans acknowledged (or, in a run that expects
    everything, sent) but not stored; it must be empty."""

    sent: int
    stored: int
    lost: int
    unexpected: int  # stored keys nobody sent (should be 0)
    traces_missing: int
    calls_without_report: int

    @property
    def complete(self) -> bool:
        return self.lost == 0 and self.traces_missing == 0 and self.calls_without_report == 0


def compare(
    expected: Collection[Key], sent: Collection[Key], stored: Stored, traces: int, calls: int
) -> Completeness:
    """``expected``: keys that must be stored (all sent, or the acknowledged ones)."""
    expected_set, sent_set = set(expected), set(sent)
    return Completeness(
        sent=len(sent_set),
        stored=len(stored.keys & sent_set),
        lost=len(expected_set - stored.keys),
        unexpected=len(stored.keys - sent_set),
        traces_missing=max(0, traces - stored.runs),
        calls_without_report=max(0, calls - stored.calls_with_reports),
    )


def shout_if_lost(label: str, completeness: Completeness) -> None:
    if completeness.complete and completeness.unexpected == 0:
        return
    bar = "!" * 78
    print(bar)
    print(
        f"!!! {label}: NOT EVERYTHING WAS STORED AND JUDGED: lost {completeness.lost:,} "
        f"spans, {completeness.traces_missing:,} runs missing, "
        f"{completeness.calls_without_report:,} tool calls without a report, "
        f"{completeness.unexpected:,} unexpected rows"
    )
    print(bar)
