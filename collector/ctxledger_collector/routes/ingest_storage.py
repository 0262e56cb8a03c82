"""Storing an export (the ingest route's blocking half, run in a worker thread) and
replaying a spooled one: decode chunk by chunk, store each in its transaction, list the
rejections; on a storage outage, or while earlier exports wait in the spool, keep the
export in the spool and answer once it is on disk there."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from fastapi import Response
from sqlalchemy.exc import StatementError

from ctxledger_collector.decoded.batch import DecodedBatch
from ctxledger_collector.decoded.rejection_codes import Rejection
from ctxledger_collector.ingest.admission import Busy, Reservation
from ctxledger_collector.ingest.deadline import RequestClock
from ctxledger_collector.ingest.otlp_decode import (
    LOGS,
    TRACES,
    MalformedRequest,
    Signal,
    TooManySpans,
    decode_export_chunks,
)
from ctxledger_collector.ingest.spool import SpooledExport
from ctxledger_collector.ingest.spool_replay import Discarded, StorageUnavailable
from ctxledger_collector.routes.otlp_answers import (
    GRPC_INVALID_ARGUMENT,
    GRPC_RESOURCE_EXHAUSTED,
    RequestRejected,
    error_answer,
    gunzip,
    success_answer,
)
from ctxledger_collector.routes.spool_answers import offer_to_spool, spool_export
from ctxledger_collector.routes.state import AppState
from ctxledger_collector.storage.column_limits import fit_to_columns
from ctxledger_collector.storage.database import is_storage_outage
from ctxledger_collector.storage.log_records import store_log_records, store_log_records_each
from ctxledger_collector.storage.rejection_log import reason_counts, record_rejections

logger = logging.getLogger("ctxledger.collector")


def store_export(
    state: AppState,
    body: bytes,
    gzipped: bool,
    media: str,
    clock: RequestClock,
    reservation: Reservation | None = None,
    signal: Signal = TRACES,
) -> Response:
    """Decompress, decode and store one export, a chunk at a time; the answer once every
    chunk is committed. When the database cannot take it (or earlier exports still wait
    in the spool, which keeps them in order) the export goes to the spool instead, and is
    answered once it is on disk there. An outage halfway spools the whole export: its
    replay stores the chunks already stored again, which changes nothing (upserts).
    Past the request time limit the remaining chunks are rejected instead of stored
    (:mod:`..deadline`). A gzip body reserves its inflated bytes in ``reservation`` as
    they grow, which may refuse it (:class:`Busy`).

    A refused export is answered here, not raised: an exception that crosses the thread
    pool's future is kept by reference cycles, with the frames its traceback reaches
    (the body and what it inflated to), until the garbage collector runs. A
    :class:`Busy` still leaves as an exception, a fresh one without that traceback."""
    busy_reason: str
    try:
        return _store_export(state, body, gzipped, media, clock, reservation, signal)
    except RequestRejected as rejected:
        return error_answer(
            media, rejected.status, rejected.message, rejected.grpc_code, **rejected.headers
        )
    except Busy as busy:
        busy_reason = busy.reason
    del body
    raise Busy(busy_reason)


def _store_export(
    state: AppState,
    body: bytes,
    gzipped: bool,
    media: str,
    clock: RequestClock,
    reservation: Reservation | None,
    signal: Signal,
) -> Response:
    received = body
    on_growth = _inflation_budget(state, reservation, len(received))
    if state.spool.has_backlog() and not (
        state.replayer is not None and state.replayer.help_drain()
    ):
        return spool_export(state, received, gzipped, media, signal, on_growth=on_growth)
    if gzipped:
        body = gunzip(body, state.settings.max_decompressed_bytes, on_growth)
    kept_late: list[DecodedBatch] = []

    def hand_over() -> bool:
        """Past the deadline: the whole export to the spool (True once it is on disk)."""
        outcome, checked = offer_to_spool(state, received, gzipped, media, signal, body)
        if outcome == "kept":
            kept_late.append(checked)
        return outcome == "kept"

    try:
        stored = _decode_and_store(state, body, media, signal, clock, hand_over=hand_over)
    except MalformedRequest as error:
        raise RequestRejected(400, str(error), GRPC_INVALID_ARGUMENT) from error
    except TooManySpans as error:
        raise RequestRejected(413, str(error), GRPC_RESOURCE_EXHAUSTED) from error
    except StatementError as error:
        if not is_storage_outage(error):
            raise
        logger.warning("ctxledger collector: storage unavailable: %s", error)
        return spool_export(state, received, gzipped, media, signal, body)
    if kept_late:  # the spool stores the rest: what was refused so far, and in the rest
        return success_answer(media, _merged(stored, kept_late[0]), signal)
    return success_answer(media, stored, signal)


def _merged(stored: DecodedBatch, checked: DecodedBatch) -> DecodedBatch:
    """The rejections of the chunks stored and of the whole export's check, each span once."""
    unique = {(r.trace_id, r.span_id): r for r in (*stored.rejected, *checked.rejected)}
    return DecodedBatch(rejected=list(unique.values()))


