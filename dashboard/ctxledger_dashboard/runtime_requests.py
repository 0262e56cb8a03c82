"""Requests a runtime reports twice. Claude Code's ``llm_request`` spans never show the
messages; its request bodies (log events) show the same requests whole. Where a run has
a body for every such span, listing the spans too would say "not auditable" of requests
that were audited: they are left out, and the page says so once."""

from __future__ import annotations

from typing import Any

from ctxledger import semconv as sc


def _requests(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for step in run["steps"] for r in step["requests"] if r["manifest"] is not None]


def _span_request(request: dict[str, Any]) -> bool:
    return str(request["request_id"]).startswith(sc.CLAUDE_CODE_SPAN_REQUEST_PREFIX)


def shown_by_bodies(run: dict[str, Any]) -> set[str]:
    """The ids of the run's Claude Code span requests its request bodies show (none where
    the bodies are fewer than the spans: then each span may be a request not seen)."""
    requests = _requests(run)
    spans = [r for r in requests if _span_request(r)]
    bodies = [
        r
        for r in requests
        if r["manifest"].get("source") == sc.SOURCE_CLAUDE_CODE and not _span_request(r)
    ]
    if not spans or len(bodies) < len(spans):
        return set()
    return {r["request_id"] for r in spans if not r["journeys"]}


def without(step: dict[str, Any], hidden: set[str]) -> dict[str, Any]:
    """The step without the requests ``hidden`` names."""
    return {**step, "requests": [r for r in step["requests"] if r["request_id"] not in hidden]}
