"""``POST /v1/traces``: OTLP/HTTP ingest, protobuf or JSON, optionally gzip.

Status codes: 200 with partial success for rejected spans, 400 for a malformed body,
401 for a missing or wrong API key, 408 for a body that did not arrive in time, 413 for
a body over the limit, 415 for an unsupported content type or encoding, 503 with
Retry-After when storage is down or ingest is busy (so standard exporters retry). The
answer is sent only after the batch is committed.

Admission (:mod:`ctxledger_collector.admission`) comes before the body is read: a
request that finds no slot and no room in the in-flight byte budget within a short wait
is refused from its headers alone, so refused work costs neither memory nor decoding.

An export answered 200 (partial success included) is handed, exactly as it arrived, to
the forwarder (:mod:`ctxledger_collector.forwarding`) when destinations are configured;
refused ones (4xx, 503) are not: the client retries a 503, and a 4xx would be refused
downstream too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)
from sqlalchemy.exc import StatementError

from ctxledger_collector.admission import Busy, Reservation
from ctxledger_collector.database import is_storage_outage
from ctxledger_collector.deadline import RequestClock, past_deadline
from ctxledger_collector.ingest_spool import SpooledExport
from ctxledger_collector.keys import bearer_token
from ctxledger_collector.otlp_decode import (
    JSON_TYPE,
    PROTOBUF,
    DecodedBatch,
    MalformedRequest,
    Rejection,
    TooManySpans,
    decode_export_chunks,
)
from ctxledger_collector.rejection_log import reason_counts, record_rejections
from ctxledger_collector.routes.deps import StateDep
from ctxledger_collector.rows import fit_to_columns
from ctxledger_collector.spool_replay import Discarded, StorageUnavailable
from ctxledger_collector.state import AppState

logger = logging.getLogger("ctxledger.collector")
router = APIRouter(tags=["ingest"])

_GRPC_INVALID_ARGUMENT = 3
_GRPC_UNAUTHENTICATED = 16
_GRPC_UNAVAILABLE = 14
_GRPC_RESOURCE_EXHAUSTED = 8


class RequestRejected(Exception):
    def __init__(
        self, status: int, message: str, grpc_code: int, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.grpc_code = grpc_code
        self.headers = headers or {}


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _error(media: str, status: int, message: str, grpc_code: int, **headers: str) -> Response:
    """An OTLP error answer: a google.rpc.Status in the request's encoding."""
    if media == PROTOBUF:
        body = status_pb2.Status(code=grpc_code, message=message).SerializeToString()
        return Response(body, status, media_type=PROTOBUF, headers=headers)
    payload = json.dumps({"code": grpc_code, "message": message})
    return Response(payload, status, media_type=JSON_TYPE, headers=headers)


def _check_api_key(request: Request, state: AppState) -> None:
    keys = state.ingest_keys
    if keys and not keys.accepts(bearer_token(request.headers.get("authorization"))):
        raise RequestRejected(
            401, "missing or wrong API key (Authorization: Bearer <key>)", _GRPC_UNAUTHENTICATED
        )


def _declared_length(request: Request, limit: int) -> int | None:
    """The ``Content-Length``, refused at once when over the limit; None when absent."""
    declared = request.headers.get("content-length", "").strip()
    if not declared.isdigit():
        return None
    if int(declared) > limit:
        raise RequestRejected(
            413, f"body of {declared} bytes is over the limit of {limit}", _GRPC_RESOURCE_EXHAUSTED
        )
    return int(declared)


@asynccontextmanager
async def _admitted(state: AppState, declared: int | None) -> AsyncIterator[Reservation]:
    """A slot and the body's bytes for the request, or 503 + Retry-After when busy."""
    admission, metrics = state.admission, state.metrics
    try:
        async with admission.admit(declared) as reservation:
            metrics.in_flight_requests.set(admission.requests_in_flight)
            metrics.in_flight_bytes.set(admission.bytes_in_flight)
            try:
                yield reservation
            except Busy as busy:  # a chunked body outgrew the budget while arriving
                raise _busy(state, busy) from None
    except Busy as busy:
        raise _busy(state, busy) from None
    finally:
        metrics.in_flight_requests.set(admission.requests_in_flight)
        metrics.in_flight_bytes.set(admission.bytes_in_flight)


