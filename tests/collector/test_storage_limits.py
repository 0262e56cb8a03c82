"""What the database cannot hold: the column widths come from the table definitions, and
a span whose identifiers do not fit is rejected alone, before the transaction, with a
reason; the rest of its batch is stored. Live collector on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Report
from ctxledger_collector.decoded.batch import DecodedBatch, DecodedManifest, DecodedMeasurement
from ctxledger_collector.storage.column_limits import fit_to_columns
from ctxledger_collector.storage.rows import (
    MANIFEST_COLUMNS,
    MEASUREMENT_COLUMNS,
    REPORT_COLUMNS,
    manifest_row,
    measurement_row,
    report_row,
)
from ctxledger_collector.storage.stored_records import manifest_of, measurement_of, stored_form
from ctxledger_collector.storage.string_lists import ListWriter
from ctxledger_collector.storage.tables import MEASUREMENTS, RUNS
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


def test_rows_hold_every_column_in_table_order_and_read_back() -> None:
    m = Measurement(
        trace_id="ab" * 16,
        tool_call_id="call_cols",
        stage=sc.STAGE_SENT,
        order=40,
        chars=123,
        request_id="req_cols",
        tool_name="search",
        agent_name="agent",
        step=3,
        bytes=130,
        tokens=45,
        tokenizer="o200k_base",
        items=2,
        item_ids=("a", "b"),
        fields=("id", "text"),
        priority_items=1,
        sha256="12" * 32,
        canonical_sha256="34" * 32,
        json_valid=True,
        declared=True,
        strategy="head_rows",
        marker=True,
        markers_found=("ctxledger",),
        ref="spill://x",
        observed_at=1_796_000_000.123456,
        span_id="0f" * 8,
    )
    lists = ListWriter()
    row = measurement_row(DecodedMeasurement(m, {"custom.key": "kept"}, None), 7, lists)
    assert len(row) == len(MEASUREMENT_COLUMNS)
    by_name = dict(zip(MEASUREMENT_COLUMNS, row, strict=True))
    keys = (by_name["run_id"], by_name["request_key"], by_name["stage_order"])
    assert keys == (7, "req_cols", 40)
    assert by_name["extra"] == '{"custom.key":"kept"}'
    stored = {digest: tuple(orjson.loads(text)) for digest, text in lists.texts.items()}
    assert sorted(stored.values()) == [("a", "b"), ("id", "text")]
    back = measurement_of(row, m.trace_id, stored)
    # Digests come back as their 64-bit prefixes: equal digests stay equal.
    assert back == Measurement(**{**vars(m), "sha256": "12" * 8, "canonical_sha256": "34" * 8})
    # What the store judges with instead of reading a row it just wrote is the same.
    assert stored_form(m) == back

    man = Manifest(
        trace_id=m.trace_id,
        request_id="req_cols",
        step=3,
        tool_call_ids=("call_cols",),
        tool_calls=(),
        tokens=900,
        tokenizer="o200k_base",
        context_window=128_000,
        model="gpt-4o",
        agent_name="agent",
        sdk_dropped_spans=0,
        observed_at=1_796_000_001.5,
        span_id="10" * 8,
    )
    manifest = manifest_row(DecodedManifest(man, {}, None), 7, lists)
    assert len(manifest) == len(MANIFEST_COLUMNS)
    stored = {digest: tuple(orjson.loads(text)) for digest, text in lists.texts.items()}
    assert manifest_of(manifest, man.trace_id, stored) == man

    report = Report(m.trace_id, "call_cols", "req_cols", sc.VERDICT_SILENT, stages=(m,))
    assert len(report_row(report, 7, None, now=1.0)) == len(REPORT_COLUMNS)


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


def _carrying(template: Measurement, service: str | None = "svc") -> DecodedManifest:
    manifest = Manifest(
        trace_id="ab" * 16, request_id="req-9", step=9, tool_call_ids=(template.tool_call_id,),
        agent_name=template.agent_name, observed_at=9.0, span_id="9" * 16,
        source=sc.SOURCE_GENAI,
    )  # fmt: skip
    return DecodedManifest(manifest, {}, service, (template,))


def _template(**changed: Any) -> Measurement:
    fields: dict[str, Any] = {
        "trace_id": "ab" * 16, "tool_call_id": "call-1", "stage": sc.STAGE_LLM_INPUT,
        "order": 40, "chars": 10, "request_id": "req-1", "tool_name": "search",
        "agent_name": "svc", "step": 1, "observed_at": 1.0, "span_id": "1" * 16,
        "source": sc.SOURCE_GENAI,
    }  # fmt: skip
    return Measurement(**{**fields, **changed})


def test_a_carried_stage_that_fits_stays_carried_and_one_that_does_not_is_rejected() -> None:
    """A stage a manifest carries is checked like any: as it is, once (it stays carried);
    too long or holding a NUL, it is this request's stage, rejected with its span."""
    fits = fit_to_columns(DecodedBatch(manifests=[_carrying(_template())]))
    assert fits.rejected == [] and fits.measurements == []
    assert [len(i.carried) for i in fits.manifests] == [1]
    again = fit_to_columns(DecodedBatch(manifests=[_carrying(fits.manifests[0].carried[0])]))
    assert [len(i.carried) for i in again.manifests] == [1]

    bad = fit_to_columns(DecodedBatch(manifests=[_carrying(_template(tool_name="a\x00b"))]))
    assert [i.carried for i in bad.manifests] == [()]
    assert bad.measurements == []
    assert [(r.span_id, "NUL" in r.reason) for r in bad.rejected] == [("9" * 16, True)]

    # The next request carries the same stages and one more: that one is checked too.
    fitting = fits.manifests[0].carried
    more = replace(
        _carrying(fitting[0]), carried=(*fitting, _template(tool_call_id="c2", tool_name="\x00"))
    )
    longer = fit_to_columns(DecodedBatch(manifests=[more]))
    assert [i.carried for i in longer.manifests] == [()]
    assert [(r.span_id, "NUL" in r.reason) for r in longer.rejected] == [("9" * 16, True)]


def test_a_long_service_name_cuts_the_agent_of_the_stages_a_manifest_carries() -> None:
    long = "s" * 500
    fitted = fit_to_columns(
        DecodedBatch(manifests=[_carrying(_template(agent_name=long), service=long)])
    )
    assert fitted.rejected == []
    (manifest,) = fitted.manifests
    (stage,) = fitted.measurements
    assert manifest.carried == () and manifest.service_name == stage.service_name
    assert stage.measurement.agent_name == manifest.manifest.agent_name != long
    assert (stage.measurement.request_id, stage.measurement.span_id) == ("req-9", "9" * 16)
