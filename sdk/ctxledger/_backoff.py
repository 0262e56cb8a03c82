"""When the export thread may try the collector again after it did not take a batch."""

from __future__ import annotations

import time


class Backoff:
    """The collector's ``Retry-After`` when it gave one (never sooner than ``floor_s``, the
    pipeline's own cadence), else 1 s doubling up to ``max_s``."""

    def __init__(self, floor_s: float, max_s: float) -> None:
        self._floor_s = floor_s
        self._max_s = max_s
        self.failures = 0
        """Failed attempts in a row."""
        self._not_before = 0.0  # monotonic

    def ready(self) -> bool:
        return time.monotonic() >= self._not_before

    def failed(self, retry_after_s: float | None) -> float:
        """Count a failed attempt; the wait before the next one, in seconds."""
        self.failures += 1
        if retry_after_s is None:
            wait = min(2.0 ** (self.failures - 1), self._max_s)
        else:
            wait = max(retry_after_s, self._floor_s)
        self._not_before = time.monotonic() + wait
        return wait

    def succeeded(self) -> bool:
        """The collector answered; True if attempts had been failing until now."""
        was_failing = self.failures > 0
        self.failures = 0
        self._not_before = 0.0
        return was_failing