def _inflation_budget(
    state: AppState, reservation: Reservation | None, received: int
) -> Callable[[int], None] | None:
    """Reserve the body and its inflated bytes so far, as a gzip body inflates."""
    if reservation is None:
        return None

    def grow(inflated: int) -> None:
        reservation.grow_from_worker(received + inflated)
        state.metrics.in_flight_bytes.set(state.admission.bytes_in_flight)

    return grow


def _decode_and_store(
    state: AppState,
    body: bytes,
    media: str,
    signal: Signal,
    clock: RequestClock | None = None,
    replayed: bool = False,
    hand_over: Callable[[], bool] | None = None,
) -> DecodedBatch:
    """Store a decompressed body chunk by chunk; what was rejected, with reasons (listed
    and counted, marked ``replayed`` for a spooled export's replay). Past the request
    time limit the export is handed over (``hand_over``: the spool keeps all of it) and
    storing stops; if it cannot be, storing goes on (:mod:`..deadline`).
    Raises MalformedRequest, TooManySpans, and StatementError on an outage."""
    stored = DecodedBatch()
    settings = state.settings
    chunks = decode_export_chunks(
        body,
        media,
        settings.ingest_chunk_spans,
        settings.store_message_content,
        settings.decode_limits(),
        signal,
        settings.body_files(),
    )
    for chunk in chunks:
        if clock is not None and state.drain.answered:
            break  # answered 503 at shutdown: the client sends the whole export again
        if clock is not None and clock.past_deadline():
            if hand_over is not None and hand_over():
                break  # kept in the spool whole: the replayer stores the rest
            clock.spool_refused = True
            logger.warning(
                "ctxledger collector: an export ran past CTXLEDGER_INGEST_REQUEST_TIMEOUT_S "
                "(%g s) and the spool cannot take it; it is stored in the request to its end",
                settings.ingest_request_timeout_s,
            )
        done = _store(state, fit_to_columns(chunk))
        if clock is not None:
            clock.chunks_stored += 1
        _count_spans(state, done, signal)
        _log_rejections(state, done.rejected, replayed)
        stored.rejected.extend(done.rejected)
    return stored


def _log_rejections(state: AppState, rejected: list[Rejection], replayed: bool) -> None:
    """Count the rejections by reason and list them for ``GET /api/v1/rejections``.
    An outage raises (the export is answered 503 and retried); any other failure to
    list them is logged: the spans stay rejected and counted either way."""
    for code, count in reason_counts(rejected).items():
        state.metrics.rejected_spans.labels(code).inc(count)
    try:
        settings = state.settings
        record_rejections(
            state.engine,
            rejected,
            settings.rejections_kept,
            replayed=replayed,
            max_age_s=settings.rejections_max_age_s,
        )
    except StatementError as error:
        if is_storage_outage(error):
            raise
        logger.warning(
            "ctxledger collector: could not list %d rejections: %s", len(rejected), error
        )


def replay_spooled(state: AppState, export: SpooledExport) -> None:
    """Store one spooled export (the replayer's work); the spans refused now are listed
    at ``GET /api/v1/rejections`` (marked ``replayed``) and counted in ``/metrics`` as at
    live ingest. Raises StorageUnavailable while the database is still out, Discarded
    for a body that no longer decodes."""
    try:
        body = export.body
        if export.gzipped:
            body = gunzip(body, state.settings.max_decompressed_bytes)
        stored = _decode_and_store(state, body, export.media, export.signal, replayed=True)
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


def _count_spans(state: AppState, batch: DecodedBatch, signal: Signal) -> None:
    if signal == LOGS:
        records = state.metrics.log_records
        records.labels("stored").inc(len(batch.log_records))
        records.labels("ignored").inc(batch.ignored)
        records.labels("rejected").inc(len(batch.rejected))
        return
    spans = state.metrics.spans
    spans.labels("measurement").inc(batch.stage_count)
    spans.labels("manifest").inc(len(batch.manifests))
    spans.labels("ignored").inc(batch.ignored)
    spans.labels("rejected").inc(len(batch.rejected))


def _store(state: AppState, batch: DecodedBatch) -> DecodedBatch:
    """Store the batch in one transaction; if the database refuses part of it, store it
    span by span so that only the spans it refuses are rejected, with its reason."""
    if batch.log_records:
        batch = _store_log_records(state, batch)
        if not (batch.measurements or batch.manifests):
            return batch
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


def _store_log_records(state: AppState, batch: DecodedBatch) -> DecodedBatch:
    """Store the batch's log records in one transaction; if the database refuses it,
    record by record so that only the records it refuses are rejected."""
    try:
        store_log_records(state.engine, batch.log_records, writer=state.store.writer)
    except StatementError as error:
        if is_storage_outage(error):
            raise
        logger.warning("ctxledger collector: log records refused (%s); isolating", error)
        refused = store_log_records_each(state.engine, batch.log_records, writer=state.store.writer)
        return replace(batch, rejected=[*batch.rejected, *refused])
    state.readiness.note_commit()
    return batch
