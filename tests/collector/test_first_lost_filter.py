"""``GET /api/v1/reports?first_lost=true``: each lost result once, where it was first lost.

Two tool results cut at step 2 and re-sent, still cut, by 10 later requests each: 22
silent journeys, but 2 lost results. A live collector on SQLite and PostgreSQL, the run
sent over OTLP/HTTP."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import httpx

from ctxledger import semconv as sc
from tests.collector import otlp_payloads as op
from tests.collector.live_collector import LiveCollector
from tests.collector.otlp_post import post_otlp

CUT_CALLS = ("call_cut_a", "call_cut_b")
WHOLE_CALL = "call_whole"
FIRST_STEP = 2
RESENDS = 10
#: The steps that carry the cut results: where they are first lost, then the re-sends.
STEPS = tuple(range(FIRST_STEP, FIRST_STEP + 1 + RESENDS))
ITEMS, KEPT = 50, 20


@dataclass(frozen=True)
class ResentRun:
    trace_id: str
    first_requests: dict[str, str]  # call -> the request where it was first lost


def request_id(step: int) -> str:
    return f"req_{step:02d}"


def _stages(call: str, step: int, items: int, start_ns: int) -> list[op.Span]:
    """Assembled and sent (``items`` of ``ITEMS`` kept) for ``call`` in ``step``'s request."""
    return [
        op.Span(
            op.stage_attributes(
                stage,
                call,
                chars=items * 100,
                tokens=items * 25,
                items=items,
                ids=op.ITEM_IDS[:items],
                request_id=request_id(step),
                step=step,
            ),
            end_time_unix_nano=start_ns + offset,
        )
        for offset, stage in enumerate((sc.STAGE_ASSEMBLED, sc.STAGE_SENT))
    ]


def resent_run_spans() -> list[op.Span]:
    """The cut calls' original and serialized (50 items, step 1), then 20 of them in the
    request of every step in ``STEPS``; the whole call kept whole in step 2's request."""
    now = time.time_ns()
    spans: list[op.Span] = []
    for call in (*CUT_CALLS, WHOLE_CALL):
        for stage in (sc.STAGE_ORIGINAL, sc.STAGE_SERIALIZED):
            attrs = op.stage_attributes(
                stage, call, chars=ITEMS * 100, tokens=ITEMS * 25, items=ITEMS,
                ids=op.ITEM_IDS, step=1,
            )  # fmt: skip
            spans.append(op.Span(attrs, end_time_unix_nano=now))
    for step in STEPS:
        at = now + step * 1_000_000
        carried = [*CUT_CALLS, WHOLE_CALL] if step == FIRST_STEP else list(CUT_CALLS)
        for call in CUT_CALLS:
            spans += _stages(call, step, KEPT, at)
        if step == FIRST_STEP:
            spans += _stages(WHOLE_CALL, step, ITEMS, at)
        manifest = op.manifest_attributes(request_id(step), carried, step=step)
        spans.append(op.Span(manifest, name=sc.SPAN_MANIFEST, end_time_unix_nano=at + 10))
    return spans


def send_resent_run(collector: LiveCollector, http: httpx.Client) -> ResentRun:
    trace = op.new_trace_id()
    body = op.proto_body(trace, resent_run_spans())
    assert post_otlp(http, collector.url, body).status_code == 200
    first = {call: request_id(FIRST_STEP) for call in CUT_CALLS}
    return ResentRun(trace.hex(), first)


def _get(http: httpx.Client, params: Any) -> dict[str, Any]:
    answer = http.get("/api/v1/reports", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _all_pages(http: httpx.Client, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every report ``params`` matches, one per page by cursor (each page's total checked)."""
    total = _get(http, params)["total"]
    found: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        page = _get(http, {**params, "limit": 1, **({"after": after} if after else {})})
        assert page["total"] == total
        found += page["reports"]
        after = page["next_cursor"]
        if after is None:
            return found


def test_first_lost_lists_each_lost_result_once(collector: LiveCollector) -> None:
    with collector.client() as http:
        run = send_resent_run(collector, http)
        # Both ways of counting: a run's reports by SQL, the whole list from the counters.
        for scope in ({"trace_id": run.trace_id}, {}):
            silent = _get(http, {**scope, "verdict": "silent", "limit": 1000})
            assert silent["total"] == len(silent["reports"]) == len(CUT_CALLS) * len(STEPS)

            first = _get(http, {**scope, "first_lost": "true"})
            assert first["total"] == len(CUT_CALLS)
            assert sorted((r["tool_call_id"], r["request_id"]) for r in first["reports"]) == [
                (call, run.first_requests[call]) for call in CUT_CALLS
            ]
            for report in first["reports"]:
                assert report["first_lost"] and not report["still_missing"]
                assert (report["verdict"], report["step"]) == ("silent", FIRST_STEP)
                assert report["lost_items"] == ITEMS - KEPT

            again = _get(http, {**scope, "verdict": "silent", "first_lost": "false"})
            assert again["total"] == len(CUT_CALLS) * RESENDS
            assert all(r["still_missing"] for r in again["reports"])
            rest = _get(http, {**scope, "first_lost": "false"})
            assert rest["total"] == len(CUT_CALLS) * RESENDS + 1  # and the whole call
            assert {r["verdict"] for r in rest["reports"]} == {"silent", "intact"}

            # Pages honour the filter: by cursor, and by offset.
            paged = _all_pages(http, {**scope, "first_lost": "true"})
            assert paged == first["reports"]
            page = _get(http, {**scope, "first_lost": "true", "limit": 1, "offset": 1})
            assert page["total"] == 2 and page["next_offset"] is None
            assert page["reports"] == first["reports"][1:]

        # The aggregates count the same lost results.
        runs = http.get("/api/v1/runs").json()["runs"]
        assert [(r["trace_id"], r["lost_results"]) for r in runs] == [(run.trace_id, 2)]
        (tool,) = http.get("/api/v1/stats/breakdown", params={"by": "tool"}).json()["rows"]
        assert (tool["losing"], tool["lost_results"]) == (len(CUT_CALLS) * len(STEPS), 2)
        assert http.get("/api/v1/reports", params={"first_lost": "maybe"}).status_code == 422


def _reports_command(collector: LiveCollector, *options: str) -> list[str]:
    """``ctxledger reports`` run as the real command against the live collector."""
    done = subprocess.run(
        [sys.executable, "-m", "ctxledger_cli", "reports", "--endpoint", collector.url, *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_reports_command_counts_each_lost_result_once_with_first_lost(
    collector: LiveCollector,
) -> None:
    with collector.client() as http:
        run = send_resent_run(collector, http)
    scope = ("--trace-id", run.trace_id, "--verdict", "silent")
    every = _reports_command(collector, *scope)
    silent = len(CUT_CALLS) * len(STEPS)
    assert every[-1] == f"{silent} shown of {silent} reports"
    first = _reports_command(collector, *scope, "--first-lost")
    assert first[-1] == "2 shown of 2 lost results (each once, where it was first lost)"
    header, *rows = first[:-1]
    assert header.split() == [
        "TRACE_ID", "STEP", "REQUEST_ID", "TOOL_CALL_ID", "TOOL_NAME", "VERDICT", "LOST_ITEMS",
        "FIRST_LOST",
    ]  # fmt: skip
    assert sorted(row.split() for row in rows) == [
        [run.trace_id, str(FIRST_STEP), run.first_requests[call], call, op.TOOL_NAME, "silent",
         str(ITEMS - KEPT), "*"]
        for call in CUT_CALLS
    ]  # fmt: skip
