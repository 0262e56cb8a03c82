"""A real OTLP/HTTP trace receiver for end-to-end tests: no mocks, a socket on 127.0.0.1.

It accepts ``POST /v1/traces`` with an ``application/x-protobuf`` body (optionally
``Content-Encoding: gzip``), decodes it as an ``ExportTraceServiceRequest``, answers an
``ExportTraceServiceResponse`` and records every span with its attributes decoded into
plain Python values. It can be told to fail (``503`` with ``Retry-After`` by default)
for a number of requests or until :meth:`OTLPReceiver.recover` is called, so tests can
prove that an exporter retries and loses nothing; it can answer ``partial_success`` (one
span of each request refused, with a reason) and 413 for bodies over a size.

    with OTLPReceiver() as receiver:
        exporter = OTLPSpanExporter(endpoint=receiver.traces_url)
        ...
        spans = receiver.wait_for_spans(3)
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

TRACES_PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"


def decode_any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as a Python value: str, bool, int, float, bytes, list (for
    ``array_value``), dict (for ``kvlist_value``) or None when no value is set."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [decode_any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return decode_attributes(value.kvlist_value.values)
    return getattr(value, kind)


def decode_attributes(pairs: Any) -> dict[str, Any]:
    """Repeated ``KeyValue`` as a dict (a repeated key keeps its last value)."""
    decoded: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        decoded[pair.key] = decode_any_value(pair.value)
    return decoded


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the receiver decoded it."""

    trace_id: str
    """32 lower-case hex digits."""
    span_id: str
    """16 lower-case hex digits."""
    parent_span_id: str
    """16 hex digits, or ``""`` for a root span."""
    name: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    """The resource attributes of the span's ``ResourceSpans``."""
    scope_name: str
    dropped_attributes_count: int
    start_time_unix_nano: int
    end_time_unix_nano: int
    headers: dict[str, str]
    """Headers of the HTTP request that carried the span (keys lower-cased)."""


@dataclass(frozen=True)
class ReceivedRequest:
    """One HTTP request the receiver answered, whatever the outcome."""

    method: str
    path: str
    headers: dict[str, str]
    """Keys lower-cased."""
    body: bytes
    """The body after gzip/deflate decoding (the raw protobuf for trace exports)."""
    status: int
    """The status code the receiver answered."""
    span_count: int
    """Spans accepted from this request (0 when it was refused)."""
    received_at: float = 0.0
    """``time.monotonic()`` when the request had arrived (its body read)."""


@dataclass(frozen=True)
class RejectedSpan:
    """A span the receiver refused in a ``partial_success`` answer (it was not stored)."""

    span_id: str
    reason: str


@dataclass
class _FailureMode:
    status: int
    retry_after: str | None
    remaining: int | None  # None: until recover()


@dataclass
class _PartialMode:
    reason: str
    remaining: int | None  # None: until recover()


@dataclass
class _State:
    lock: threading.Condition = field(default_factory=threading.Condition)
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: list[ReceivedRequest] = field(default_factory=list)
    rejected: list[RejectedSpan] = field(default_factory=list)
    failure: _FailureMode | None = None
    partial: _PartialMode | None = None
    max_body_bytes: int | None = None
    delay_s: float = 0.0


