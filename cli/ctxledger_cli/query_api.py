"""A client of the collector's query API (``/api/v1``).

Standard library only (urllib), so the plain SDK install can read a collector's verdicts.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

#: Answers a client should retry: the collector's storage is out of reach for now.
RETRIED_STATUS = 503
#: Retries of one call, and the pause when the answer names none (``Retry-After``).
RETRIES = 5
DEFAULT_RETRY_AFTER_S = 1.0


def read_key_headers() -> dict[str, str]:
    """The read key of ``CTXLEDGER_READ_KEY`` as a Bearer header (none when unset)."""
    key = os.environ.get("CTXLEDGER_READ_KEY", "").strip()
    return {"Authorization": f"Bearer {key}"} if key else {}


def _retry_after_s(error: urllib.error.HTTPError) -> float:
    try:
        return max(0.0, float(error.headers.get("Retry-After", DEFAULT_RETRY_AFTER_S)))
    except ValueError:  # an HTTP date: wait the default
        return DEFAULT_RETRY_AFTER_S


def get_json(url: str, timeout_s: float = 10.0) -> Any:
    """The JSON answer of a GET. A 503 (storage unavailable) is retried as the collector
    asks, after its ``Retry-After``, up to ``RETRIES`` times; other errors raise."""
    request = urllib.request.Request(url, headers=read_key_headers())
    for attempt in range(RETRIES + 1):
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            if error.code != RETRIED_STATUS or attempt == RETRIES:
                raise
            time.sleep(_retry_after_s(error))
    raise AssertionError("unreachable")  # the loop returns or raises


def fetch_reports(
    endpoint: str,
    tool_call_id: str,
    *,
    verdict: str | None = None,
    limit: int = 1000,
    timeout_s: float = 10.0,
) -> list[dict[str, Any]]:
    """The collector's loss reports of one tool call (one per journey), optionally only
    those with ``verdict``."""
    filters: dict[str, str | int] = {"tool_call_id": tool_call_id}
    if verdict is not None:
        filters["verdict"] = verdict
    filters["limit"] = limit
    query = urllib.parse.urlencode(filters)
    answer = get_json(f"{endpoint.rstrip('/')}/api/v1/reports?{query}", timeout_s)
    reports: list[dict[str, Any]] = answer["reports"]
    return reports


def report_page(
    endpoint: str, filters: Sequence[tuple[str, str]], timeout_s: float = 10.0
) -> dict[str, Any]:
    """One page of ``GET /api/v1/reports``: ``reports``, ``total``, ``next_cursor``…;
    ``filters`` are (name, value) pairs, so a name may repeat (``verdict``)."""
    query = urllib.parse.urlencode(list(filters))
    answer: dict[str, Any] = get_json(f"{endpoint.rstrip('/')}/api/v1/reports?{query}", timeout_s)
    return answer
