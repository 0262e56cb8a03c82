"""The API calls the dashboard's pages make, with the parameters they would use on this
data: the Incidents overview per view (``app_pages/incidents.py``, ``incident_tables.py``),
the Run page, the Tool page, and the reports and runs lists as an API client pages them."""

from __future__ import annotations

import math
import time
from typing import Any

import httpx

from benchkit.api_timing import Call, get
from ctxledger.verdicts import LOSING_VERDICTS, VERDICT_SEVERITY

BUCKETS = 48  # overview.BUCKETS
RANGES = {"24h": 86_400.0, "7d": 7 * 86_400.0, "all": None}


def window(range_seconds: float | None) -> tuple[float | None, float | None]:
    """[since, until) as ``overview._window`` computes it."""
    if range_seconds is None:
        return None, None
    width = range_seconds / BUCKETS
    until = math.ceil(time.time() / width) * width
    return until - range_seconds, until


def _scope(since: float | None, until: float | None, **filters: Any) -> dict[str, Any]:
    scope = {"since": since, "until": until, **filters}
    return {k: v for k, v in scope.items() if v is not None}


def _worst_tool(http: httpx.Client, scope: dict[str, Any]) -> str | None:
    rows = get(http, "/api/v1/stats/breakdown", {"by": "tool", "limit": 500, **scope})["rows"]
    return next((r["name"] for r in rows if r["losing"] and r["name"]), None)


def _worst_present(http: httpx.Client, scope: dict[str, Any]) -> str | None:
    points = get(http, "/api/v1/stats/timeline", {"buckets": BUCKETS, **scope})["points"]
    present = {p["verdict"] for p in points if p["journeys"]}
    return max(present, key=VERDICT_SEVERITY.__getitem__, default=None)


def overview(
    http: httpx.Client, label: str, range_seconds: float | None, **filters: Any
) -> list[Call]:
    """One Incidents view: what ``overview.render`` and ``incident_tables.runs`` ask for."""
    since, until = window(range_seconds)
    scope = _scope(since, until, **filters)
    names = _scope(since, None)
    calls = []
    if not filters:
        calls += [
            Call(f"{label}: runs total", "/api/v1/runs", {"limit": 1}),
            Call(
                f"{label}: agent names",
                "/api/v1/stats/breakdown",
                {"by": "agent", "limit": 500, **names},
            ),
            Call(
                f"{label}: tool names",
                "/api/v1/stats/breakdown",
                {"by": "tool", "limit": 500, **names},
            ),
        ]
    calls += [
        Call(f"{label}: timeline", "/api/v1/stats/timeline", {"buckets": BUCKETS, **scope}),
        Call(
            f"{label}: breakdown by tool",
            "/api/v1/stats/breakdown",
            {"by": "tool", "limit": 500, **scope},
        ),
        Call(
            f"{label}: breakdown by agent",
            "/api/v1/stats/breakdown",
            {"by": "agent", "limit": 500, **scope},
        ),
    ]
    worst_tool = _worst_tool(http, scope)
    if worst_tool:
        look_first = _scope(since, until, agent=filters.get("agent"), recent=0)
        calls.append(
            Call(f"{label}: look first ({worst_tool})", f"/api/v1/tools/{worst_tool}", look_first)
        )
    verdict = _worst_present(http, scope)
    listing = {"limit": 20, "offset": 0, **_scope(since, until, verdict=verdict)}
    if filters.get("tool"):
        reports = {**listing, **scope, "verdict": verdict or filters.get("verdict")}
        calls.append(Call(f"{label}: tool's journeys ({verdict})", "/api/v1/reports", reports))
    else:
        runs = {**listing, **_scope(None, None, agent=filters.get("agent"))}
        calls.append(Call(f"{label}: worst runs ({verdict})", "/api/v1/runs", runs))
    return calls


def run_page(trace_id: str, shape: str) -> list[Call]:
    return [
        Call("run page: run picker", "/api/v1/runs", {"limit": 20, "offset": 0}),
        Call(f"run page: one run ({shape})", f"/api/v1/runs/{trace_id}"),
        Call(f"reports of the run, limit 100 ({shape})", "/api/v1/reports", {"trace_id": trace_id}),
        Call(
            f"reports of the run, limit 1000 ({shape})",
            "/api/v1/reports",
            {"trace_id": trace_id, "limit": 1000},
        ),
    ]


def tool_page(http: httpx.Client) -> list[Call]:
    since, _ = window(RANGES["24h"])
    tool = _worst_tool(http, _scope(since, None)) or "grep_logs"
    return [
        Call(f"tool page 24h ({tool})", f"/api/v1/tools/{tool}", {"since": since, "recent": 20}),
        Call(f"tool page all time ({tool})", f"/api/v1/tools/{tool}", {"recent": 20}),
    ]


def report_lists(http: httpx.Client) -> list[Call]:
    since, until = window(RANGES["7d"])
    tool = _worst_tool(http, {}) or "grep_logs"
    losing = [("verdict", v) for v in LOSING_VERDICTS]
    return [
        Call("reports: newest 100", "/api/v1/reports", {"limit": 100}),
        Call("reports: verdict=silent", "/api/v1/reports", {"verdict": "silent", "limit": 100}),
        Call(
            "reports: losing verdicts, 7d",
            "/api/v1/reports",
            [*losing, ("since", since), ("until", until), ("limit", 100)],
        ),
        Call(
            "reports: agent=support-desk (service)",
            "/api/v1/reports",
            {"agent": "support-desk", "limit": 100},
        ),
        Call(
            f"reports: tool={tool} verdict=dropped",
            "/api/v1/reports",
            {"tool": tool, "verdict": "dropped", "limit": 100},
        ),
        Call("reports: offset 100,000", "/api/v1/reports", {"offset": 100_000, "limit": 100}),
        Call(
            "reports: the page after 100,000 by cursor",
            "/api/v1/reports",
            {"after": _cursor_at(http, "/api/v1/reports", 100_000), "limit": 100},
        ),
    ]


def _cursor_at(http: httpx.Client, path: str, position: int) -> str:
    """The cursor a client paging by cursor holds after ``position`` rows."""
    cursor: str = get(http, path, {"offset": position - 1, "limit": 1})["next_cursor"]
    return cursor


def run_lists(http: httpx.Client) -> list[Call]:
    return [
        Call("runs: newest 50", "/api/v1/runs", {"limit": 50}),
        Call("runs: agent=coding-agent", "/api/v1/runs", {"agent": "coding-agent", "limit": 50}),
        Call("runs: offset 3,000", "/api/v1/runs", {"offset": 3_000, "limit": 50}),
        Call(
            "runs: the page after 3,000 by cursor",
            "/api/v1/runs",
            {"after": _cursor_at(http, "/api/v1/runs", 3_000), "limit": 50},
        ),
    ]


def all_calls(http: httpx.Client, run_trace: str, run_shape: str) -> list[Call]:
    tool = _worst_tool(http, _scope(window(RANGES["24h"])[0], None)) or "grep_logs"
    return [
        *overview(http, "incidents 24h", RANGES["24h"]),
        *overview(http, "incidents 24h agent", RANGES["24h"], agent="support-agent"),
        *overview(http, "incidents 24h tool", RANGES["24h"], tool=tool),
        *overview(http, "incidents 24h silent", RANGES["24h"], verdict=["silent"]),
        *overview(http, "incidents 7d", RANGES["7d"]),
        *overview(http, "incidents all time", RANGES["all"]),
        *run_page(run_trace, run_shape),
        *tool_page(http),
        *report_lists(http),
        *run_lists(http),
        Call("prometheus scrape", "/metrics"),
    ]
