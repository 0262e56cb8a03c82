"""Record what real Claude Code exports over OTLP in one print-mode run against the
provider stand-in, for the tests that read its log events.

    .venv/bin/python -m tests.collector.log_recordings.record_claude_code --claude PATH

``PATH`` is the Claude Code binary (``npm install @anthropic-ai/claude-code@2.1.332``
puts it at ``node_modules/@anthropic-ai/claude-code-linux-x64/claude``). The stand-in
answers with a ``Bash`` call printing 1 to 3000 and then a text; Claude Code exports to a
local OTLP receiver that keeps each body. The recordings keep every record and attribute
but replace the text of request and response bodies (Claude Code's own prompt and tool
descriptions) by as many ``x`` as they had characters: what the tests read of them is
their size, never their text. Writes ``claude_code_<version>.{logs,traces}.pb.gz`` here.
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import ClassVar

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from tests.e2e.claude_code_telemetry import telemetry_env

from ctxledger_cli.provider import ProviderStandIn, ToolCall

HERE = Path(__file__).resolve().parent
VERSION = "2.1.332"
#: Attributes holding a request's or a response's text.
BODY_ATTRIBUTES = ("body",)


def scrubbed(body: bytes) -> bytes:
    request = ExportLogsServiceRequest.FromString(body)
    for resource in request.resource_logs:
        for scope in resource.scope_logs:
            for record in scope.log_records:
                for attribute in record.attributes:
                    if attribute.key in BODY_ATTRIBUTES:
                        text = attribute.value.string_value
                        attribute.value.string_value = "x" * len(text)
    return request.SerializeToString()


class _Receiver(http.server.BaseHTTPRequestHandler):
    bodies: ClassVar[dict[str, list[bytes]]] = {"traces": [], "logs": []}

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        self.bodies[self.path.rsplit("/", 1)[-1]].append(body)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claude", required=True, type=Path)
    args = parser.parse_args()
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    script = [
        ToolCall("Bash", {"command": "seq 1 3000", "description": "Print numbers"}),
        "The numbers go from 1 to 3000.",
    ]
    with ProviderStandIn(script=script) as stand_in, tempfile.TemporaryDirectory() as home:
        endpoint = f"http://127.0.0.1:{receiver.server_port}"
        env = telemetry_env(endpoint, stand_in.url, Path(home))
        done = subprocess.run(
            [str(args.claude), "-p", "Print the numbers 1 to 3000 with Bash and tell me the "
             "range.", "--allowedTools", "Bash", "--model", "claude-sonnet-4-6"],
            cwd=home, env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    receiver.shutdown()
    if done.returncode != 0:
        print(done.stdout, done.stderr, file=sys.stderr)
        return 1
    logs = b"".join(scrubbed(body) for body in _Receiver.bodies["logs"])
    traces = b"".join(_Receiver.bodies["traces"])
    (HERE / f"claude_code_{VERSION}.logs.pb.gz").write_bytes(gzip.compress(logs, 9))
    (HERE / f"claude_code_{VERSION}.traces.pb.gz").write_bytes(gzip.compress(traces, 9))
    print(f"recorded {len(logs):,} bytes of logs, {len(traces):,} of traces")
    return 0


if __name__ == "__main__":
    sys.exit(main())
