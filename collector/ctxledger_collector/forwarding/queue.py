"""One destination's queue of requests to forward: bounded by requests and by bytes;
when full, the oldest requests make room for the new one.

``put`` runs on the server's event loop and must never wait: the lock is held only for
a few list operations by either side (the sender never holds it while sending), and
each request is dropped at most once, so a put costs O(1) amortized.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import NamedTuple


class QueueSize(NamedTuple):
    """A destination's queue as the metrics show it."""

    destination: str
    requests: int
    bytes: int


@dataclass(frozen=True)
class ForwardRequest:
    """An accepted export exactly as it arrived: its own bytes, never the decoded batch."""

    body: bytes
    content_type: str
    content_encoding: str | None
    #: ``traces`` (to the destination's URL) or ``logs`` (to its logs URL).
    signal: str = "traces"

    @property
    def size(self) -> int:
        return len(self.body)


class ForwardQueue:
    def __init__(self, max_requests: int, max_bytes: int) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self._items: deque[ForwardRequest] = deque()
        self._bytes = 0
        self._closed = False
        self._changed = threading.Condition()

    @property
    def requests(self) -> int:
        return len(self._items)

    @property
    def bytes(self) -> int:
        return self._bytes

    def put(self, request: ForwardRequest) -> list[ForwardRequest]:
        """Queue ``request``; returns the requests dropped to make room: the oldest
        ones, or ``request`` itself when it is larger than the whole byte bound."""
        if request.size > self.max_bytes:
            return [request]
        dropped: list[ForwardRequest] = []
        with self._changed:
            while self._items and (
                len(self._items) >= self.max_requests or self._bytes + request.size > self.max_bytes
            ):
                oldest = self._items.popleft()
                self._bytes -= oldest.size
                dropped.append(oldest)
            self._items.append(request)
            self._bytes += request.size
            self._changed.notify()
        return dropped

    def get(self) -> ForwardRequest | None:
        """The oldest request, waiting for one; None once the queue is closed and empty."""
        with self._changed:
            while not self._items:
                if self._closed:
                    return None
                self._changed.wait()
            request = self._items.popleft()
            self._bytes -= request.size
            return request

    def close(self) -> None:
        """Wake the sender: :meth:`get` returns what is left, then None."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def drain(self) -> list[ForwardRequest]:
        """Take every request still queued."""
        with self._changed:
            left = list(self._items)
            self._items.clear()
            self._bytes = 0
            return left
