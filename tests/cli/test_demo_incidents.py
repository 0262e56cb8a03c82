"""The demo's incidents: each of their tool calls gets exactly its verdict.

Judged twice: by the local ledger (what it announced while the run went on), and as
the collector will judge them (``judge_trace`` over the spans the SDK emitted).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ctxledger
from ctxledger.verdicts import Manifest, Measurement, Report, judge_trace, layer_name, worst
from ctxledger.verdicts.received_stages import received_measurements
from ctxledger.wire import (
    is_manifest,
    is_measurement,
    manifest_from_attributes,
    measurement_from_attributes,
)
from ctxledger.wire_received import is_received, received_from_attributes
from ctxledger_cli import demo
from ctxledger_cli.agents import openai_agents_log
from ctxledger_cli.demo import (
    dropped_result,
    framework_agents,
    real_agents,
    seed_000_first_rows,
    seed_001_context_overflow,
    seed_002_log_clip,
)


@pytest.fixture
def ledger(tmp_path: Path):
    path = tmp_path / "ledger.txt"
    client = ctxledger.configure(service_name="t", export=False, ledger=str(path))
    yield client, path
    client.shutdown()


def _run(name: str, ledger) -> tuple[list[Report], list[str]]:
    client, path = ledger
    demo.INCIDENTS[name]()
    ctxledger.flush()
    return list(client.ledger.reports), path.read_text(encoding="utf-8").splitlines()


def _only(reports: list[Report], call_id: str) -> Report:
    """The one announced loss of ``call_id`` in the request where it happened."""
    mine = [r for r in reports if r.tool_call_id == call_id]
    assert len(mine) == 1, mine
    return mine[0]


def test_expectations_name_every_incident_and_ids_are_unique():
    assert set(demo.EXPECTED_VERDICTS) == set(demo.INCIDENTS) == set(demo.INCIDENT_CALL_IDS)
    all_ids = [cid for ids in demo.INCIDENT_CALL_IDS.values() for cid in ids]
    assert len(all_ids) == len(set(all_ids)), all_ids
    for name, calls in demo.EXPECTED_VERDICTS.items():
        assert tuple(calls) == demo.INCIDENT_CALL_IDS[name]
        assert set(calls.values()) <= {
            "intact", "declared", "unmarked", "silent", "dropped", "orphaned"
        }  # fmt: skip


def test_run_all_incidents_returns_the_expected_verdicts(ledger):
    assert demo.skipped_incidents() == {}  # the dev install has every framework
    assert demo.run_all_incidents() == demo.EXPECTED_VERDICTS
    assert {name: demo.incident_verdict(name) for name in demo.INCIDENTS} == {
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
    assert demo.EXPECTED_VERDICTS["orphaned_call"] == {
        "call_orders_orphan": "dropped",
        "call_customer_orphan": "orphaned",
    }


@pytest.mark.parametrize("name", list(demo.EXPECTED_VERDICTS))
def test_incident_gets_exactly_its_verdicts_in_the_ledger(name, ledger):
    expected = demo.EXPECTED_VERDICTS[name]
    losing = {cid: verdict for cid, verdict in expected.items() if verdict != "intact"}
    reports, lines = _run(name, ledger)
    assert {r.tool_call_id: r.verdict for r in reports} == losing, reports
    assert len({r.trace_id for r in reports}) <= 1
    losses = [line for line in lines if " LOSS " in line]
    assert len(losses) == len(reports)
    for cid in demo.INCIDENT_CALL_IDS[name]:
        assert any(f"[{cid}] original" in line for line in lines), cid
        if cid not in losing:
            # It reached the model, and no loss was ever announced for it.
            assert any(f"[{cid}] sent" in line for line in lines), cid
            assert not any(f"[{cid}]" in line for line in losses), cid


def test_ollama_window_drops_the_orders_at_the_model_server(ledger):
    reports, lines = _run("ollama_window", ledger)
    orders_call, invoice_call = real_agents.WINDOW_CALL_IDS
    dropped = _only(reports, orders_call)
    assert (dropped.verdict, dropped.tool_name) == ("dropped", "query_orders")
    assert layer_name(dropped.layer) == "model_server"
    [lost] = [t for t in dropped.transitions if t.lost]
    assert (lost.from_stage, lost.to_stage) == ("sent", "received")
    # The request left whole: the orders result was sent, then not read.
    assert any(f"[{orders_call}] sent" in line for line in lines)
    # The invoice was read: the ledger says so, and announces no loss for it.
    assert any(f"[{invoice_call}] received" in line and "server=kept" in line for line in lines)
    assert {r.tool_call_id for r in reports} == {orders_call}


def test_seed_002_clip_keeps_head_tail_and_a_marker():
    text = seed_002_log_clip.pay_service_log()
    lines = text.splitlines()
    assert len(lines) == 500 and "IllegalStateException" in lines[-11]
    clipped = openai_agents_log.clip_head_tail(text).splitlines()
    assert len(clipped) == 61
    assert clipped[:40] == lines[:40] and clipped[41:] == lines[-20:]
    marker = clipped[40]
    assert marker.startswith("…[ctxledger: clipped — 500 lines, ")
    assert "omitted lines 41–480 (440 lines, " in marker
    assert marker.endswith(f"; the whole log is {seed_002_log_clip.LOG_PATH}]…")


def test_seed_002_loss_is_declared_at_the_clip(ledger):
    reports, lines = _run("seed_002_log_clip", ledger)
    report = _only(reports, seed_002_log_clip.LOG_CALL_ID)
    assert report.verdict == "declared" and report.tool_name == "read_log"
    [lost] = [t for t in report.transitions if t.lost]
    assert (lost.from_stage, lost.to_stage, lost.lost_items) == ("original", "clipped", 439)
    clip = next(m for m in report.stages if m.stage == "clipped")
    assert clip.declared and clip.strategy == "head_tail"
    assert "ctxledger" in clip.markers_found
    # The clip is what the model received: 61 lines, the marker among them.
    (sent,) = [line for line in lines if "[call_log_002] sent" in line]
    assert "items=61 " in sent and "marker=ctxledger" in sent


def test_seed_000_first_rows_is_declared_but_unmarked(ledger):
    report = _only(_run("seed_000_first_rows", ledger)[0], seed_000_first_rows.ORDERS_CALL_ID)
    assert report.lost_item_ids == tuple(f"ORD-{i:04d}" for i in range(21, 201))
    serialized = next(m for m in report.stages if m.stage == "serialized")
    assert serialized.items == 20 and serialized.json_valid
    assert serialized.declared and serialized.strategy == "head_rows"
    assert not serialized.marker and serialized.markers_found == ()
    original = next(m for m in report.stages if m.stage == "original")
    assert original.items == 200
    assert set(original.fields or ()) == {
        "id",
        "status",
        "amount",
        "buyer",
        "sku",
        "qty",
        "error_code",
        "note",
    }


def test_seed_000_serializer_writes_twenty_rows_without_a_marker(ledger):
    with ctxledger.run():
        result = seed_000_first_rows.query_orders(30, tool_call_id="t0")
        text = seed_000_first_rows.serialize_first_rows(result, "t0")
    data = json.loads(text)
    assert len(result["items"]) == 200 and len(data["items"]) == 20
    assert "truncated" not in text and "截断" not in text and "省略" not in text
    keys = [row["note"][:6] for row in result["items"] if row["note"].startswith("KEY-")]
    assert keys == [f"KEY-{i:02d}" for i in range(1, 11)]


def test_seed_001_only_the_oldest_result_becomes_the_placeholder(ledger):
    reports, lines = _run("seed_001_emergency_trim", ledger)
    report = _only(reports, seed_001_context_overflow.TRIM_CALL_IDS[0])
    assert report.step == 5  # request 4 was refused as too long; 5 is its trimmed retry
    [lost] = [t for t in report.transitions if t.lost]
    # the retry was built by the trim, not assembled again: the loss is the trim's
    assert (lost.from_stage, lost.to_stage) == ("serialized", "emergency_trim")
    trim = next(m for m in report.stages if m.stage == "emergency_trim")
    assert trim.declared and trim.strategy == "emergency_trim"
    assert "emergency_trim" in trim.markers_found
    trims = [line for line in lines if "] emergency_trim" in line]
    assert len(trims) == 1 and "[call_grep_001]" in trims[0]  # one result, one request
    sent = [line for line in lines if "[call_grep_001] sent" in line]
    assert "marker=emergency_trim" in sent[-1] and "step 5" in sent[-1]


def test_seed_001_naive_trim_leaves_the_oldest_call_without_its_result(ledger):
    reports, _ = _run("seed_001_naive_trim", ledger)
    orphan = _only(reports, seed_001_context_overflow.NAIVE_TRIM_CALL_IDS[0])
    assert (orphan.verdict, orphan.tool_name, orphan.step) == ("orphaned", "grep_logs", 5)
    assert any("without its result" in n or "without a result" in n for n in orphan.notes), (
        orphan.notes
    )
    assert {r.tool_call_id for r in reports} == {orphan.tool_call_id}  # the others arrive


def test_orphaned_call_keeps_a_result_without_its_call_and_drops_the_other(ledger):
    reports, _ = _run("orphaned_call", ledger)
    orphan = _only(reports, framework_agents.ORPHAN_CUSTOMER_CALL_ID)
    assert (orphan.verdict, orphan.tool_name, orphan.step) == ("orphaned", "get_customer", 2)
    assert any(
        "carries the result of call_customer_orphan without its call" in n for n in orphan.notes
    ), orphan.notes
    dropped = _only(reports, framework_agents.ORPHAN_ORDERS_CALL_ID)
    assert (dropped.verdict, dropped.tool_name, dropped.step) == ("dropped", "search_orders", 2)
    assert dropped.lost_items == 120
    assert any("missing from request" in n for n in dropped.notes), dropped.notes


def test_dropped_result_vanishes_with_its_call(ledger):
    reports, lines = _run("dropped_result", ledger)
    report = _only(reports, dropped_result.DROP_CALL_IDS[0])
    assert report.step == 2 and report.lost_items == 120
    assert any("missing from request" in n for n in report.notes)
    assert any(
        "step 2 request" in line and "1 tool results, 1 tool calls" in line for line in lines
    )


def _collector_records(
    spans,
) -> tuple[dict[str, list[Measurement]], dict[str, list[Manifest]]]:
    """Spans -> rule records per trace, the way the collector decodes them."""
    measurements: dict[str, list[Measurement]] = defaultdict(list)
    manifests: dict[str, list[Manifest]] = defaultdict(list)
    for span in spans:
        attrs = dict(span.attributes or {})
        trace_id = format(span.context.trace_id, "032x")
        span_id = format(span.context.span_id, "016x")
        if is_received(attrs):
            record = received_from_attributes(attrs, trace_id=trace_id, span_id=span_id)
            measurements[trace_id].extend(received_measurements(record))
        elif is_measurement(attrs):
            measurements[trace_id].append(
                measurement_from_attributes(
                    attrs,
                    trace_id=trace_id,
                    span_id=span_id,
                    dropped_attributes=span.dropped_attributes,
                )
            )
        elif is_manifest(attrs):
            manifests[trace_id].append(
                manifest_from_attributes(attrs, trace_id=trace_id, span_id=span_id)
            )
    return measurements, manifests


def test_all_incidents_as_the_collector_will_judge_them(tmp_path: Path):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = ctxledger.configure(
        service_name="t",
        export=False,
        ledger=str(tmp_path / "ledger.txt"),
        tracer_provider=provider,
    )
    try:
        expected = demo.run_all_incidents()
        ctxledger.flush()
        announced = list(client.ledger.reports)
    finally:
        client.shutdown()
        provider.shutdown()

    measurements, manifests = _collector_records(exporter.get_finished_spans())
    assert len(measurements) == len(demo.INCIDENTS)  # one run, one trace
    verdicts: dict[str, dict[str, str]] = {}
    for trace_id, records in measurements.items():
        calls = {m.tool_call_id for m in records}
        [name] = [n for n, ids in demo.INCIDENT_CALL_IDS.items() if calls == set(ids)]
        reports = judge_trace(records, manifests[trace_id])
        assert all(r.settled for r in reports)
        by_call: dict[str, list[str]] = defaultdict(list)
        for report in reports:
            by_call[report.tool_call_id].append(report.verdict)
        assert set(by_call) == calls
        verdicts[name] = {cid: worst(by_call[cid]) for cid in demo.INCIDENT_CALL_IDS[name]}
    assert verdicts == expected == demo.EXPECTED_VERDICTS
    # The local ledger announced the same losses, on the same calls.
    assert {r.tool_call_id: r.verdict for r in announced} == {
        cid: v for calls in expected.values() for cid, v in calls.items() if v != "intact"
    }


def test_an_incident_whose_framework_is_missing_is_skipped_naming_the_extra(monkeypatch):
    absent = "ctxledger-no-such-framework"
    monkeypatch.setitem(framework_agents.FRAMEWORKS, "clean_journeys", ("MCP", ("mcp", absent)))
    assert demo.skipped_incidents() == {
        "clean_journeys": f"skipping clean_journeys: it runs on MCP ({absent} missing): "
        "pip install -c constraints.txt '.[agents]' in the ctxledger clone"
    }
