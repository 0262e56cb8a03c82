"""What the database cannot hold: the column widths come from the table definitions, and
a span whose identifiers do not fit is rejected alone, before the transaction, with a
reason; the rest of its batch is stored. Live collector on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlalchemy import Table

from ctxledger import semconv as sc
from ctxledger_collector.tables import (
    MANIFESTS,
    MEASUREMENTS,
    REPORTS,
    RUNS,
    ManifestValues,
    MeasurementValues,
    ReportValues,
    RunValues,
)
from tests.collector import otlp_payloads as op
from tests.collector.live_collector import LiveCollector
from tests.collector.test_ingest import (
    CALL,
    REQUEST,
    assert_reference_journey,
    post,
    reports,
    spans_counted,
)


def test_each_row_type_names_every_column_of_its_table() -> None:
    def columns(table: Table) -> set[str]:
        return {c.name for c in table.columns if not (c.primary_key and c.autoincrement is True)}

    pairs: list[tuple[Any, Table]] = [
        (RunValues, RUNS),
        (MeasurementValues, MEASUREMENTS),
        (ManifestValues, MANIFESTS),
        (ReportValues, REPORTS),
    ]
    for values, table in pairs:
        assert set(values.__required_keys__) == columns(table) - {"id"}, table.name


def _original(call_id: str, **extra: Any) -> op.Span:
    return op.Span(
        op.stage_attributes(sc.STAGE_ORIGINAL, call_id, chars=90, tokens=22, items=9, **extra)
    )


def test_identifiers_the_database_cannot_hold_reject_their_span_alone(
    collector: LiveCollector,
) -> None:
    width = MEASUREMENTS.c.tool_call_id.type.length
    assert width == 256
    trace_id, service_trace = op.new_trace_id(), op.new_trace_id()
    widest = _original("c" * width)
    too_long = _original("c" * (width + 1))
    with_nul = op.Span(
        op.stage_attributes(
            sc.STAGE_ASSEMBLED, "call_nul", chars=9, tokens=2, items=1, request_id="r\0", step=2
        )
    )
    long_model = op.Span(
        {**op.manifest_attributes("req_model", [CALL]), sc.REQUEST_MODEL: "m" * (width + 1)},
        name=sc.SPAN_MANIFEST,
    )
    body = op.proto_body(
        trace_id, [*op.journey_spans(CALL, REQUEST), widest, too_long, with_nul, long_model]
    )
    # A second resource (concatenated messages merge) with a service name over its column.
    body += op.proto_body(service_trace, [_original("call_svc")], service_name="s" * 300)

    answer = post(collector, body)

    assert answer.status_code == 200, answer.text
    partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_spans == 3
    for span, reason in [
        (too_long, f"{sc.TOOL_CALL_ID} is longer than {width} characters"),
        (with_nul, f"{sc.REQUEST_ID} contains a NUL character"),
        (long_model, f"{sc.REQUEST_MODEL} is longer than {width} characters"),
    ]:
        assert f"span {span.span_id.hex()}: {reason}" in partial.error_message
    found = {r["tool_call_id"]: r for r in reports(collector, trace_id)}
    assert sorted(found) == sorted(["c" * width, CALL])
    assert_reference_journey([found[CALL]], trace_id.hex())
    # service.name only names the agent: cut to its column, not refused.
    (cut,) = reports(collector, service_trace)
    assert cut["agent_name"] == "s" * RUNS.c.service_name.type.length
    assert spans_counted(collector) == {
        "measurement": 6,
        "manifest": 1,
        "ignored": 0,
        "rejected": 3,
    }
