"""The query API (contract section 5) against a live collector, on SQLite and PostgreSQL.

Data goes in the way users send it: the ctxledger SDK measures a few scripted agent
runs and its real OTLP exporter posts them to the collector. Three runs are seeded:

* run A, agent ``agent-a`` of service ``svc-alpha``: a search result silently cut from
  10 records to 4 (two requests carry it), an intact lookup, and an assistant tool call
  ``a-ghost`` that the last request carries without its result (orphaned);
* run B, agent ``agent-b`` of service ``svc-beta``: a log clipped with a visible marker
  (declared) and an intact document;
* run C, no agent name, service ``svc-beta``: one intact document.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

import ctxledger
from ctxledger._client import Client
from ctxledger.verdicts import VERDICT_SEVERITY
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector
from tests.tiktoken_reference import reference_count

MODEL = "ctxl-test-model"
CONTEXT_WINDOW = 50_000
PIPELINE = ["original", "serialized", "assembled", "sent"]
SEARCH_ROWS = [{"id": f"r{i}", "title": f"result number {i}", "body": "x" * 40} for i in range(10)]
KEPT_ROWS = 4
LOG_LINES = [
    f"2026-03-14 03:11:{i % 60:02d} INFO worker-{i % 4} handled request {i}" for i in range(100)
]
LOG_HEAD = 20

Configure = Callable[..., Client]


@pytest.fixture
def configure_sdk() -> Iterator[Configure]:
    """``configure_sdk(service_name, endpoint)``: a process-wide SDK client exporting over
    OTLP/HTTP; every client made is shut down at the end of the test (before the collector
    it exports to stops), and an inert client is left for whatever runs next."""
    clients: list[Client] = []

    def configure(service_name: str, endpoint: str, **kwargs: Any) -> Client:
        kwargs.setdefault("context_windows", {MODEL: CONTEXT_WINDOW})
        client = ctxledger.configure(
            service_name=service_name, endpoint=endpoint, ledger="off", **kwargs
        )
        clients.append(client)
        return client

    yield configure
    for client in clients:
        client.shutdown()
    ctxledger.configure(service_name="idle", export=False, ledger="off")


# --- the scripted runs ---------------------------------------------------------------


def _call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _assistant(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def _tool(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def send(messages: list[dict[str, Any]]) -> str | None:
    """One LLM request: ``assembled`` from the messages, ``sent`` + manifest from the body."""
    ctxledger.measure_messages(messages, model=MODEL)
    body = json.dumps({"model": MODEL, "messages": messages}).encode()
    return ctxledger.measure_request(body, model=MODEL)


def tool_result(call_id: str, name: str, value: Any) -> str:
    """A tool ran: its ``original`` value and the ``serialized`` text it returns."""
    text = value if isinstance(value, str) else json.dumps(value)
    ctxledger.measure("original", value, tool_call_id=call_id, tool_name=name)
    ctxledger.measure("serialized", text, tool_call_id=call_id, tool_name=name)
    return text


def clipped_log() -> str:
    rest = len(LOG_LINES) - LOG_HEAD
    return "\n".join([*LOG_LINES[:LOG_HEAD], f"[... {rest} more lines omitted]"])


def seed_run_a() -> None:
    with ctxledger.run("agent-a"):
        messages = [{"role": "user", "content": "find the refund policy and order A-1"}]
        send(messages)  # step 1: the model asks for a search
        tool_result("a-search", "search", SEARCH_ROWS)
        messages += [
            _assistant(_call("a-search", "search")),
            _tool("a-search", json.dumps(SEARCH_ROWS[:KEPT_ROWS])),  # silently cut
        ]
        send(messages)  # step 2: 10 records in, 4 out
        lookup = tool_result("a-lookup", "lookup", {"id": "A-1", "status": "shipped"})
        messages += [
            _assistant(_call("a-lookup", "lookup"), _call("a-ghost", "lookup")),
            _tool("a-lookup", lookup),  # a-ghost's result never comes
        ]
        send(messages)  # step 3


def seed_run_b() -> None:
    with ctxledger.run("agent-b"):
        messages = [{"role": "user", "content": "why did the worker crash?"}]
        send(messages)
        tool_result("b-log", "read_log", "\n".join(LOG_LINES))
        doc = tool_result("b-doc", "fetch_doc", "The worker restarts after 3 failures.")
        messages += [
            _assistant(_call("b-log", "read_log"), _call("b-doc", "fetch_doc")),
            _tool("b-log", clipped_log()),
            _tool("b-doc", doc),
        ]
        send(messages)


def seed_run_c() -> None:
    with ctxledger.run():
        messages = [{"role": "user", "content": "what is the SLA?"}]
        send(messages)
        doc = tool_result("c-doc", "fetch_doc", "The SLA is 99.9% per calendar month.")
        messages += [_assistant(_call("c-doc", "fetch_doc")), _tool("c-doc", doc)]
        send(messages)


def seed(configure: Configure, url: str) -> list[Client]:
    """Run A from service svc-alpha, then runs B and C from service svc-beta."""
    alpha = configure("svc-alpha", url)
    seed_run_a()
    assert ctxledger.flush(), "the SDK could not export run A"
    beta = configure("svc-beta", url)
    seed_run_b()
    seed_run_c()
    assert ctxledger.flush(), "the SDK could not export runs B and C"
    for client in (alpha, beta):
        stats = client.stats()
        assert stats.dropped == 0 and stats.spans_exported > 0, stats
    return [alpha, beta]


# --- reading the API -----------------------------------------------------------------


@dataclass
class Seeded:
    http: httpx.Client
    traces: dict[str, str]  # run name (A, B, C) -> trace id


@pytest.fixture
def seeded(collector: LiveCollector, configure_sdk: Configure) -> Iterator[Seeded]:
    seed(configure_sdk, collector.url)
    with collector.client() as http:
        yield Seeded(http, _trace_ids(http))


def _get(http: httpx.Client, path: str, params: Any = None) -> dict[str, Any]:
    response = http.get(path, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def reports(http: httpx.Client, params: Any = None) -> list[dict[str, Any]]:
    """Every report matching ``params`` (one big page, checked to be the only one)."""
    items = list(params.items() if isinstance(params, dict) else params or ())
    body = _get(http, "/api/v1/reports", [*items, ("limit", 1000)])
    assert body["next_offset"] is None
    assert body["total"] == len(body["reports"])
    found: list[dict[str, Any]] = body["reports"]
    return found


def _trace_ids(http: httpx.Client) -> dict[str, str]:
    by_call = {r["tool_call_id"]: r["trace_id"] for r in reports(http)}
    return {"A": by_call["a-search"], "B": by_call["b-log"], "C": by_call["c-doc"]}


def keys(found: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(r["trace_id"], r["tool_call_id"], r["request_id"]) for r in found]


def calls(found: list[dict[str, Any]]) -> list[str]:
    return sorted(r["tool_call_id"] for r in found)


def count_tokens(text: str, tokenizer: str) -> int:
    return reference_count(text, tokenizer)


# --- /api/v1/reports -----------------------------------------------------------------


def test_every_journey_is_reported_with_its_verdict(seeded: Seeded) -> None:
    found = reports(seeded.http)
    verdicts = {(r["tool_call_id"], r["request_id"] is not None): r["verdict"] for r in found}
    assert sorted(verdicts.items()) == [
        (("a-ghost", True), "orphaned"),
        (("a-lookup", True), "intact"),
        (("a-search", True), "silent"),
        (("b-doc", True), "intact"),
        (("b-log", True), "declared"),
        (("c-doc", True), "intact"),
    ]
    assert calls(found) == [
        "a-ghost",
        "a-lookup",
        "a-search",
        "a-search",
        "b-doc",
        "b-log",
        "c-doc",
    ]
    assert len(set(keys(found))) == len(found)
    by_call = {r["tool_call_id"]: r for r in found}
    assert {c: by_call[c]["tool_name"] for c in by_call} == {
        "a-ghost": None,  # a call without a result has never been measured
        "a-lookup": "lookup",
        "a-search": "search",
        "b-doc": "fetch_doc",
        "b-log": "read_log",
        "c-doc": "fetch_doc",
    }
    assert {r["trace_id"] for r in found} == set(seeded.traces.values())
    assert len(set(seeded.traces.values())) == 3  # one trace per run


def test_report_stages_sizes_and_lost_item_ids(seeded: Seeded) -> None:
    search = reports(seeded.http, {"tool_call_id": "a-search"})
    assert len(search) == 2 and len({r["request_id"] for r in search}) == 2
    serialized = json.dumps(SEARCH_ROWS)
    kept = json.dumps(SEARCH_ROWS[:KEPT_ROWS])
    lost_ids = [row["id"] for row in SEARCH_ROWS[KEPT_ROWS:]]
    for report in search:
        assert report["verdict"] == "silent"
        assert report["trace_id"] == seeded.traces["A"]
        assert report["request_id"].startswith("req-")
        assert report["lost_item_ids"] == lost_ids
        assert report["lost_items"] == len(lost_ids)
        stages = report["stages"]
        assert [s["stage"] for s in stages] == PIPELINE
        assert [s["order"] for s in stages] == sorted(s["order"] for s in stages)
        assert [s["items"] for s in stages] == [10, 10, KEPT_ROWS, KEPT_ROWS]
        texts = [serialized, serialized, kept, kept]
        assert [s["chars"] for s in stages] == [len(t) for t in texts]
        assert [s["tokens"] for s in stages] == [
            count_tokens(t, s["tokenizer"]) for t, s in zip(texts, stages, strict=True)
        ]
        assert [s["request_id"] for s in stages] == [None, None, *[report["request_id"]] * 2]
        assert report["links"]["run"] == f"/api/v1/runs/{report['trace_id']}"
        assert "dashboard" not in report["links"]

    (log,) = reports(seeded.http, {"tool_call_id": "b-log"})
    assert log["verdict"] == "declared"
    assert [s["stage"] for s in log["stages"]] == PIPELINE
    assert [s["items"] for s in log["stages"]] == [100, 100, LOG_HEAD + 1, LOG_HEAD + 1]
    assert log["stages"][-1]["chars"] == len(clipped_log())
    assert log["lost_items"] > 0 and log["lost_item_ids"] == []  # lines carry no ids

    (ghost,) = reports(seeded.http, {"tool_call_id": "a-ghost"})
    assert ghost["stages"] == [] and ghost["step"] == 3
    (intact,) = reports(seeded.http, {"tool_call_id": "c-doc"})
    assert intact["lost_item_ids"] == [] and intact["lost_items"] == 0
    assert len({s["chars"] for s in intact["stages"]}) == 1


def test_report_filters(seeded: Seeded) -> None:
    http, traces = seeded.http, seeded.traces
    run_a = reports(http, {"trace_id": traces["A"]})
    assert calls(run_a) == ["a-ghost", "a-lookup", "a-search", "a-search"]
    # One run comes in pipeline order: by step, then request.
    assert [r["step"] for r in run_a] == [2, 3, 3, 3]
    order = [(r["step"], r["request_id"], r["tool_call_id"]) for r in run_a]
    assert order == sorted(order)
    assert calls(reports(http, {"trace_id": traces["C"]})) == ["c-doc"]
    assert reports(http, {"trace_id": "0" * 32}) == []

    assert calls(reports(http, [("verdict", "silent")])) == ["a-search", "a-search"]
    assert calls(reports(http, [("verdict", "silent"), ("verdict", "orphaned")])) == [
        "a-ghost",
        "a-search",
        "a-search",
    ]
    assert calls(reports(http, [("verdict", "intact"), ("verdict", "declared")])) == [
        "a-lookup",
        "b-doc",
        "b-log",
        "c-doc",
    ]
    assert reports(http, [("verdict", "dropped")]) == []

    assert calls(reports(http, {"agent": "agent-a"})) == [
        "a-ghost",
        "a-lookup",
        "a-search",
        "a-search",
    ]
    assert calls(reports(http, {"agent": "agent-b"})) == ["b-doc", "b-log"]
    assert reports(http, {"agent": "nobody"}) == []
    assert calls(reports(http, {"tool": "fetch_doc"})) == ["b-doc", "c-doc"]
    assert calls(reports(http, {"tool": "search"})) == ["a-search", "a-search"]
    assert calls(reports(http, {"tool_call_id": "a-lookup"})) == ["a-lookup"]
    assert reports(http, {"tool_call_id": "nope"}) == []

    combined = reports(http, [("trace_id", traces["A"]), ("verdict", "intact")])
    assert calls(combined) == ["a-lookup"]
    combined = reports(http, [("tool", "fetch_doc"), ("agent", "agent-b")])
    assert calls(combined) == ["b-doc"]


def test_since_and_until_filter_on_the_last_observation(seeded: Seeded) -> None:
    everything = reports(seeded.http)
    times = sorted({r["last_observed_at"] for r in everything})
    assert len(times) >= 3
    for at in times[1:]:
        since = reports(seeded.http, {"since": repr(at)})
        until = reports(seeded.http, {"until": repr(at)})
        assert sorted(keys(since)) == sorted(
            keys([r for r in everything if r["last_observed_at"] >= at])
        )
        assert sorted(keys(until)) == sorted(
            keys([r for r in everything if r["last_observed_at"] < at])
        )
        assert sorted(keys(since) + keys(until)) == sorted(keys(everything))
    window = reports(seeded.http, {"since": repr(times[1]), "until": repr(times[-1])})
    assert sorted(keys(window)) == sorted(
        keys([r for r in everything if times[1] <= r["last_observed_at"] < times[-1]])
    )
    # Run A was measured before runs B and C, so a cut between them separates the runs.
    run_a_last = max(
        r["last_observed_at"] for r in everything if r["trace_id"] == seeded.traces["A"]
    )
    later = reports(seeded.http, {"since": repr(run_a_last + 1e-6)})
    assert {r["trace_id"] for r in later} == {seeded.traces["B"], seeded.traces["C"]}


def test_report_pagination(seeded: Seeded) -> None:
    everything = keys(reports(seeded.http))
    for limit in (1, 2, 3):
        pages: list[tuple[str, str, str | None]] = []
        offset: int | None = 0
        while offset is not None:
            body = _get(seeded.http, "/api/v1/reports", {"limit": limit, "offset": offset})
            assert body["total"] == len(everything)
            assert 0 < len(body["reports"]) <= limit
            pages += keys(body["reports"])
            after = offset + len(body["reports"])
            assert body["next_offset"] == (after if after < len(everything) else None)
            offset = body["next_offset"]
        assert pages == everything  # same order, no duplicates, nothing skipped
        assert len(set(pages)) == len(pages)
    past_the_end = _get(seeded.http, "/api/v1/reports", {"offset": len(everything)})
    assert past_the_end == {
        "reports": [],
        "total": len(everything),
        "next_offset": None,
        "next_cursor": None,
    }
    # Pagination composes with filters: one run, one journey at a time, pipeline order.
    trace_a = seeded.traces["A"]
    first = _get(seeded.http, "/api/v1/reports", {"trace_id": trace_a, "limit": 3})
    rest = _get(seeded.http, "/api/v1/reports", {"trace_id": trace_a, "offset": 3})
    assert (first["total"], first["next_offset"], rest["next_offset"]) == (4, 3, None)
    assert keys(first["reports"] + rest["reports"]) == keys(
        reports(seeded.http, {"trace_id": trace_a})
    )


def _by_cursor(http: Any, path: str, items: str, params: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    body = _get(http, path, params)
    while True:
        found += body[items]
        assert body["next_offset"] is None or "after" not in params
        if body["next_cursor"] is None:
            return found
        params = {**params, "after": body["next_cursor"]}
        body = _get(http, path, params)


def test_report_pagination_by_cursor(seeded: Seeded) -> None:
    everything = keys(reports(seeded.http))
    for limit in (1, 2, 3):
        paged = _by_cursor(seeded.http, "/api/v1/reports", "reports", {"limit": limit})
        assert keys(paged) == everything  # the offset order, each report once
    trace_a = seeded.traces["A"]
    in_run = _by_cursor(
        seeded.http, "/api/v1/reports", "reports", {"trace_id": trace_a, "limit": 1}
    )
    assert keys(in_run) == keys(reports(seeded.http, {"trace_id": trace_a}))
    losing = _by_cursor(
        seeded.http, "/api/v1/reports", "reports", {"verdict": ["silent", "orphaned"], "limit": 1}
    )
    assert keys(losing) == keys(
        reports(seeded.http, [("verdict", "silent"), ("verdict", "orphaned")])
    )


def test_run_pagination_by_cursor(seeded: Seeded) -> None:
    everything = [r["trace_id"] for r in _get(seeded.http, "/api/v1/runs")["runs"]]
    for limit in (1, 2):
        paged = _by_cursor(seeded.http, "/api/v1/runs", "runs", {"limit": limit})
        assert [r["trace_id"] for r in paged] == everything


def test_bad_cursors_get_422(seeded: Seeded) -> None:
    page = _get(seeded.http, "/api/v1/reports", {"limit": 1})
    run_page = _get(seeded.http, "/api/v1/runs", {"limit": 1})
    in_run = _get(seeded.http, "/api/v1/reports", {"trace_id": seeded.traces["A"], "limit": 1})
    bad = [
        ("/api/v1/reports", {"after": "not a cursor"}),
        ("/api/v1/reports", {"after": "W10"}),  # [] in base64
        ("/api/v1/reports", {"after": run_page["next_cursor"]}),  # another list's
        ("/api/v1/reports", {"after": in_run["next_cursor"]}),  # another order's
        ("/api/v1/reports", {"after": page["next_cursor"], "offset": 1}),  # both
        ("/api/v1/runs", {"after": page["next_cursor"]}),
    ]
    for path, params in bad:
        response = seeded.http.get(path, params=params)
        assert response.status_code == 422, (path, params, response.text)


BAD_REPORT_QUERIES: list[Any] = [
    {"trace_id": "xyz"},
    {"trace_id": "0" * 31},
    {"trace_id": "G" * 32},
    {"verdict": "lost"},
    [("verdict", "silent"), ("verdict", "vanished")],
    {"limit": 0},
    {"offset": -1},
    {"since": "yesterday"},
]


def test_bad_report_queries_get_422(seeded: Seeded) -> None:
    for params in BAD_REPORT_QUERIES:
        response = seeded.http.get("/api/v1/reports", params=params)
        assert response.status_code == 422, (params, response.text)
    detail = seeded.http.get("/api/v1/reports", params={"verdict": "lost"}).json()["detail"]
    assert "lost" in detail and "silent" in detail  # says what is wrong and what is known


def test_links_run_resolves_to_the_run(seeded: Seeded) -> None:
    for report in reports(seeded.http):
        run = _get(seeded.http, report["links"]["run"])
        assert run["trace_id"] == report["trace_id"]
        journeys = [
            (j["tool_call_id"], j["request_id"])
            for step in run["steps"]
            for request in step["requests"]
            for j in request["journeys"]
        ]
        assert (report["tool_call_id"], report["request_id"]) in journeys


def test_reports_agent_filter_agrees_with_runs(seeded: Seeded) -> None:
    runs = _get(seeded.http, "/api/v1/runs", {"agent": "svc-beta"})["runs"]
    assert {r["trace_id"] for r in runs} == {seeded.traces["B"], seeded.traces["C"]}
    found = reports(seeded.http, {"agent": "svc-beta"})
    assert {r["trace_id"] for r in found} == {seeded.traces["B"], seeded.traces["C"]}


# --- /api/v1/runs --------------------------------------------------------------------


def test_runs_with_verdict_counts_and_filters(seeded: Seeded) -> None:
    http, traces = seeded.http, seeded.traces
    body = _get(http, "/api/v1/runs")
    assert body["total"] == 3 and body["next_offset"] is None
    runs = {r["trace_id"]: r for r in body["runs"]}
    run_a, run_b, run_c = runs[traces["A"]], runs[traces["B"]], runs[traces["C"]]
    assert run_a["verdicts"] == {"silent": 2, "intact": 1, "orphaned": 1}
    assert run_a["worst_verdict"] == "orphaned" and run_a["journeys"] == 4
    assert run_b["verdicts"] == {"declared": 1, "intact": 1}
    assert run_b["worst_verdict"] == "declared" and run_b["journeys"] == 2
    assert run_c["verdicts"] == {"intact": 1} and run_c["worst_verdict"] == "intact"
    for run in body["runs"]:
        assert run["worst_verdict"] == max(run["verdicts"], key=VERDICT_SEVERITY.__getitem__)
        assert run["first_seen"] <= run["last_seen"]
        assert run["links"]["run"] == f"/api/v1/runs/{run['trace_id']}"
    assert (run_a["service_name"], run_a["agent_name"]) == ("svc-alpha", "agent-a")
    assert (run_b["service_name"], run_b["agent_name"]) == ("svc-beta", "agent-b")
    assert (run_c["service_name"], run_c["agent_name"]) == ("svc-beta", "svc-beta")
    # Most recent first: the runs were measured A, B, C.
    assert [r["trace_id"] for r in body["runs"]] == [traces["C"], traces["B"], traces["A"]]

    def listed(params: Any) -> set[str]:
        return {r["trace_id"] for r in _get(http, "/api/v1/runs", params)["runs"]}

    assert listed({"agent": "agent-a"}) == {traces["A"]}
    assert listed({"agent": "svc-alpha"}) == {traces["A"]}
    assert listed({"agent": "svc-beta"}) == {traces["B"], traces["C"]}
    assert listed({"agent": "nobody"}) == set()
    assert listed({"verdict": "orphaned"}) == {traces["A"]}
    assert listed({"verdict": "declared"}) == {traces["B"]}
    assert listed({"verdict": "intact"}) == set(traces.values())
    assert listed({"verdict": "dropped"}) == set()
    assert listed([("verdict", "declared"), ("verdict", "orphaned")]) == {traces["A"], traces["B"]}
    # a-search cut at step 2 and re-sent cut at step 3 is one lost result; a-ghost the other.
    assert run_a["lost_results"] == 2 and run_b["lost_results"] == 0
    assert listed({"agent": "svc-beta", "verdict": "declared"}) == {traces["B"]}
    assert listed({"since": repr(run_b["last_seen"])}) == {traces["B"], traces["C"]}
    assert listed({"until": repr(run_b["last_seen"])}) == {traces["A"]}
    assert http.get("/api/v1/runs", params={"verdict": "lost"}).status_code == 422

    pages: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = _get(http, "/api/v1/runs", {"limit": 2, "offset": offset})
        assert page["total"] == 3
        pages += [r["trace_id"] for r in page["runs"]]
        offset = page["next_offset"]
    assert pages == [r["trace_id"] for r in body["runs"]]


def test_run_detail_steps_requests_manifests_and_journeys(seeded: Seeded) -> None:
    http, traces = seeded.http, seeded.traces
    run = _get(http, f"/api/v1/runs/{traces['A']}")
    assert run["trace_id"] == traces["A"] and run["agent_name"] == "agent-a"
    assert run["verdicts"] == {"silent": 2, "intact": 1, "orphaned": 1}
    assert run["worst_verdict"] == "orphaned"
    assert [s["step"] for s in run["steps"]] == [1, 2, 3]
    assert [s["verdict"] for s in run["steps"]] == ["intact", "silent", "orphaned"]
    for step in run["steps"]:
        assert len(step["requests"]) == 1  # one LLM request per step in this agent
    step1, step2, step3 = (s["requests"][0] for s in run["steps"])

    for request in (step1, step2, step3):
        manifest = request["manifest"]
        assert manifest["request_id"] == request["request_id"]
        assert manifest["model"] == MODEL
        assert manifest["context_window"] == CONTEXT_WINDOW
        assert manifest["tokens"] > 0
        assert manifest["window_used"] == round(manifest["tokens"] / CONTEXT_WINDOW, 4)
    assert step1["manifest"]["tokens"] < step2["manifest"]["tokens"] < step3["manifest"]["tokens"]
    assert step1["journeys"] == [] and step1["manifest"]["tool_call_ids"] == []
    assert step2["manifest"]["tool_call_ids"] == ["a-search"]
    assert step2["manifest"]["calls_without_result"] == []
    assert [(j["tool_call_id"], j["verdict"]) for j in step2["journeys"]] == [
        ("a-search", "silent")
    ]

    manifest3 = step3["manifest"]
    assert sorted(manifest3["tool_call_ids"]) == ["a-lookup", "a-search"]
    assert sorted(manifest3["tool_calls"]) == ["a-ghost", "a-lookup", "a-search"]
    assert manifest3["calls_without_result"] == ["a-ghost"]
    assert manifest3["results_without_call"] == []
    assert [(j["tool_call_id"], j["verdict"]) for j in step3["journeys"]] == [
        ("a-ghost", "orphaned"),
        ("a-lookup", "intact"),
        ("a-search", "silent"),
    ]
    # The journeys of the detail are the reports of the list.
    listed = {
        (r["tool_call_id"], r["request_id"]): r for r in reports(http, {"trace_id": traces["A"]})
    }
    for request in (step2, step3):
        for journey in request["journeys"]:
            assert journey["request_id"] == request["request_id"]
            assert journey == listed[(journey["tool_call_id"], journey["request_id"])]

    run_b = _get(http, f"/api/v1/runs/{traces['B']}")
    assert [s["step"] for s in run_b["steps"]] == [1, 2]
    (request,) = run_b["steps"][1]["requests"]
    assert sorted(request["manifest"]["tool_call_ids"]) == ["b-doc", "b-log"]
    assert [(j["tool_call_id"], j["verdict"]) for j in request["journeys"]] == [
        ("b-doc", "intact"),
        ("b-log", "declared"),
    ]


def test_unknown_or_malformed_run_ids(seeded: Seeded) -> None:
    assert seeded.http.get(f"/api/v1/runs/{'0' * 32}").status_code == 404
    assert seeded.http.get(f"/api/v1/runs/{'f' * 32}").status_code == 404
    assert seeded.http.get("/api/v1/runs/not-a-trace").status_code == 422
    # Upper-case hex is the same trace id: accepted, and answered in lower case.
    upper = seeded.traces["A"].upper()
    assert _get(seeded.http, f"/api/v1/runs/{upper}")["trace_id"] == seeded.traces["A"]
    found = reports(seeded.http, {"trace_id": upper})
    assert found and {r["trace_id"] for r in found} == {seeded.traces["A"]}


# --- deep links into the dashboard ---------------------------------------------------


def _query(url: str, path: str = "/run") -> dict[str, list[str]]:
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == ("http", "dash:8501", path)
    return parse_qs(parts.query)


def test_dashboard_links(database_url: str, configure_sdk: Configure, tmp_path: Path) -> None:
    settings = Settings(
        database_url=database_url,
        auto_migrate=True,
        sweep_interval_s=3600.0,
        dashboard_url="http://dash:8501",
    )
    with LiveCollector(settings) as live, live.client() as http:
        clients = seed(configure_sdk, live.url)
        found = reports(http)
        assert len(found) == 7
        assert any(report["still_missing"] for report in found)
        for report in found:
            query = _query(report["links"]["dashboard"])
            # A result still missing links to the step where it was first lost.
            step = report["first_lost_step"] if report["still_missing"] else report["step"]
            assert query == {
                "trace_id": [report["trace_id"]],
                "step": [str(step)],
                "tool_call_id": [report["tool_call_id"]],
            }
            if report["still_missing"]:
                assert report["first_lost_step"] < report["step"]
            assert report["links"]["run"] == f"/api/v1/runs/{report['trace_id']}"
        for run in _get(http, "/api/v1/runs")["runs"]:
            assert _query(run["links"]["dashboard"]) == {"trace_id": [run["trace_id"]]}
            detail = _get(http, run["links"]["run"])
            assert _query(detail["links"]["dashboard"]) == {"trace_id": [run["trace_id"]]}
            for step in detail["steps"]:
                assert _query(step["links"]["dashboard"]) == {
                    "trace_id": [run["trace_id"]],
                    "step": [str(step["step"])],
                }
        for client in clients:  # while the collector still listens
            client.shutdown()
