"""Decode an OTLP/HTTP ``ExportLogsServiceRequest``: the records the audit reads (stored
as they are) and what the runtimes' events among them show (Claude Code's request
bodies: manifests and stages, derived as spans' are). Pure but for the request body
files the operator allowed (:mod:`.body_files`)."""

from __future__ import annotations

from collections.abc import Iterator

from ctxledger_collector.decoded.batch import DecodedBatch, DecodedLogRecord
from ctxledger_collector.decoded.rejection_codes import Rejection
from ctxledger_collector.derive import LogDerivation, LogEvent
from ctxledger_collector.derive.claude_code_logs import REQUEST_BODY_EVENT
from ctxledger_collector.ingest.audited_logs import decoded_log_record, record_text
from ctxledger_collector.ingest.body_files import BodyFiles, BodyText
from ctxledger_collector.ingest.derived_records import add_derived
from ctxledger_collector.ingest.media_types import by_media_type
from ctxledger_collector.ingest.otlp_logs import RawLogRecord, json_log_records, proto_log_records
from ctxledger_collector.ingest.otlp_spans import DecodeLimits

#: No body file is read unless the operator names a directory.
NO_BODY_FILES = BodyFiles()


def log_chunks(
    body: bytes,
    content_type: str,
    limits: DecodeLimits,
    chunk_records: int,
    keep_content: bool,
    body_files: BodyFiles = NO_BODY_FILES,
) -> Iterator[DecodedBatch]:
    """The body's records in batches of ``chunk_records`` (parsed whole first, so a
    malformed body raises before the first batch)."""
    records = _log_records(body, content_type, limits)
    return _log_chunks(records, chunk_records, keep_content, body_files)


def _log_records(
    body: bytes, content_type: str, limits: DecodeLimits
) -> Iterator[RawLogRecord | Rejection]:
    return by_media_type(
        content_type,
        lambda: proto_log_records(body, limits),
        lambda: json_log_records(body, limits),
    )


def _derive_log(
    raw: RawLogRecord,
    decoded: DecodedLogRecord,
    batch: DecodedBatch,
    derivation: LogDerivation,
    body_files: BodyFiles,
) -> None:
    """The records a runtime's log event gives (its body read in memory, then dropped;
    a request body in a file read where the operator allowed it)."""
    body = BodyText(record_text(raw, decoded.event_name))
    if body.text is None and decoded.body_ref and decoded.event_name == REQUEST_BODY_EVENT:
        body = body_files.read(decoded.body_ref)
    event = LogEvent(
        event_name=decoded.event_name,
        time_us=decoded.time_us,
        attributes=raw.attributes,
        text=body.text,
        truncated=decoded.truncated,
        service_name=decoded.service_name,
        scope_name=decoded.scope_name,
        unread=body.unread,
        trace_id=decoded.trace_id,
    )
    derived = derivation.derive(event)
    if derived is not None:
        batch.derived += 1
        add_derived(derived, batch, decoded.service_name)


def _log_chunks(
    records: Iterator[RawLogRecord | Rejection],
    chunk_records: int,
    keep_content: bool,
    body_files: BodyFiles,
) -> Iterator[DecodedBatch]:
    batch = DecodedBatch()
    derivation = LogDerivation(keep_content)  # pairs requests with their usage
    for record in records:
        if isinstance(record, Rejection):
            batch.rejected.append(record)
            continue
        decoded = decoded_log_record(record, keep_content)
        if decoded is None:
            batch.ignored += 1
            continue
        batch.log_records.append(decoded)
        _derive_log(record, decoded, batch, derivation, body_files)
        if len(batch.log_records) >= chunk_records:
            yield batch
            batch = DecodedBatch()
    yield batch
