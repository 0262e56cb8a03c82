"""The CLI's query-API client retries what the collector asks it to retry (503 with
Retry-After, its answer while storage is out of reach) and nothing else. A real HTTP
server on a local port."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.error
from collections.abc import Iterator
from typing import ClassVar

import pytest

from ctxledger_cli import query_api


class _Answers(http.server.BaseHTTPRequestHandler):
    #: Status codes to answer, in order; the last one repeats.
    script: ClassVar[list[int]] = []
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        status = self.script[min(len(self.seen), len(self.script)) - 1]
        body = json.dumps({"reports": [{"verdict": "silent"}]} if status == 200 else {}).encode()
        self.send_response(status)
        if status == 503:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Answers]]]:
    handler = type("Answers", (_Answers,), {"script": [], "seen": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_503_is_retried_until_the_collector_answers(server: tuple[str, type[_Answers]]) -> None:
    url, handler = server
    handler.script = [503, 503, 200]
    assert query_api.fetch_reports(url, "call_1") == [{"verdict": "silent"}]
    assert len(handler.seen) == 3


def test_a_collector_that_stays_unavailable_is_reported(
    server: tuple[str, type[_Answers]],
) -> None:
    url, handler = server
    handler.script = [503]
    with pytest.raises(urllib.error.HTTPError) as raised:
        query_api.fetch_reports(url, "call_1")
    assert raised.value.code == 503
    assert len(handler.seen) == query_api.RETRIES + 1


def test_other_errors_are_not_retried(server: tuple[str, type[_Answers]]) -> None:
    url, handler = server
    handler.script = [401]
    with pytest.raises(urllib.error.HTTPError) as raised:
        query_api.fetch_reports(url, "call_1")
    assert raised.value.code == 401 and len(handler.seen) == 1
