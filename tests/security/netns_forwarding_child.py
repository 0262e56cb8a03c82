"""Run inside a private network and mount namespace (``unshare -n -m``): the collector
forwarding while its destination's name moves to the cloud metadata address.

The namespace has only loopback, with 169.254.169.254 added to it and a receiver on that
address and on 127.0.0.1 (the same port), so a request that reached "the metadata
service" is seen instead of leaving the machine. ``/etc/hosts`` is a file of the test's,
bind-mounted, so the destination's name resolves where the test says. Prints one JSON
object: what each receiver got, and how ``serve`` answered each numeric spelling of
169.254.169.254. Usage: ``python -m tests.security.netns_forwarding_child WORKDIR``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tests.collector.otlp_payloads import journey_spans, new_trace_id, proto_body

METADATA = "169.254.169.254"
NAME = "forward.example"
SECRET = "Bearer forwarded-secret"
#: 169.254.169.254 as integer, hex, shortened, octal and IPv4-mapped IPv6.
NUMERIC_FORMS = (
    "2852039166",
    "0xa9fea9fe",
    "169.254.43518",
    "0251.0376.0251.0376",
    "[::ffff:169.254.169.254]",
)


def _run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True)


def _receiver(address: str, got: list[dict[str, Any]]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            self.rfile.read(length)
            got.append(
                {
                    "address": address,
                    "authorization": self.headers.get("authorization"),
                    "host": self.headers.get("host"),
                }
            )
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer((address, 0 if address == "127.0.0.1" else PORT), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


PORT = 0


def _serve(workdir: Path, port: int, forward_to: str, **wait: Any) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "CTXLEDGER_DATABASE_URL": f"sqlite:///{workdir / f'ctxledger-{port}.db'}",
        "CTXLEDGER_FORWARD_HEADERS": f"Authorization={SECRET.replace(' ', '%20')}",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "ctxledger_cli", "serve", "--port", str(port), "--forward-to",
         forward_to],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _given_up(url: str) -> float:
    text = httpx.get(url + "/metrics", timeout=10).text
    return sum(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("ctxledger_forward_requests_total{") and 'outcome="given_up"' in line
    )


def _wait(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.1)


def main(workdir: Path) -> dict[str, Any]:
    global PORT
    _run("ip", "link", "set", "lo", "up")
    _run("ip", "addr", "add", f"{METADATA}/32", "dev", "lo")
    hosts = workdir / "hosts"
    hosts.write_text(f"127.0.0.1 localhost\n127.0.0.1 {NAME}\n")
    _run("mount", "--bind", str(hosts), "/etc/hosts")
    got: list[dict[str, Any]] = []
    loopback = _receiver("127.0.0.1", got)
    PORT = loopback.server_address[1]
    _receiver(METADATA, got)

    numeric = {}
    for index, form in enumerate(NUMERIC_FORMS):
        process = _serve(workdir, 18000 + index, f"http://{form}:{PORT}/v1/traces")
        try:
            _, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            stderr = "still running after 60 s"
        numeric[form] = {"exit": process.returncode, "stderr": stderr.strip().splitlines()}

    port = 18100
    process = _serve(workdir, port, f"http://{NAME}:{PORT}/v1/traces")
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(lambda: _ready(url), 60, "the collector")
        body = proto_body(new_trace_id(), journey_spans("call_a", "req_a"))
        headers = {"content-type": "application/x-protobuf"}
        assert httpx.post(url + "/v1/traces", content=body, headers=headers).status_code == 200
        _wait(lambda: len(got) >= 1, 30, "the first forwarded request")
        before_move = list(got)
        hosts.write_text(f"127.0.0.1 localhost\n{METADATA} {NAME}\n")  # the name moves
        body = proto_body(new_trace_id(), journey_spans("call_b", "req_b"))
        assert httpx.post(url + "/v1/traces", content=body, headers=headers).status_code == 200
        _wait(lambda: _given_up(url) >= 1, 30, "the forwarder to give up on the moved name")
        time.sleep(1)  # anything the sender might still send would have arrived
    finally:
        process.terminate()
        process.wait(30)
    return {"numeric": numeric, "before_move": before_move, "all": got}


def _ready(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
