"""One span with text that is not UTF-8 in an export of 100, to a real `ctxledger serve`:
the export is answered 200 with `partial_success` (1 rejected), the other 99 spans are
stored (checked by span id), and the one rejection is listed with its reason — in
protobuf and in JSON."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ctxledger import semconv as sc
from tests.collector import otlp_payloads as op
from tests.reliability.kit import ServeProcess, stored_span_ids

SPANS = 100
PLACEHOLDER = "XXXX"
BAD = b"\xff\xfe\xfd\xfc"  # as long as the placeholder: the protobuf framing holds


def _stage(call_id: str) -> dict[str, object]:
    return op.stage_attributes(sc.STAGE_ORIGINAL, call_id, chars=100, tokens=25, items=1)


def _export(encoding: str) -> tuple[bytes, set[str], str]:
    """100 stage spans, one holding ``BAD`` in an attribute: the body, the good span
    ids and the bad one's."""
    spans = [op.Span(_stage(f"call_{index:03d}")) for index in range(SPANS)]
    spoilt = op.Span({**_stage("call_bad"), "x": PLACEHOLDER})
    spans[SPANS // 2] = spoilt
    make = op.proto_body if encoding == op.PROTOBUF else op.json_body
    body = make(op.new_trace_id(), spans)
    assert body.count(PLACEHOLDER.encode()) == 1
    good = {span.span_id.hex() for span in spans if span is not spoilt}
    return body.replace(PLACEHOLDER.encode(), BAD), good, spoilt.span_id.hex()


@pytest.mark.parametrize("encoding", [op.PROTOBUF, op.JSON_TYPE], ids=["protobuf", "json"])
def test_an_export_with_one_bad_text_span_stores_the_other_99(
    tmp_path: Path, encoding: str
) -> None:
    database_url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    collector = ServeProcess({"CTXLEDGER_DATABASE_URL": database_url}, tmp_path / "serve.log")
    collector.start()
    try:
        body, good, bad = _export(encoding)
        answer = httpx.post(
            collector.url + "/v1/traces", content=body, headers={"content-type": encoding}
        )
        assert answer.status_code == 200, answer.text
        if encoding == op.PROTOBUF:
            partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
            rejected = partial.rejected_spans
        else:
            rejected = int(answer.json()["partialSuccess"]["rejectedSpans"])
        assert rejected == 1
        rejections = httpx.get(collector.url + "/api/v1/rejections").json()["rejections"]
    finally:
        collector.stop()
    assert len(good) == SPANS - 1
    assert stored_span_ids(database_url) == good
    assert [(r["span_id"], r["reason"]) for r in rejections] == [(bad, "malformed_span")]