def _decode_body(body: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


def decode_export_request(body: bytes, headers: Mapping[str, str]) -> list[ReceivedSpan]:
    """The spans of one protobuf ``ExportTraceServiceRequest``."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = decode_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        name=span.name,
                        attributes=decode_attributes(span.attributes),
                        resource=dict(resource),
                        scope_name=scope_spans.scope.name,
                        dropped_attributes_count=span.dropped_attributes_count,
                        start_time_unix_nano=span.start_time_unix_nano,
                        end_time_unix_nano=span.end_time_unix_nano,
                        headers=dict(headers),
                    )
                )
    return spans


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real collectors speak
    server: _Server
    _received_at: float = 0.0

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        return None

    def _reply(self, status: int, body: bytes, content_type: str, extra: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _record(self, body: bytes, status: int, span_count: int) -> None:
        state = self.server.state
        with state.lock:
            state.requests.append(
                ReceivedRequest(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    status=status,
                    span_count=span_count,
                    received_at=self._received_at,
                )
            )
            state.lock.notify_all()

    def _partial(self, spans: list[ReceivedSpan]) -> tuple[list[ReceivedSpan], bytes]:
        """The spans to store and the 200 answer, refusing the first span if told to."""
        state = self.server.state
        with state.lock:
            partial = state.partial
            if partial is not None and partial.remaining is not None:
                partial.remaining -= 1
                if partial.remaining <= 0:
                    state.partial = None
            if partial is None or not spans:
                return spans, ExportTraceServiceResponse().SerializeToString()
            refused = spans[0]
            state.rejected.append(RejectedSpan(refused.span_id, partial.reason))
        answer = ExportTraceServiceResponse()
        answer.partial_success.rejected_spans = 1
        answer.partial_success.error_message = f"span {refused.span_id}: {partial.reason}"
        return spans[1:], answer.SerializeToString()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self._received_at = time.monotonic()
        delay_s = self.server.state.delay_s
        if delay_s:
            time.sleep(delay_s)
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.path.split("?", 1)[0] != TRACES_PATH:
            self._record(raw, 404, 0)
            self._reply(404, b"not found", "text/plain", {})
            return
        state = self.server.state
        with state.lock:
            failure = state.failure
            if failure is not None and failure.remaining is not None:
                failure.remaining -= 1
                if failure.remaining <= 0:
                    state.failure = None
        if failure is not None:
            extra = {} if failure.retry_after is None else {"Retry-After": failure.retry_after}
            self._record(raw, failure.status, 0)
            self._reply(failure.status, b"receiver told to fail", "text/plain", extra)
            return
        limit = state.max_body_bytes
        if limit is not None and len(raw) > limit:
            self._record(raw, 413, 0)
            self._reply(413, f"body over {limit} bytes".encode(), "text/plain", {})
            return
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type != PROTOBUF:
            self._record(raw, 415, 0)
            self._reply(
                415, f"unsupported content type {content_type!r}".encode(), "text/plain", {}
            )
            return
        try:
            body = _decode_body(raw, headers.get("content-encoding", ""))
            spans = decode_export_request(body, headers)
        except Exception as error:  # a malformed body is the client's fault: 400
            self._record(raw, 400, 0)
            self._reply(400, f"malformed body: {error}".encode(), "text/plain", {})
            return
        spans, answer = self._partial(spans)
        with state.lock:
            state.spans.extend(spans)
            state.lock.notify_all()
        self._record(body, 200, len(spans))
        self._reply(200, answer, PROTOBUF, {})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: _State) -> None:
        self.state = state
        super().__init__(address, _Handler)


class OTLPReceiver:
    """A real OTLP/HTTP trace receiver on ``host:port`` (port 0: a free port)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._state = _State()
        self._server = _Server((host, port), self._state)
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> OTLPReceiver:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="otlp-receiver",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> OTLPReceiver:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- addresses -------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:43125`` (what OTLP calls the endpoint)."""
        host = self._server.server_address[0]
        if isinstance(host, bytes):  # a Unix socket's address; ours is a TCP host
            host = host.decode()
        return f"http://{host}:{self.port}"

    @property
    def traces_url(self) -> str:
        return self.url + TRACES_PATH

    # --- failure injection -----------------------------------------------------------

    def fail(
        self, status: int = 503, *, requests: int | None = None, retry_after: str | None = "0"
    ) -> None:
        """Answer ``status`` (with ``Retry-After: retry_after`` unless None) to the next
        ``requests`` trace exports, or to all of them until :meth:`recover`."""
        with self._state.lock:
            self._state.failure = _FailureMode(status, retry_after, requests)

    def recover(self) -> None:
        """Accept exports again (whole, and of any size)."""
        with self._state.lock:
            self._state.failure = None
            self._state.partial = None
            self._state.max_body_bytes = None

    def reject_one_span(self, reason: str, *, requests: int | None = None) -> None:
        """Refuse the first span of the next ``requests`` exports (or of all of them until
        :meth:`recover`) with ``reason``: a 200 with ``partial_success``, as a collector
        answers for a span it cannot store. The other spans are stored."""
        with self._state.lock:
            self._state.partial = _PartialMode(reason, requests)

    def delay(self, seconds: float) -> None:
        """Wait ``seconds`` before answering each request (a slow collector)."""
        with self._state.lock:
            self._state.delay_s = seconds

    def limit_body(self, max_bytes: int | None) -> None:
        """Answer 413 to bodies (as sent) over ``max_bytes``; None: no limit."""
        with self._state.lock:
            self._state.max_body_bytes = max_bytes

    # --- what was received -----------------------------------------------------------

    @property
    def spans(self) -> list[ReceivedSpan]:
        """Every span accepted so far, in arrival order (a snapshot)."""
        with self._state.lock:
            return list(self._state.spans)

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every HTTP request answered so far, accepted or refused (a snapshot)."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def rejected(self) -> list[RejectedSpan]:
        """Every span refused with ``partial_success`` so far (a snapshot)."""
        with self._state.lock:
            return list(self._state.rejected)

    def clear(self) -> None:
        with self._state.lock:
            self._state.spans.clear()
            self._state.requests.clear()
            self._state.rejected.clear()

    def wait_until(
        self, predicate: Callable[[OTLPReceiver], bool], timeout_s: float = 10.0
    ) -> bool:
        """Wait until ``predicate(self)`` holds (checked whenever a request arrives)."""
        deadline = time.monotonic() + timeout_s
        while not predicate(self):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._state.lock:  # woken by every request; re-checked at least every 0.1 s
                self._state.lock.wait(min(remaining, 0.1))
        return True

    def wait_for_spans(self, count: int, timeout_s: float = 10.0) -> list[ReceivedSpan]:
        """The spans received once at least ``count`` arrived (or the timeout passed)."""
        self.wait_until(lambda r: len(r.spans) >= count, timeout_s)
        return self.spans
