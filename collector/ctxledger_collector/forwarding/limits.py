"""The bounds of forwarding, from the ``CTXLEDGER_FORWARD_*`` settings."""

from __future__ import annotations

from dataclasses import dataclass

from ctxledger_collector.forwarding.retry import RetryPolicy


@dataclass(frozen=True)
class ForwardLimits:
    queue_max_requests: int
    """Per destination: requests waiting to be sent; a new one past this drops the oldest."""
    queue_max_bytes: int
    """Per destination: body bytes waiting to be sent; the same."""
    timeout_s: float
    """One attempt's time limit (connect, send, answer)."""
    retry: RetryPolicy
    flush_timeout_s: float
    """At shutdown, how long the senders may still send what is queued."""
