"""``POST /v1/traces`` and ``POST /v1/logs``: OTLP/HTTP ingest, protobuf or JSON,
optionally gzip, one path for both (contract sections 1 and 8): the same keys, limits,
admission, spool and answers; a logs export answers ``rejected_log_records``.

Status codes: 200 with partial success for rejected spans, 400 for a malformed body,
401 for a missing or wrong API key, 408 for a body that did not arrive in time, 413 for
a body over the limit, 415 for an unsupported content type or encoding, 503 with
Retry-After when storage is down, ingest is busy or the collector is shutting down
before it could finish the export (:mod:`ctxledger_collector.ingest.shutdown_drain`), so that
standard exporters retry. The
answer is sent only after the batch is committed.

Admission (:mod:`ctxledger_collector.ingest.admission`) comes before the body is read: a
request that finds no slot and no room in the in-flight byte budget within a short wait
is refused from its headers alone, so refused work costs neither memory nor decoding.
A gzip body is inflated piece by piece (:mod:`ctxledger_collector.ingest.gzip_bodies`), each
piece reserved in the budget as it grows, and dropped at once when refused.

An export answered 200 (partial success included) is handed, exactly as it arrived, to
the forwarder (:mod:`ctxledger_collector.forwarding`) when destinations are configured;
refused ones (4xx, 503) are not: the client retries a 503, and a 4xx would be refused
downstream too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool

from ctxledger_collector.ingest.admission import Busy, Reservation
from ctxledger_collector.ingest.deadline import RequestClock
from ctxledger_collector.ingest.otlp_decode import (
    JSON_TYPE,
    LOGS,
    PROTOBUF,
    TRACES,
    Signal,
)
from ctxledger_collector.ops.keys import BEARER_CHALLENGE, bearer_token
from ctxledger_collector.routes.deps import StateDep
from ctxledger_collector.routes.ingest_storage import store_export
from ctxledger_collector.routes.otlp_answers import (
    GRPC_INVALID_ARGUMENT,
    GRPC_RESOURCE_EXHAUSTED,
    GRPC_UNAUTHENTICATED,
    GRPC_UNAVAILABLE,
    RequestRejected,
    error_answer,
)
from ctxledger_collector.routes.state import AppState

logger = logging.getLogger("ctxledger.collector")

router = APIRouter(tags=["ingest"])


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _check_api_key(request: Request, state: AppState) -> None:
    keys = state.ingest_keys
    if keys and not keys.accepts(bearer_token(request.headers.get("authorization"))):
        raise RequestRejected(
            401,
            "missing or wrong API key (Authorization: Bearer <key>)",
            GRPC_UNAUTHENTICATED,
            BEARER_CHALLENGE,
        )


def _declared_length(request: Request, limit: int) -> int | None:
    """The ``Content-Length``, refused at once when over the limit; None when absent."""
    declared = request.headers.get("content-length", "").strip()
    if not declared.isdigit():
        return None
    if int(declared) > limit:
        raise RequestRejected(
            413, f"body of {declared} bytes is over the limit of {limit}", GRPC_RESOURCE_EXHAUSTED
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
        GRPC_UNAVAILABLE,
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
                413, f"body is over the limit of {limit} bytes", GRPC_RESOURCE_EXHAUSTED
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
            408, f"the body did not arrive within {timeout_s:g} s", GRPC_INVALID_ARGUMENT
        ) from None


def _check_media_type(media: str) -> None:
    if media not in (PROTOBUF, JSON_TYPE):
        raise RequestRejected(
            415,
            f"unsupported Content-Type {media or '(none)'!r}: use {PROTOBUF} or {JSON_TYPE}",
            GRPC_INVALID_ARGUMENT,
        )


def _is_gzip(request: Request) -> bool:
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return False
    if encoding != "gzip":
        raise RequestRejected(
            415, f"unsupported Content-Encoding {encoding!r} (gzip only)", GRPC_INVALID_ARGUMENT
        )
    return True


def _answers(rejected: str) -> dict[int | str, dict[str, str]]:
    return {
        200: {"description": f"stored; rejected {rejected} are counted in partial_success"},
        400: {"description": "malformed body"},
        401: {"description": "missing or wrong API key"},
        408: {"description": "the body did not arrive in time"},
        413: {"description": "body over the limit"},
        415: {"description": "unsupported content type or encoding"},
        503: {
            "description": "storage unavailable, ingest busy, or the collector shutting "
            "down; nothing (or not all) was stored, retry after Retry-After seconds"
        },
    }


@router.post(
    "/v1/traces",
    summary="OTLP/HTTP trace export",
    response_class=Response,
    responses=_answers("spans"),
)
async def export_traces(request: Request, state: StateDep) -> Response:
    return await _export_signal(request, state, TRACES)


@router.post(
    "/v1/logs",
    summary="OTLP/HTTP logs export (the log events agent runtimes report)",
    response_class=Response,
    responses=_answers("log records"),
)
async def export_logs(request: Request, state: StateDep) -> Response:
    return await _export_signal(request, state, LOGS)


async def _export_signal(request: Request, state: AppState, signal: Signal) -> Response:
    answer = await state.drain.unless_shutting_down(_export(request, state, signal))
    if answer is None:  # the collector is exiting before it could finish this export
        answer = error_answer(
            _media_type(request),
            503,
            "the collector is shutting down; this export was not (wholly) stored, retry",
            GRPC_UNAVAILABLE,
            **{"Retry-After": str(state.settings.retry_after_s)},
        )
        encoding = "protobuf" if answer.media_type == PROTOBUF else "json"
        state.metrics.requests.labels(encoding, "503").inc()
    return answer


async def _export(request: Request, state: AppState, signal: Signal) -> Response:
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
            response = await run_in_threadpool(
                store_export, state, body, gzipped, media, clock, reservation, signal
            )
        if response.status_code == 200:
            _forward(state, request, body, signal)
    except RequestRejected as rejected:
        response = error_answer(
            media, rejected.status, rejected.message, rejected.grpc_code, **rejected.headers
        )
    encoding = "protobuf" if media == PROTOBUF else "json" if media == JSON_TYPE else "other"
    state.metrics.requests.labels(encoding, str(response.status_code)).inc()
    state.metrics.duration.observe(time.perf_counter() - started)
    return response


def _forward(state: AppState, request: Request, body: bytes, signal: Signal) -> None:
    """Queue the body as received (still gzip if it came gzip) with its own headers."""
    try:
        state.forwarder.submit(
            body,
            request.headers.get("content-type", ""),
            request.headers.get("content-encoding"),
            signal,
        )
    except Exception:  # the export is stored and answered; forwarding must not fail it
        logger.exception("ctxledger collector: could not queue an export for forwarding")
