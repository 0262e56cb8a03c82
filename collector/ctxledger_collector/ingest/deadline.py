"""The request time limit of ingest: when a large export stops being stored in the
request and is handed to the spool instead.

A large export is stored a chunk at a time. Once an export has taken longer than
``ingest_request_timeout_s``, the whole export is kept in the ingest spool (fsynced)
and answered 200 there; the replayer stores it in the background, and the chunks already
stored are stored again, which changes nothing (upserts). Without a spool that can take
it (off, full, not writable) the export goes on being stored in the request: it is
answered later, never with a span acknowledged and not stored. The first chunk is always
stored in the request, so every export makes progress.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class RequestClock:
    """When the export arrived and how long it may be stored in the request."""

    timeout_s: float
    started: float = field(default_factory=time.monotonic)
    chunks_stored: int = 0
    spool_refused: bool = False
    """True once the spool could not take the export past the deadline: it is stored
    here to its end."""

    def past_deadline(self) -> bool:
        """Whether the export should be handed to the spool now."""
        if self.spool_refused or self.chunks_stored == 0:
            return False
        return time.monotonic() - self.started > self.timeout_s
