"""A client of the collector's query API (``/api/v1``).

Standard library only (urllib), so the plain SDK install can read a collector's verdicts.
"""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from typing import Any


def read_key_headers() -> dict[str, str]:
    """The read key of ``CTXLEDGER_READ_KEY`` as a Bearer header (none when unset)."""
    key = os.environ.get("CTXLEDGER_READ_KEY", "").strip()
    return {"Authorization": f"Bearer {key}"} if key else {}


def get_json(url: str, timeout_s: float = 10.0) -> Any:
    request = urllib.request.Request(url, headers=read_key_headers())
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.load(response)


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
