"""Record what OpenAI's Codex CLI's own telemetry shows of its tool outputs, for the
derivation's unit tests.

``python -m tests.collector.derive_spans.record_codex`` runs the real Codex of the
end-to-end tests (tests/e2e/codex, its cached ``node_modules``) in ``codex exec`` against
the provider stand-in, once per run of :data:`RUNS`, its traces and logs sent to a real
OTLP receiver, and writes to ``codex.json`` beside this file: the spans derivation reads
(each tool output's dispatch, each request sent, each usage reported), the
``codex.tool_result`` log records, and the bytes of each output the stand-in received.
Re-run after upgrading tests/e2e/codex/package.json.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

from ctxledger_cli.provider import ProviderStandIn, ToolCall
from ctxledger_collector.derive import may_derive
from ctxledger_collector.derive.codex import TOOL_RESULT_EVENT
from ctxledger_collector.ingest.otlp_logs import RawLogRecord, proto_log_records
from ctxledger_collector.ingest.otlp_proto import proto_spans
from ctxledger_collector.ingest.otlp_spans import DecodeLimits, RawSpan
from tests.e2e.codex_cli import codex_binary, run_codex
from tests.e2e.otlp_receiver import TRACES_PATH, OTLPReceiver

HERE = Path(__file__).parent
LONG = "python3 -c \"print('订单 paid, ' * 20000)\""  # 260,001 bytes, Chinese and ASCII
RAISED = "tool_output_token_limit = 200000\n"


@dataclasses.dataclass(frozen=True)
class Run:
    command: str
    max_output_tokens: int | None = None
    config: str = ""


#: By call id: a short output; a long one under the default policy; with only the
#: config limit raised; with the call's max_output_tokens raised too; with it lowered.
RUNS = {
    "call_short": Run("echo hello from codex"),
    "call_long": Run(LONG),
    "call_config": Run(LONG, None, RAISED),
    "call_both": Run(LONG, 200_000, RAISED),
    "call_asked_less": Run(LONG, 3_000, RAISED),
}


def _span(span: RawSpan) -> dict[str, object]:
    fields = dataclasses.asdict(span.source_span())
    fields["events"] = [{"name": e.name, "attributes": e.attributes} for e in span.events]
    return fields


def _received(receiver: OTLPReceiver) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    spans: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []
    for request in receiver.requests:
        if request.path == TRACES_PATH:
            for span in proto_spans(request.body, DecodeLimits()):
                if isinstance(span, RawSpan) and may_derive(
                    span.attributes, span.events, span.name, span.service_name
                ):
                    spans.append(_span(span))
            continue
        for record in proto_log_records(request.body, DecodeLimits()):
            if isinstance(record, RawLogRecord) and (
                record.attributes.get("event.name") == TOOL_RESULT_EVENT
            ):
                logs.append({"trace_id": record.trace_id, "attributes": record.attributes})
    return spans, logs


def main() -> None:
    binary = codex_binary()
    spans: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []
    read: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as work, OTLPReceiver() as receiver:
        for call_id, run in RUNS.items():
            arguments: dict[str, Any] = {"cmd": run.command}
            if run.max_output_tokens is not None:
                arguments["max_output_tokens"] = run.max_output_tokens
            script = [ToolCall("exec_command", arguments, call_id), "Done."]
            with ProviderStandIn(script=script) as provider:
                run_codex(binary, Path(work) / call_id, provider.url, receiver.url, run.config)
                read[call_id] = sum(
                    len(item["output"].encode())
                    for request in provider.requests
                    if request.path.endswith("/responses")
                    for item in request.json().get("input", [])
                    if isinstance(item, dict) and item.get("type") == "function_call_output"
                )
        spans, logs = _received(receiver)
    recorded = {"spans": spans, "logs": logs, "read_bytes": read}
    text = json.dumps(recorded, ensure_ascii=False, indent=1)
    (HERE / "codex.json").write_text(text + "\n", encoding="utf-8")
    print("codex.json:", len(spans), "spans,", len(logs), "log records;", read)


if __name__ == "__main__":
    main()
