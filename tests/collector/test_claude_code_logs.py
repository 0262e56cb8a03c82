"""The log events real Claude Code 2.1.332 exported in one print-mode run against the
provider stand-in (``log_recordings/record_claude_code.py``), sent to a real collector:
the events the audit reads are stored with their ids, sizes and flags (Claude Code sends
its numbers as text and names each event in its body), the rest counted as ignored."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ctxledger_collector.ingest.otlp_decode import PROTOBUF, decode_export_request
from ctxledger_collector.ops.settings import Settings
from tests.collector.live_collector import LiveCollector
from tests.collector.test_logs_ingest import _counted, _post, _stored

RECORDINGS = Path(__file__).resolve().parent / "log_recordings"
SESSION = "a86abda7-a99c-4838-abcc-b995fed4c93d"
CALL = "toolu_standin000002"


def _numbers(row: Any) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(row.numbers or "{}")
    return loaded


def test_claude_codes_log_events_are_stored_with_their_ids_and_sizes(
    collector: LiveCollector, collector_settings: Settings
) -> None:
    body = gzip.decompress((RECORDINGS / "claude_code_2.1.332.logs.pb.gz").read_bytes())
    answer = _post(collector, body)
    assert answer.status_code == 200, answer.text
    rows = _stored(collector_settings.database_url)
    assert Counter(r.event_name for r in rows) == {
        "claude_code.api_request_body": 2,
        "claude_code.api_request": 2,
        "claude_code.api_response_body": 2,
        "claude_code.tool_result": 1,
    }
    # Settings resolved, plugins loaded, the prompt, the tool decision, the answer.
    assert _counted(collector) == {"stored": 7, "ignored": 7, "rejected": 0}
    assert {r.session_id for r in rows} == {SESSION}
    assert {r.service_name for r in rows} == {"claude-code"}

    (result,) = [r for r in rows if r.event_name == "claude_code.tool_result"]
    assert result.call_id == CALL
    assert _numbers(result)["tool_result_size_bytes"] == 13_892  # sent as the text "13892"
    assert _numbers(result)["success"] is True

    requests = [r for r in rows if r.event_name == "claude_code.api_request_body"]
    # Each request body was cut by the telemetry (60 KB inline): the record says so.
    assert all(r.truncated for r in requests)
    assert sorted(_numbers(r)["body_length"] for r in requests) == [87_343, 104_600]
    assert all(r.body_chars < _numbers(r)["body_length"] for r in requests)
    assert all(r.body is None for r in rows)  # content stays out unless opted in

    usage = [r for r in rows if r.event_name == "claude_code.api_request"]
    assert sorted(_numbers(r)["input_tokens"] for r in usage) == [19_009, 27_070]
    assert all(_numbers(r)["cache_read_tokens"] == 0.0 for r in usage)


def test_claude_codes_spans_give_the_tools_output_and_name_its_settings(
    collector: LiveCollector,
) -> None:
    """Its ``claude_code.tool`` span's ``tool.output`` event is the result's ``original``
    stage (source ``claude_code``); its ``llm_request`` spans never carry the messages,
    so the journey is unauditable with Claude Code's own setting named, never the
    settings of another instrumentation."""
    body = gzip.decompress((RECORDINGS / "claude_code_2.1.332.traces.pb.gz").read_bytes())
    batch = decode_export_request(body, PROTOBUF)
    (original,) = [d.measurement for d in batch.measurements]
    assert (original.tool_call_id, original.stage, original.source) == (
        CALL,
        "original",
        "claude_code",
    )
    assert original.chars == 13_892 and original.telemetry_cut is None
    assert {m.manifest.source for m in batch.manifests} == {"claude_code"}
    assert all("api_request_body" in (m.manifest.telemetry_cut or "") for m in batch.manifests)

    with collector.client() as http:
        sent = http.post("/v1/traces", content=body, headers={"content-type": PROTOBUF})
        assert sent.status_code == 200, sent.text
        (report,) = http.get("/api/v1/reports", params={"tool_call_id": CALL}).json()["reports"]
    assert report["verdict"] == "unauditable" and report["source"] == "claude_code"
    notes = " ".join(report["notes"])
    assert "OTEL_LOG_RAW_API_BODIES" in notes and "openai-v2" not in notes
