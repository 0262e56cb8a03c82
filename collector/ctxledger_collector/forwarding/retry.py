"""Which answers of a destination are retried, and how long to wait before the retry.

A 2xx answer delivers. 408, 429 and every 5xx are transient, as are connection errors
and timeouts: retried with exponential backoff (with jitter), waiting at least what
``Retry-After`` asks. Any other answer (400, 401, 404, 413, 415, a redirect, ...) would
be the same the next time: the request is given up.
"""

from __future__ import annotations

import datetime
import email.utils
import time
from dataclasses import dataclass
from enum import Enum
from typing import Literal

#: Client errors that are transient: the request timed out, or the client is throttled.
_RETRIED_CLIENT_ERRORS = frozenset({408, 429})


class Verdict(Enum):
    DELIVERED = "delivered"
    RETRY = "retry"
    GIVE_UP = "give_up"


def verdict_of(status: int) -> Verdict:
    if 200 <= status < 300:
        return Verdict.DELIVERED
    if status >= 500 or status in _RETRIED_CLIENT_ERRORS:
        return Verdict.RETRY
    return Verdict.GIVE_UP


@dataclass(frozen=True)
class RetryPolicy:
    base_s: float
    """The first retry's delay; doubled for each further one."""
    max_backoff_s: float
    """The exponential backoff stops growing here (a longer Retry-After is still honored)."""
    max_elapsed_s: float
    """A request still undelivered when its next retry would start later than this after
    its first attempt is given up."""

    def delay_s(
        self, retry: int, retry_after: str | None, jitter: float, now: float | None = None
    ) -> float:
        """Seconds before retry number ``retry`` (1, 2, ...): the backoff, scaled by
        ``jitter`` (0 → half of it, 1 → all of it), or the ``Retry-After``, whichever
        is longer."""
        backoff = min(self.max_backoff_s, self.base_s * 2.0 ** max(retry - 1, 0))
        scaled = backoff * (0.5 + 0.5 * min(max(jitter, 0.0), 1.0))
        asked = retry_after_s(retry_after, time.time() if now is None else now)
        return max(scaled, asked or 0.0)


def retry_after_s(value: str | None, now: float) -> float | None:
    """``Retry-After`` in seconds: delay-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:  # "-0000": UTC, by RFC 5322
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return max(moment.timestamp() - now, 0.0)


Outcome = Literal["delivered", "retried", "dropped_full", "given_up", "dropped_shutdown"]
#: Every outcome a forwarded request is counted under, in the metrics' order.
OUTCOMES: tuple[Outcome, ...] = (
    "delivered",
    "retried",
    "dropped_full",
    "given_up",
    "dropped_shutdown",
)
