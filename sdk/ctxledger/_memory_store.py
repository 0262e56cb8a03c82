"""Where a batch that could not be exported waits when there is no spool (turned off, or
it cannot be written): in memory, oldest first, gone with the process."""

from __future__ import annotations

import itertools
import threading
from collections import deque

from ctxledger._spool import Claim


class MemoryStore:
    """Serialized batches waiting to be sent again, with the same claim protocol as the
    disk spool. Bounded by the caller (see ``BufferedSpanProcessor``), which drops the
    oldest batch with :meth:`drop_oldest`."""

    def __init__(self) -> None:
        self._batches: deque[Claim] = deque()
        self._spans = 0
        self._seq = itertools.count()
        self._lock = threading.Lock()

    @property
    def spans(self) -> int:
        return self._spans

    def put(self, body: bytes, spans: int) -> None:
        with self._lock:
            self._batches.append(Claim(f"{next(self._seq):012d}", spans, body=body))
            self._spans += spans

    def claim(self) -> Claim | None:
        with self._lock:
            if not self._batches:
                return None
            claim = self._batches.popleft()
            self._spans -= claim.spans
            return claim

    def release(self, claim: Claim) -> None:
        """Back at the front: it is older than anything put since it was claimed."""
        with self._lock:
            self._batches.appendleft(claim)
            self._spans += claim.spans

    def drop_oldest(self) -> int:
        """Forget the oldest batch; the spans it held (0 when empty)."""
        with self._lock:
            if not self._batches:
                return 0
            dropped = self._batches.popleft()
            self._spans -= dropped.spans
            return dropped.spans

    def drain(self) -> int:
        """Forget everything; the spans it held."""
        with self._lock:
            spans, self._spans = self._spans, 0
            self._batches.clear()
            return spans
