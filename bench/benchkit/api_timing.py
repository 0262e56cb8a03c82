"""Timing HTTP calls of the query API: each call repeated, round robin, over one
keep-alive connection, as a dashboard page makes them one after the other."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from benchkit.tables import percentile

Params = dict[str, Any] | list[tuple[str, Any]]


@dataclass(frozen=True)
class Call:
    """One API call as a page makes it; ``rows`` says how many items it answered."""

    name: str
    path: str
    params: Params = field(default_factory=dict)

    def rows(self, answer: httpx.Response) -> str:
        if self.path == "/metrics":
            lines = answer.text.splitlines()
            return f"{sum(1 for line in lines if line.startswith('ctxledger_journeys{'))} series"
        body = answer.json()
        for key in ("reports", "runs", "points", "rows"):
            if key in body:
                total = body.get("total")
                return f"{len(body[key]):,}" + (f" of {total:,}" if total is not None else "")
        if "steps" in body:
            return f"{body['journeys']:,} journeys, {len(body['steps'])} steps"
        if "by_stage" in body:
            return f"{body['journeys']:,} journeys, {len(body['recent_losses'])} recent"
        return "-"


@dataclass
class Timing:
    call: Call
    seconds: list[float] = field(default_factory=list)
    rows: str = "-"
    status: int = 0

    def ms(self, fraction: float) -> float:
        return percentile(self.seconds, fraction) * 1000

    @property
    def max_ms(self) -> float:
        return max(self.seconds, default=0.0) * 1000


def get(http: httpx.Client, path: str, params: Params | None = None) -> Any:
    answer = http.get(path, params=params)
    answer.raise_for_status()
    return answer.json()


def time_calls(
    http: httpx.Client,
    calls: list[Call],
    reps: int,
    progress: Callable[[int, int], None] | None = None,
) -> list[Timing]:
    """``reps`` timed rounds of every call after one untimed warm-up round."""
    timings = [Timing(call) for call in calls]
    for round_number in range(reps + 1):
        for timing in timings:
            started = time.perf_counter()
            answer = http.get(timing.call.path, params=timing.call.params)
            elapsed = time.perf_counter() - started
            timing.status = answer.status_code
            if round_number == 0:
                timing.rows = timing.call.rows(answer) if answer.status_code == 200 else "-"
            else:
                timing.seconds.append(elapsed)
        if progress is not None:
            progress(round_number, reps)
    return timings
