"""An export kept in the ingest spool instead of stored now (the database is out, earlier
exports wait there, or it ran past the request time limit): decoded first, to check it
and count its spans, then offered to the spool; answered 200 once it is on disk, else
503 + Retry-After."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Response

from ctxledger_collector.decoded.batch import DecodedBatch
from ctxledger_collector.ingest.otlp_decode import (
    MalformedRequest,
    Signal,
    TooManySpans,
    decode_export_chunks,
)
from ctxledger_collector.ingest.spool import Offer, SpooledExport
from ctxledger_collector.routes.otlp_answers import (
    GRPC_INVALID_ARGUMENT,
    GRPC_RESOURCE_EXHAUSTED,
    GRPC_UNAVAILABLE,
    RequestRejected,
    error_answer,
    gunzip,
    success_answer,
)
from ctxledger_collector.routes.state import AppState
from ctxledger_collector.storage.column_limits import fit_to_columns


def spool_export(
    state: AppState,
    received: bytes,
    gzipped: bool,
    media: str,
    signal: Signal,
    body: bytes | None = None,
    on_growth: Callable[[int], None] | None = None,
) -> Response:
    """Keep an export the database cannot take now on local disk and answer 200, or 503
    + Retry-After when there is no spool or no room in it. The export is decoded first,
    so what would be refused (400) or rejected (partial success) is answered now."""
    if body is None:
        limit = state.settings.max_decompressed_bytes
        body = gunzip(received, limit, on_growth) if gzipped else received
    outcome, checked = offer_to_spool(state, received, gzipped, media, signal, body)
    if outcome == "kept":
        return success_answer(media, checked, signal)
    why = {
        "off": "",
        "full": " and the spool is full",
        "failed": " and the spool cannot be written",
    }
    return error_answer(
        media,
        503,
        f"storage unavailable{why[outcome]}; the batch was not stored, retry",
        GRPC_UNAVAILABLE,
        **{"Retry-After": str(state.settings.retry_after_s)},
    )


def offer_to_spool(
    state: AppState, received: bytes, gzipped: bool, media: str, signal: Signal, body: bytes
) -> tuple[Offer, DecodedBatch]:
    """Decode the export (``body``, decompressed) to check it and count its spans, then
    offer it, as ``received``, to the spool: the spool's answer and what it would reject.
    Raises RequestRejected for a body that does not decode."""
    checked = DecodedBatch()
    spans = 0
    try:
        settings = state.settings
        chunks = decode_export_chunks(
            body,
            media,
            settings.ingest_chunk_spans,
            limits=settings.decode_limits(),
            signal=signal,
        )
        for chunk in chunks:
            checked.rejected.extend(fit_to_columns(chunk).rejected)
            spans += chunk.stage_count + len(chunk.manifests) + len(chunk.log_records)
    except MalformedRequest as error:
        raise RequestRejected(400, str(error), GRPC_INVALID_ARGUMENT) from error
    except TooManySpans as error:
        raise RequestRejected(413, str(error), GRPC_RESOURCE_EXHAUSTED) from error
    outcome = state.spool.offer(SpooledExport(received, media, gzipped, signal), spans)
    state.metrics.spooled.labels(outcome).inc()
    if outcome == "kept" and state.replayer is not None:
        state.replayer.wake()
    return outcome, checked
