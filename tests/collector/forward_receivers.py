"""A real OTLP/HTTP endpoint on loopback for the forwarding tests: it keeps every
request's bytes exactly as they arrived (gzip stays gzip) with its headers.

``ThreadingHTTPServer`` in a thread of its own, used as a context manager. It answers
200 with an empty ``ExportTraceServiceResponse``, unless told otherwise:

* :meth:`RecordingEndpoint.answer` scripts the next answers (e.g. one 503 with
  ``Retry-After``, or 400 for good);
* :meth:`RecordingEndpoint.hold` keeps requests waiting (unanswered) until
  :meth:`RecordingEndpoint.release`, so the sender in front of it is stuck and its
  queue fills.

It can be bound to a given port, so a test can start it where a collector has been
forwarding to nothing (connection refused) all along.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class Arrived:
    """One request as it arrived."""

    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes  # the raw bytes, not decompressed
    status: int  # what the endpoint answered

    @property
    def content_type(self) -> str | None:
        return self.headers.get("content-type")

    @property
    def content_encoding(self) -> str | None:
        return self.headers.get("content-encoding")


@dataclass(frozen=True)
class _Answer:
    status: int
    retry_after: str | None


class RecordingEndpoint:
    def __init__(self, port: int = 0) -> None:
        self._arrived: list[Arrived] = []
        self._script: deque[_Answer] = deque()
        self._always: _Answer | None = None
        self._changed = threading.Condition()
        self._open = threading.Event()
        self._open.set()
        self.held = 0  # requests waiting at the gate now
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                endpoint._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.port = int(self._server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}{TRACES_PATH}"

    # --- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> RecordingEndpoint:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._open.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # --- behaviour ---------------------------------------------------------------------

    def answer(self, status: int, *, times: int | None = 1, retry_after: str | None = None) -> None:
        """Answer ``status`` to the next ``times`` requests (every one when None)."""
        with self._changed:
            if times is None:
                self._always = _Answer(status, retry_after)
            else:
                self._script.extend(_Answer(status, retry_after) for _ in range(times))

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    # --- what arrived ------------------------------------------------------------------

    @property
    def arrived(self) -> list[Arrived]:
        with self._changed:
            return list(self._arrived)

    def wait_until(self, predicate: Any, timeout_s: float = 30.0) -> bool:
        """Wait until ``predicate(self)`` holds (re-checked on every arrival)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.1))
        return True

    def wait_for(self, count: int, timeout_s: float = 30.0) -> list[Arrived]:
        """What arrived, once at least ``count`` requests did (or the timeout passed)."""
        self.wait_until(lambda e: len(e._arrived) >= count, timeout_s)
        return self.arrived

    def wait_held(self, count: int, timeout_s: float = 30.0) -> bool:
        return self.wait_until(lambda e: e.held >= count, timeout_s)

    # --- the handler -------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length)
        with self._changed:
            self.held += 1
            self._changed.notify_all()
        self._open.wait()
        with self._changed:
            self.held -= 1
            answer = self._script.popleft() if self._script else self._always
            status = answer.status if answer is not None else 200
            self._arrived.append(
                Arrived(
                    path=handler.path,
                    headers={k.lower(): v for k, v in handler.headers.items()},
                    body=body,
                    status=status,
                )
            )
            self._changed.notify_all()
        reply = ExportTraceServiceResponse().SerializeToString() if status == 200 else b"no"
        handler.send_response(status)
        handler.send_header("Content-Type", "application/x-protobuf")
        handler.send_header("Content-Length", str(len(reply)))
        if answer is not None and answer.retry_after is not None:
            handler.send_header("Retry-After", answer.retry_after)
        handler.end_headers()
        handler.wfile.write(reply)