def _busy(state: AppState, busy: Busy) -> RequestRejected:
    state.metrics.refused.labels(busy.reason).inc()
    return RequestRejected(
        503,
        f"ingest is busy ({busy.reason} in flight at the limit); nothing was stored, retry",
        _GRPC_UNAVAILABLE,
        {"Retry-After": str(state.settings.ingest_busy_retry_after_s)},
    )


async def _read_body(request: Request, limit: int, reservation: Reservation) -> bytes:
    """The body as sent, streamed so that an oversized one is refused without holding it."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestRejected(
                413, f"body is over the limit of {limit} bytes", _GRPC_RESOURCE_EXHAUSTED
            )
        reservation.account(size)
        chunks.append(chunk)
    return b"".join(chunks)


async def _read_body_in_time(
    request: Request, limit: int, reservation: Reservation, timeout_s: float
) -> bytes:
    try:
        return await asyncio.wait_for(_read_body(request, limit, reservation), timeout_s)
    except asyncio.TimeoutError:
        raise RequestRejected(
            408, f"the body did not arrive within {timeout_s:g} s", _GRPC_INVALID_ARGUMENT
        ) from None


def _check_media_type(media: str) -> None:
    if media not in (PROTOBUF, JSON_TYPE):
        raise RequestRejected(
            415,
            f"unsupported Content-Type {media or '(none)'!r}: use {PROTOBUF} or {JSON_TYPE}",
            _GRPC_INVALID_ARGUMENT,
        )


def _is_gzip(request: Request) -> bool:
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return False
    if encoding != "gzip":
        raise RequestRejected(
            415, f"unsupported Content-Encoding {encoding!r} (gzip only)", _GRPC_INVALID_ARGUMENT
        )
    return True


def _gunzip(body: bytes, limit: int) -> bytes:
    """Decompress every gzip member (RFC 1952 allows several), within ``limit``."""
    parts: list[bytes] = []
    size = 0
    rest = body
    while rest:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = decompressor.decompress(rest, limit - size + 1)
        except zlib.error as error:
            raise RequestRejected(
                400, f"body is not valid gzip: {error}", _GRPC_INVALID_ARGUMENT
            ) from error
        size += len(data)
        if size > limit or decompressor.unconsumed_tail:
            raise RequestRejected(
                413,
                f"decompressed body is over the limit of {limit} bytes",
                _GRPC_RESOURCE_EXHAUSTED,
            )
        if not decompressor.eof:
            raise RequestRejected(400, "gzip body is truncated", _GRPC_INVALID_ARGUMENT)
        parts.append(data)
        rest = decompressor.unused_data
    return b"".join(parts)


def _success(media: str, batch: DecodedBatch) -> Response:
    response = ExportTraceServiceResponse()
    if batch.rejected:
        response.partial_success.CopyFrom(
            ExportTracePartialSuccess(
                rejected_spans=len(batch.rejected), error_message=batch.error_message
            )
        )
    if media == PROTOBUF:
        return Response(response.SerializeToString(), 200, media_type=PROTOBUF)
    payload: dict[str, object] = {}
    if batch.rejected:
        payload["partialSuccess"] = {
            "rejectedSpans": str(len(batch.rejected)),
            "errorMessage": batch.error_message,
        }
    return Response(json.dumps(payload), 200, media_type=JSON_TYPE)


@router.post(
    "/v1/traces",
    summary="OTLP/HTTP trace export",
    response_class=Response,
    responses={
        200: {"description": "stored; rejected spans are counted in partial_success"},
        400: {"description": "malformed body"},
        401: {"description": "missing or wrong API key"},
        408: {"description": "the body did not arrive in time"},
        413: {"description": "body over the limit"},
        415: {"description": "unsupported content type or encoding"},
        503: {
            "description": "storage unavailable, or ingest busy; nothing was stored, retry "
            "after Retry-After seconds"
        },
    },
)
async def export_traces(request: Request, state: StateDep) -> Response:
    # Async only to stream the body in; the blocking work runs in a worker thread.
    started = time.perf_counter()
    clock = RequestClock(state.settings.ingest_request_timeout_s)
    media = _media_type(request)
    try:
        settings = state.settings
        _check_api_key(request, state)
        _check_media_type(media)
        gzipped = _is_gzip(request)
        declared = _declared_length(request, settings.max_body_bytes)
        async with _admitted(state, declared) as reservation:
            body = await _read_body_in_time(
                request, settings.max_body_bytes, reservation, settings.ingest_body_timeout_s
            )
            response = await run_in_threadpool(_store_export, state, body, gzipped, media, clock)
        if response.status_code == 200:
            _forward(state, request, body)
    except RequestRejected as rejected:
        response = _error(
            media, rejected.status, rejected.message, rejected.grpc_code, **rejected.headers
        )
    encoding = "protobuf" if media == PROTOBUF else "json" if media == JSON_TYPE else "other"
    state.metrics.requests.labels(encoding, str(response.status_code)).inc()
    state.metrics.duration.observe(time.perf_counter() - started)
    return response


def _forward(state: AppState, request: Request, body: bytes) -> None:
    """Queue the body as received (still gzip if it came gzip) with its own headers."""
    try:
        state.forwarder.submit(
            body, request.headers.get("content-type", ""), request.headers.get("content-encoding")
        )
    except Exception:  # the export is stored and answered; forwarding must not fail it
        logger.exception("ctxledger collector: could not queue an export for forwarding")


def _store_export(
    state: AppState, body: bytes, gzipped: bool, media: str, clock: RequestClock
) -> Response:
    """Decompress, decode and store one export, a chunk at a time; the answer once every
    chunk is committed. When the database cannot take it (or earlier exports still wait
    in the spool, which keeps them in order) the export goes to the spool instead, and is
    answered once it is on disk there. An outage halfway spools the whole export: its
    replay stores the chunks already stored again, which changes nothing (upserts).
    Past the request time limit the remaining chunks are rejected instead of stored
    (:mod:`..deadline`)."""
    received = body
    if state.spool.has_backlog():
        return _spool_export(state, received, gzipped, media)
    if gzipped:
        body = _gunzip(body, state.settings.max_decompressed_bytes)
    try:
        stored = _decode_and_store(state, body, media, clock)
    except MalformedRequest as error:
        raise RequestRejected(400, str(error), _GRPC_INVALID_ARGUMENT) from error
    except TooManySpans as error:
        raise RequestRejected(413, str(error), _GRPC_RESOURCE_EXHAUSTED) from error
    except StatementError as error:
        if not is_storage_outage(error):
            raise
        logger.warning("ctxledger collector: storage unavailable: %s", error)
        return _spool_export(state, received, gzipped, media, body)
    return _success(media, stored)


def _decode_and_store(
    state: AppState, body: bytes, media: str, clock: RequestClock | None = None
) -> DecodedBatch:
    """Store a decompressed body chunk by chunk; what was rejected, with reasons.
    Raises MalformedRequest, TooManySpans, and StatementError on an outage."""
    stored = DecodedBatch()
    settings = state.settings
    chunks = decode_export_chunks(
        body,
        media,
        settings.ingest_chunk_spans,
        settings.store_message_content,
        settings.decode_limits(),
    )
    for chunk in chunks:
        if clock is None or clock.may_store():
            done = _store(state, fit_to_columns(chunk))
            if clock is not None:
                clock.chunks_stored += 1
        else:
            done = past_deadline(chunk, settings.ingest_request_timeout_s)
        _count_spans(state, done)
        _log_rejections(state, done.rejected)
        stored.rejected.extend(done.rejected)
    return stored


def _log_rejections(state: AppState, rejected: list[Rejection]) -> None:
    """Count the rejections by reason and list them for ``GET /api/v1/rejections``.
    An outage raises (the export is answered 503 and retried); any other failure to
    list them is logged: the spans stay rejected and counted either way."""
    for code, count in reason_counts(rejected).items():
        state.metrics.rejected_spans.labels(code).inc(count)
    try:
        record_rejections(state.engine, rejected, state.settings.rejections_kept)
    except StatementError as error:
        if is_storage_outage(error):
            raise
        logger.warning(
            "ctxledger collector: could not list %d rejections: %s", len(rejected), error
        )


def _spool_export(
    state: AppState, received: bytes, gzipped: bool, media: str, body: bytes | None = None
) -> Response:
    """Keep an export the database cannot take now on local disk and answer 200, or 503
    + Retry-After when there is no spool or no room in it. The export is decoded first,
    so what would be refused (400) or rejected (partial success) is answered now."""
    if body is None:
        body = _gunzip(received, state.settings.max_decompressed_bytes) if gzipped else received
    checked = DecodedBatch()
    spans = 0
    try:
        settings = state.settings
        chunks = decode_export_chunks(
            body, media, settings.ingest_chunk_spans, limits=settings.decode_limits()
        )
        for chunk in chunks:
            checked.rejected.extend(fit_to_columns(chunk).rejected)
            spans += len(chunk.measurements) + len(chunk.manifests)
    except MalformedRequest as error:
        raise RequestRejected(400, str(error), _GRPC_INVALID_ARGUMENT) from error
    except TooManySpans as error:
        raise RequestRejected(413, str(error), _GRPC_RESOURCE_EXHAUSTED) from error
    outcome = state.spool.offer(SpooledExport(received, media, gzipped), spans)
    state.metrics.spooled.labels(outcome).inc()
    if outcome == "kept":
        if state.replayer is not None:
            state.replayer.wake()
        return _success(media, checked)
    why = {
        "off": "",
        "full": " and the spool is full",
        "failed": " and the spool cannot be written",
    }
    return _error(
        media,
        503,
        f"storage unavailable{why[outcome]}; the batch was not stored, retry",
        _GRPC_UNAVAILABLE,
        **{"Retry-After": str(state.settings.retry_after_s)},
    )


def replay_spooled(state: AppState, export: SpooledExport) -> None:
    """Store one spooled export (the replayer's work). Raises StorageUnavailable while
    the database is still out, Discarded for a body that no longer decodes."""
    try:
        body = export.body
        if export.gzipped:
            body = _gunzip(body, state.settings.max_decompressed_bytes)
        stored = _decode_and_store(state, body, export.media)
    except (MalformedRequest, TooManySpans, RequestRejected) as error:
        raise Discarded(str(error)) from error
    except StatementError as error:
        if is_storage_outage(error):
            raise StorageUnavailable(str(error)) from error
        raise
    if stored.rejected:
        logger.warning(
            "ctxledger collector: a spooled export was stored with %d spans rejected: %s",
            len(stored.rejected),
            stored.error_message,
        )


def _count_spans(state: AppState, batch: DecodedBatch) -> None:
    spans = state.metrics.spans
    spans.labels("measurement").inc(len(batch.measurements))
    spans.labels("manifest").inc(len(batch.manifests))
    spans.labels("ignored").inc(batch.ignored)
    spans.labels("rejected").inc(len(batch.rejected))


def _store(state: AppState, batch: DecodedBatch) -> DecodedBatch:
    """Store the batch in one transaction; if the database refuses part of it, store it
    span by span so that only the spans it refuses are rejected, with its reason."""
    try:
        outcome = state.store.ingest(batch)
    except StatementError as error:
        if is_storage_outage(error):
            raise
        logger.warning("ctxledger collector: batch refused (%s); isolating", error)
        return replace(batch, rejected=[*batch.rejected, *state.store.ingest_each(batch)])
    state.readiness.note_commit()
    state.metrics.count_changes(outcome.changes)
    return batch
