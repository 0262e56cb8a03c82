"""Zero-SDK traces measure message text as the SDK does: a tool result the agent sent
as ``str(result)`` is the same data as the tool span's JSON."""

from __future__ import annotations

import json

from ctxledger import semconv as sc
from ctxledger.verdicts import judge_trace
from tests.collector.test_derive import CALL, OPENING, chat, derive_all, span

RECORDS = [{"id": f"ord-{i}", "buyer": "王五", "paid": i % 2 == 0, "note": None} for i in range(40)]


def _judged(sent: str) -> str:
    issuer = chat("1", OPENING, 1, **{"gen_ai.output.messages": json.dumps([CALL])})
    tool = span("3", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "c1",
                      "gen_ai.tool.call.result": json.dumps(RECORDS)}, start=2)  # fmt: skip
    result = {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c1", "response": sent}],
    }
    request = chat("2", [*OPENING, CALL, result], 3)
    measurements, manifests, _ = derive_all([issuer, tool, request])
    (report,) = [r for r in judge_trace(measurements, manifests) if r.request_id]
    return report.verdict


def test_a_result_sent_as_a_python_literal_is_intact_and_a_cut_one_is_silent() -> None:
    assert _judged(str(RECORDS)) == sc.VERDICT_INTACT
    assert _judged(str(RECORDS[:10])) == sc.VERDICT_SILENT
