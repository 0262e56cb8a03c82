"""Record what OpenAI's Codex CLI's own traces show of its tool outputs, for the
derivation's unit tests.

``python -m tests.collector.derive_spans.record_codex`` runs the real Codex of the
end-to-end tests (tests/e2e/codex, its cached ``node_modules``) in ``codex exec`` against
the provider stand-in, once per command of :data:`COMMANDS`, its traces sent to a real
OTLP receiver, and writes the spans that carry a ``codex.tool_result`` event to
``codex.json`` beside this file. Re-run after upgrading tests/e2e/codex/package.json.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

from ctxledger_cli.provider import ProviderStandIn, ToolCall
from ctxledger_collector.derive.codex import tool_result_event
from ctxledger_collector.ingest.otlp_proto import proto_spans
from ctxledger_collector.ingest.otlp_spans import DecodeLimits, RawSpan
from tests.e2e.codex_cli import codex_binary, run_codex
from tests.e2e.otlp_receiver import TRACES_PATH, OTLPReceiver

HERE = Path(__file__).parent
#: A short output; 200 KB of Chinese and ASCII text (cut by Codex's default limit).
COMMANDS = {
    "call_short": "echo hello from codex",
    "call_long": "python3 -c \"print('订单 paid, ' * 20000)\"",
}


def _recorded(span: RawSpan) -> dict[str, object]:
    fields = dataclasses.asdict(span.source_span())
    fields["events"] = [{"name": e.name, "attributes": e.attributes} for e in span.events]
    return fields


def main() -> None:
    binary = codex_binary()
    spans: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as work, OTLPReceiver() as receiver:
        for call_id, command in COMMANDS.items():
            script = [ToolCall("exec_command", {"cmd": command}, call_id), "Done."]
            with ProviderStandIn(script=script) as provider:
                run_codex(binary, Path(work) / call_id, provider.url, receiver.url)
        for request in receiver.requests:
            if request.path != TRACES_PATH:
                continue
            for span in proto_spans(request.body, DecodeLimits()):
                if isinstance(span, RawSpan) and tool_result_event(span.events) is not None:
                    spans.append(_recorded(span))
    text = json.dumps(spans, ensure_ascii=False, indent=1)
    (HERE / "codex.json").write_text(text + "\n", encoding="utf-8")
    print("codex.json", len(spans), "spans")


if __name__ == "__main__":
    main()
