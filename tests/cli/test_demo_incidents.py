"""The scripted incidents: each gets exactly its verdict, every other journey is intact.

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
from ctxledger.verdicts import Manifest, Measurement, Report, judge_trace, worst
from ctxledger.wire import (
    is_manifest,
    is_measurement,
    manifest_from_attributes,
    measurement_from_attributes,
)
from ctxledger_cli import demo
from ctxledger_cli.demo import (
    dropped_result,
    seed_000_first_rows,
    seed_001_context_overflow,
    seed_002_log_clip,
)

SEED_002_MARKER = "…[已截断：共 500 行，省略中间 440 行；可用 offset/pattern 参数查看更多]…"


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
    for name, (call_id, verdict) in demo.EXPECTED_VERDICTS.items():
        assert call_id in demo.INCIDENT_CALL_IDS[name]
        assert verdict in ("intact", "declared", "unmarked", "silent", "dropped", "orphaned")


def test_run_all_incidents_returns_the_expected_verdicts(ledger):
    assert demo.run_all_incidents() == {
        "seed_004_silent_loss": "silent",
        "seed_002_log_clip": "declared",
        "seed_000_first_rows": "unmarked",
        "seed_001_emergency_trim": "declared",
        "orphaned_call": "orphaned",
        "dropped_result": "dropped",
        "clean_journeys": "intact",
    }


@pytest.mark.parametrize("name", list(demo.EXPECTED_VERDICTS))
def test_incident_gets_exactly_its_verdict_in_the_ledger(name, ledger):
    call_id, expected = demo.EXPECTED_VERDICTS[name]
    reports, lines = _run(name, ledger)
    if expected == "intact":
        assert reports == []
    else:
        assert reports, lines
        assert {r.tool_call_id for r in reports} == {call_id}, reports
        assert {r.verdict for r in reports} == {expected}, reports
        assert len({r.trace_id for r in reports}) == 1
    losses = [line for line in lines if " LOSS " in line]
    assert len(losses) == len(reports)
    for cid in demo.INCIDENT_CALL_IDS[name]:
        assert any(f"[{cid}] original" in line for line in lines), cid
        if cid != call_id or expected == "intact":
            # It reached the model, and no loss was ever announced for it.
            assert any(f"[{cid}] sent" in line for line in lines), cid
            assert not any(f"[{cid}]" in line for line in losses), cid


def test_seed_002_clip_keeps_head_tail_and_the_seed_marker():
    text = seed_002_log_clip.read_log.__wrapped__(seed_002_log_clip.LOG_PATH)
    lines = text.splitlines()
    assert len(lines) == 500 and "IllegalStateException" in lines[-11]
    clipped = seed_002_log_clip.clip_head_tail(text).splitlines()
    assert clipped == [*lines[:40], SEED_002_MARKER, *lines[-20:]]


def test_seed_002_loss_is_declared_at_the_clip(ledger):
    report = _only(_run("seed_002_log_clip", ledger)[0], seed_002_log_clip.LOG_CALL_ID)
    [lost] = [t for t in report.transitions if t.lost]
    assert (lost.from_stage, lost.to_stage, lost.lost_items) == ("serialized", "clipped", 439)
    clip = next(m for m in report.stages if m.stage == "clipped")
    assert clip.declared and clip.strategy == "head_tail"
    assert "truncated_zh" in clip.markers_found


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


def test_orphaned_call_names_the_call_without_its_result(ledger):
    report = _only(_run("orphaned_call", ledger)[0], seed_001_context_overflow.ORPHAN_CALL_IDS[0])
    assert report.step == 5  # the retry of the refused request 4, without the result
    assert any("carries tool call call_grep_orphan without its result" in n for n in report.notes)


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
        if is_measurement(attrs):
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
    verdicts: dict[str, str] = {}
    for trace_id, records in measurements.items():
        calls = {m.tool_call_id for m in records}
        [name] = [n for n, ids in demo.INCIDENT_CALL_IDS.items() if calls == set(ids)]
        reports = judge_trace(records, manifests[trace_id])
        assert all(r.settled for r in reports)
        by_call: dict[str, list[str]] = defaultdict(list)
        for report in reports:
            by_call[report.tool_call_id].append(report.verdict)
        assert set(by_call) == calls
        target, _ = demo.EXPECTED_VERDICTS[name]
        verdicts[name] = worst(by_call[target])
        for cid in calls - {target}:
            assert set(by_call[cid]) == {"intact"}, (name, cid, by_call[cid])
    assert verdicts == expected
    # The local ledger announced the same losses, on the same calls.
    assert {r.tool_call_id: r.verdict for r in announced} == {
        demo.EXPECTED_VERDICTS[n][0]: v for n, v in expected.items() if v != "intact"
    }
