"""Shared parts of the ``received`` stage tests: an SDK exporting to memory, and a tiny
real HTTP server that answers with the exact bytes a test gives it (ollama's and
llama.cpp's shapes, and broken answers no real provider stand-in gives)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ctxledger
from ctxledger import semconv as sc
from ctxledger._client import Client


def memory_sdk(exporter: InMemorySpanExporter) -> Client:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return ctxledger.configure(export=False, ledger=None, tracer_provider=provider)


def received_spans(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    """The attributes of every ``received`` span, arrays as lists, in emission order."""
    assert ctxledger.flush()
    found = []
    for span in exporter.get_finished_spans():
        attrs = dict(span.attributes or {})
        if attrs.get(sc.STAGE) == sc.STAGE_RECEIVED:
            assert span.name == f"{sc.SPAN_MEASUREMENT} {sc.STAGE_RECEIVED}"
            found.append({k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()})
    return found


@dataclass
class Answer:
    """One canned HTTP answer: the body is written chunk by chunk, then the connection
    closes (HTTP/1.0, so a body without Content-Length ends at the close)."""

    chunks: Sequence[bytes]
    content_type: str = "application/json"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


class CannedServer:
    """A real HTTP server on 127.0.0.1 answering every POST with ``answer(path, body)``."""

    def __init__(self, answer: Callable[[str, bytes], Answer]) -> None:
        self.requests: list[tuple[str, bytes]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                owner.requests.append((self.path, body))
                reply = answer(self.path, body)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for chunk in reply.chunks:
                    self.wfile.write(chunk)
                    self.wfile.flush()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> CannedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve(answer: Callable[[str, bytes], Answer]) -> Iterator[CannedServer]:
    with CannedServer(answer) as server:
        yield server
