"""The request time limit of ingest: what a chunk past the deadline becomes.

A large export is stored a chunk at a time. Once an export has taken longer than
``ingest_request_timeout_s``, no further chunk is stored: its spans are rejected
(reason ``request_deadline``) so that the export is answered in bounded time, the spans
already stored stay stored, and the refused ones are counted and listed by id — never
dropped unseen. The first chunk is always stored, so every export makes progress.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ctxledger.verdicts import Manifest, Measurement
from ctxledger_collector.decoded.batch import DecodedBatch
from ctxledger_collector.decoded.rejection_codes import REQUEST_DEADLINE, Rejection


@dataclass
class RequestClock:
    """When the export arrived and how long it may take."""

    timeout_s: float
    started: float = field(default_factory=time.monotonic)
    chunks_stored: int = 0

    def may_store(self) -> bool:
        return self.chunks_stored == 0 or time.monotonic() - self.started <= self.timeout_s


def past_deadline(chunk: DecodedBatch, timeout_s: float) -> DecodedBatch:
    """The chunk with every span it would have stored rejected instead (one rejection
    per span: a derived span may have given several records)."""
    detail = (
        f"the export took longer than {timeout_s:g} s to store; this span was not "
        "stored: send it again, in smaller batches"
    )
    refused: dict[tuple[str, str], Rejection] = {}
    records: list[tuple[Measurement | Manifest, str | None]] = [
        *((m.measurement, m.service_name) for m in chunk.measurements),
        *((m.manifest, m.service_name) for m in chunk.manifests),
        *((u.stage.measurement, None) for u in chunk.unmatched),
    ]
    for record, service in records:
        key = (record.trace_id, record.span_id or "")
        refused.setdefault(key, Rejection(*key, detail, REQUEST_DEADLINE, service))
    return DecodedBatch(rejected=[*chunk.rejected, *refused.values()], ignored=chunk.ignored)
