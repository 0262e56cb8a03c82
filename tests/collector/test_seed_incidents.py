"""The demo's incidents, sent by the SDK to a live collector (SQLite and PostgreSQL),
get the verdicts the demo promises for each of their tool calls
(``demo.EXPECTED_VERDICTS``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import ctxledger
from ctxledger.verdicts import worst
from ctxledger_cli import demo
from tests.collector.live_collector import LiveCollector

#: What the seeds say each incident is (its worst call); the demo's table must keep
#: saying the same.
PINNED = {
    "seed_004_silent_loss": "silent",
    "seed_002_log_clip": "declared",
    "seed_000_first_rows": "unmarked",
    "seed_001_emergency_trim": "declared",
    "seed_001_naive_trim": "orphaned",
    "orphaned_call": "orphaned",
    "dropped_result": "dropped",
    "clean_journeys": "intact",
    "ollama_window": "dropped",
}


@pytest.fixture
def incidents_sent(collector: LiveCollector) -> Iterator[httpx.Client]:
    """Every incident measured by the SDK and exported to the collector over OTLP/HTTP."""
    client = ctxledger.configure(
        service_name="ctxledger-demo", endpoint=collector.url, ledger="off"
    )
    try:
        promised = demo.run_all_incidents()
        assert ctxledger.flush(), "the SDK could not export the incidents"
        stats = client.stats()
        assert stats.dropped == 0 and stats.spans_exported > 0, stats
        assert promised == demo.EXPECTED_VERDICTS
        with collector.client() as http:
            yield http
    finally:
        client.shutdown()
        ctxledger.configure(service_name="idle", export=False, ledger="off")


def _reports(http: httpx.Client, **params: Any) -> list[dict[str, Any]]:
    response = http.get("/api/v1/reports", params={**params, "limit": 1000})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["next_offset"] is None
    found: list[dict[str, Any]] = body["reports"]
    return found


def test_expected_verdicts_cover_the_seeds() -> None:
    assert {name: demo.incident_verdict(name) for name in demo.EXPECTED_VERDICTS} == PINNED
    call_ids = [call_id for calls in demo.EXPECTED_VERDICTS.values() for call_id in calls]
    assert len(set(call_ids)) == len(call_ids)


def test_each_call_of_each_incident_gets_its_verdict(incidents_sent: httpx.Client) -> None:
    http = incidents_sent
    traces: dict[str, str] = {}
    for incident, calls in demo.EXPECTED_VERDICTS.items():
        for call_id, expected in calls.items():
            journeys = _reports(http, tool_call_id=call_id)
            assert journeys, f"{incident}: no report for {call_id}"
            assert {r["tool_call_id"] for r in journeys} == {call_id}
            (trace_id,) = {r["trace_id"] for r in journeys}  # one incident, one trace
            assert traces.setdefault(incident, trace_id) == trace_id, incident
            verdicts = [r["verdict"] for r in journeys]
            assert worst(verdicts) == expected, (incident, call_id, verdicts)
            assert all(r["settled"] for r in journeys), (incident, call_id)
        # The incident's run has no journey of a call it does not expect.
        in_run = {r["tool_call_id"] for r in _reports(http, trace_id=traces[incident])}
        assert in_run == set(calls), incident
    assert len(set(traces.values())) == len(demo.EXPECTED_VERDICTS)

    runs = http.get("/api/v1/runs", params={"limit": 100}).json()
    assert runs["total"] == len(demo.EXPECTED_VERDICTS)
    worst_of_run = {r["trace_id"]: r["worst_verdict"] for r in runs["runs"]}
    assert {name: worst_of_run[trace] for name, trace in traces.items()} == PINNED


def _stage(report: dict[str, Any], name: str) -> dict[str, Any]:
    (stage,) = [s for s in report["stages"] if s["stage"] == name]
    return stage


def test_seed_004_loses_30_snippets_silently(incidents_sent: httpx.Client) -> None:
    (call_id,) = [
        c for c, v in demo.EXPECTED_VERDICTS["seed_004_silent_loss"].items() if v == "silent"
    ]
    lost = [f"kb-{i:03d}" for i in range(20, 50)]
    silent = [r for r in _reports(incidents_sent, tool_call_id=call_id) if r["verdict"] == "silent"]
    assert silent, "seed 004's search result is not reported silent"
    for report in silent:
        assert report["tool_name"] == "search_knowledge"
        assert report["agent_name"] == "kb-agent"
        assert report["lost_items"] == 30
        assert sorted(report["lost_item_ids"]) == lost
        stages = {s["stage"]: s for s in report["stages"]}
        assert [s["stage"] for s in report["stages"]] == [
            "original",
            "serialized",
            "assembled",
            "sent",
            "received",  # the stand-in reports what it read
        ]
        assert (stages["serialized"]["items"], stages["sent"]["items"]) == (50, 20)
        assert not stages["sent"]["declared"] and not stages["sent"]["marker"]


def test_declared_unmarked_dropped_and_orphaned_details(incidents_sent: httpx.Client) -> None:
    http = incidents_sent

    def journeys(incident: str, verdict: str) -> list[dict[str, Any]]:
        (call_id,) = [c for c, v in demo.EXPECTED_VERDICTS[incident].items() if v == verdict]
        return [r for r in _reports(http, tool_call_id=call_id) if r["verdict"] == verdict]

    (log,) = journeys("seed_002_log_clip", "declared")
    assert log["lost_items"] > 0 and _stage(log, "sent")["marker"]  # the model sees a marker
    assert log["agent_name"] == "log-agent" and log["tool_name"] == "read_log"
    (orders,) = journeys("seed_000_first_rows", "unmarked")
    assert orders["lost_items"] > 0 and orders["lost_item_ids"]
    assert any(s["declared"] for s in orders["stages"])  # declared in telemetry...
    assert not any(s["marker"] for s in orders["stages"])  # ...but invisible to the model
    (trim,) = journeys("seed_001_emergency_trim", "declared")
    assert "emergency_trim" in _stage(trim, "sent")["markers_found"]
    # Seed 001's naive trim: the oldest result deleted, its call kept (a call without its
    # result), which the provider refuses.
    (naive,) = journeys("seed_001_naive_trim", "orphaned")
    assert naive["agent_name"] == "sre-agent" and naive["tool_name"] == "grep_logs"
    naive_run = http.get(naive["links"]["run"]).json()
    assert [
        request["manifest"]["calls_without_result"]
        for step in naive_run["steps"]
        for request in step["requests"]
        if request["request_id"] == naive["request_id"]
    ] == [[naive["tool_call_id"]]]
    (dropped,) = journeys("dropped_result", "dropped")
    assert any("missing from request" in note for note in dropped["notes"])
    # LangGraph's trim_messages(strategy="last"): one request, a result without its call
    # (orphaned) and a result gone with its call (dropped).
    (orphan,) = journeys("orphaned_call", "orphaned")
    (trimmed_away,) = journeys("orphaned_call", "dropped")
    assert orphan["agent_name"] == trimmed_away["agent_name"] == "langgraph-trim-agent"
    assert orphan["request_id"] == trimmed_away["request_id"]
    assert any("without its call" in note for note in orphan["notes"])
    assert any("missing from request" in note for note in trimmed_away["notes"])
    run = http.get(orphan["links"]["run"]).json()
    manifests = [
        request["manifest"]
        for step in run["steps"]
        for request in step["requests"]
        if request["request_id"] == orphan["request_id"]
    ]
    assert [m["results_without_call"] for m in manifests] == [[orphan["tool_call_id"]]]
    assert [m["calls_without_result"] for m in manifests] == [[]]
