"""Claude Code's llm_request span requests are left off a run only where its request
bodies show every one of them; a span with a journey, or one too many, stays."""

from __future__ import annotations

from typing import Any

from ctxledger_dashboard.runtime_requests import shown_by_bodies, without


def _request(request_id: str, source: str = "claude_code", journeys: int = 0) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "manifest": {"source": source},
        "journeys": [{"verdict": "intact"}] * journeys,
    }


def _run(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"steps": [{"step": None, "requests": list(requests)}]}


def test_span_requests_the_bodies_show_are_left_off() -> None:
    run = _run(_request("llm_request:aa"), _request("llm_request:bb"),
               _request("rb-1"), _request("rb-2", journeys=1))  # fmt: skip
    hidden = shown_by_bodies(run)
    assert hidden == {"llm_request:aa", "llm_request:bb"}
    assert [r["request_id"] for r in without(run["steps"][0], hidden)["requests"]] == [
        "rb-1",
        "rb-2",
    ]


def test_spans_without_a_body_each_stay() -> None:
    fewer = _run(_request("llm_request:aa"), _request("llm_request:bb"), _request("rb-1"))
    assert shown_by_bodies(fewer) == set()
    other_source = _run(_request("llm_request:aa"), _request("r", source="genai"))
    assert shown_by_bodies(other_source) == set()
    judged = _run(_request("llm_request:aa", journeys=1), _request("rb-1"))
    assert shown_by_bodies(judged) == set()
