"""Paging by cursor visits every report (and every run) exactly once while other runs
arrive: newer, older and at the very same times as those already stored. A live
collector on SQLite and PostgreSQL, fed over OTLP/HTTP from a second thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx

from tests.collector import otlp_payloads as op
from tests.collector.live_collector import LiveCollector
from tests.collector.test_ingest import post

BASE_NS = 1_700_000_000 * 10**9


def send_run(collector: LiveCollector, at_ns: int, calls: int = 2) -> str:
    """One run of ``calls`` calls ending at ``at_ns`` (as nanoseconds): each call's
    result travels in its own request, and is missing from the other's."""
    trace = op.new_trace_id()
    spans = [
        span
        for i in range(calls)
        for span in op.journey_spans(f"call-{i}", f"req-{i}", start_ns=at_ns)
    ]
    assert post(collector, op.proto_body(trace, spans)).status_code == 200
    return trace.hex()


def pages(http: httpx.Client, path: str, items: str, limit: int) -> Iterator[list[Any]]:
    params: dict[str, Any] = {"limit": limit}
    for _ in range(1_000):  # a cursor that does not advance must not loop for ever
        body = http.get(path, params=params).raise_for_status().json()
        yield body[items]
        if body["next_cursor"] is None:
            return
        params["after"] = body["next_cursor"]
    raise AssertionError("the pages never ended")


def _key(report: dict[str, Any]) -> tuple[str, str, str | None]:
    return (report["trace_id"], report["tool_call_id"], report["request_id"])


def test_cursor_pages_visit_every_row_once_while_runs_arrive(collector: LiveCollector) -> None:
    seconds = [0, 5, 5, 9, 20, 20, 20, 31]  # ties on purpose
    for second in seconds:
        send_run(collector, BASE_NS + second * 10**9)
    with collector.client() as http:
        before = http.get("/api/v1/reports", params={"limit": 1000}).json()["reports"]
        runs_before = http.get("/api/v1/runs", params={"limit": 1000}).json()["runs"]
    per_run = len(before) // len(seconds)
    assert len(before) == per_run * len(seconds) and len(runs_before) == len(seconds)

    stop = threading.Event()
    arrivals: list[str] = []

    def keep_sending() -> None:
        # Newer than all, older than all, and at the times already stored.
        offsets = [40, -10, 5, 20, 50, -20, 9, 31]
        while not stop.is_set() and len(arrivals) < 24:
            second = offsets[len(arrivals) % len(offsets)]
            arrivals.append(send_run(collector, BASE_NS + second * 10**9))
            time.sleep(0.01)

    sender = threading.Thread(target=keep_sending)
    sender.start()
    try:
        with collector.client() as http:
            seen: list[tuple[str, str, str | None]] = []
            for page in pages(http, "/api/v1/reports", "reports", limit=2):
                seen += [_key(r) for r in page]
                time.sleep(0.005)
            seen_runs: list[str] = []
            for run_page in pages(http, "/api/v1/runs", "runs", limit=1):
                seen_runs += [r["trace_id"] for r in run_page]
                time.sleep(0.005)
    finally:
        stop.set()
        sender.join()
    assert arrivals, "no run arrived while paging"
    assert len(seen) == len(set(seen)), "a report was visited twice"
    assert {_key(r) for r in before} <= set(seen), "a stored report was skipped"
    assert len(seen_runs) == len(set(seen_runs)), "a run was visited twice"
    assert {r["trace_id"] for r in runs_before} <= set(seen_runs), "a stored run was skipped"
    with collector.client() as http:
        after = http.get("/api/v1/reports", params={"limit": 1000}).json()
    assert set(seen) <= {_key(r) for r in after["reports"]}
    assert after["total"] == per_run * (len(seconds) + len(arrivals))
