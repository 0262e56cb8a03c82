"""Emergency trim (seed 001): make a request that overflowed the context window fit.

When a provider rejects a request with ``context_length_exceeded``, there is no time to
summarise. :func:`emergency_trim` replaces the *content* of the oldest tool results with
:data:`~ctxledger._markers.EMERGENCY_TRIM_PLACEHOLDER`, one at a time, re-estimating the
size after each, and stops as soon as the estimate is at or below the target (by default
half of the current estimate, leaving room for the conversation to grow). Nothing else
changes: every message stays, in its position, with its ids and names, so every tool
call keeps its result and the provider still accepts the request. Deleting the oldest
result instead leaves its call orphaned, and the provider rejects the request for good.

* There is no protected "recent N": in the extreme case every result is trimmed. Being
  able to send the request matters more than any one old output; the placeholder tells
  the model to re-run the tool if it still needs the data.
* A result that already is the placeholder is recognised and skipped, so trimming
  again continues where the last trim stopped.
* Only this request changes: a new list is returned, the input list, its messages and
  blocks are never mutated (changed messages are deep copies). The stored history keeps
  the originals; the next turn loads them again.

:func:`call_with_emergency_trim` (and :func:`acall_with_emergency_trim`) wraps a call to
the provider: on an overflow it trims and retries the same provider at once, no sleep,
no backoff, no failover, no health penalty (the request was too big; the provider is
fine). It trims again while the request still overflows, and raises the original error
when nothing is left to trim.

Each trimmed result is declared to ctxledger as the custom stage ``emergency_trim``
(order 35: after the messages were assembled, before the bytes leave); each provider
overflow is an event ``ctxledger.context_length_exceeded`` on the current span.

The trim itself is :mod:`ctxledger.remedies.trimming`, the recognition of an overflow
:mod:`ctxledger.remedies.overflow`; every name of both is imported from here as well.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar

from opentelemetry import trace

from ctxledger import semconv
from ctxledger._safety import never_raises
from ctxledger.remedies.overflow import (
    CONTEXT_LENGTH_PREDICATES,
    OVERFLOW_PATTERNS,
    OverflowPredicate,
    http_status,
    is_context_length_error,
)
from ctxledger.remedies.trimming import (
    Estimator,
    TrimResult,
    emergency_trim,
    estimate_tokens,
    is_trimmed,
)
from ctxledger.verdicts import STAGE_EMERGENCY_TRIM_ORDER

__all__ = [
    "CONTEXT_LENGTH_PREDICATES",
    "EVENT_CONTEXT_LENGTH_EXCEEDED",
    "OVERFLOW_PATTERNS",
    "STAGE_EMERGENCY_TRIM",
    "STAGE_EMERGENCY_TRIM_ORDER",
    "TrimResult",
    "acall_with_emergency_trim",
    "call_with_emergency_trim",
    "emergency_trim",
    "estimate_tokens",
    "is_context_length_error",
    "is_trimmed",
]

T = TypeVar("T")

STAGE_EMERGENCY_TRIM: Final = semconv.STAGE_EMERGENCY_TRIM
EVENT_CONTEXT_LENGTH_EXCEEDED: Final = semconv.EVENT_CONTEXT_LENGTH_EXCEEDED

_MAX_EVENT_MESSAGE_CHARS: Final = 1000


@never_raises(None)
def _record_overflow(
    error: BaseException, attempt: int, model: str | None, result: TrimResult | None
) -> None:
    """The provider's overflow as an event on the current span (a no-op without one)."""
    attributes: dict[str, str | int | bool] = {
        semconv.ERROR_TYPE: type(error).__qualname__,
        semconv.ERROR_MESSAGE: str(error)[:_MAX_EVENT_MESSAGE_CHARS],
        semconv.EMERGENCY_TRIM_ATTEMPT: attempt,
    }
    status = http_status(error)
    if status is not None:
        attributes[semconv.HTTP_RESPONSE_STATUS_CODE] = status
    if model:
        attributes[semconv.REQUEST_MODEL] = model
    if result is not None:
        attributes[semconv.EMERGENCY_TRIM_TRIMMED] = len(result.trimmed)
        attributes[semconv.EMERGENCY_TRIM_TOKENS_BEFORE] = result.tokens_before
        attributes[semconv.EMERGENCY_TRIM_TOKENS_AFTER] = result.tokens_after
        attributes[semconv.EMERGENCY_TRIM_NOTHING_LEFT] = result.nothing_left
    trace.get_current_span().add_event(EVENT_CONTEXT_LENGTH_EXCEEDED, attributes)


def _is_overflow(predicate: OverflowPredicate, error: BaseException) -> bool:
    try:
        return bool(predicate(error))
    except Exception:
        return False


class _Rounds:
    """The state shared by the sync and async retry loops."""

    def __init__(self, model: str | None, max_rounds: int, estimate: Estimator | None) -> None:
        self.model = model
        self.max_rounds = max_rounds
        self.estimate = estimate
        self.original: BaseException | None = None
        self.rounds = 0
        self.attempt = 0

    def after_overflow(self, error: BaseException, sent: Sequence[Any]) -> list[Any] | None:
        """The next request to send, or None to give the original error back."""
        if self.original is None:
            self.original = error
        self.attempt += 1
        if self.rounds >= self.max_rounds:
            _record_overflow(error, self.attempt, self.model, None)
            return None
        result = emergency_trim(sent, model=self.model, estimate=self.estimate)
        _record_overflow(error, self.attempt, self.model, result)
        if not result.changed:
            return None
        self.rounds += 1
        return result.messages

    def give_up(self) -> BaseException:
        assert self.original is not None
        return self.original


def call_with_emergency_trim(
    send: Callable[[list[Any]], T],
    messages: list[Any],
    *,
    model: str | None = None,
    max_rounds: int = 8,
    is_overflow: OverflowPredicate = is_context_length_error,
    estimate: Estimator | None = None,
) -> T:
    """``send(messages)``; on a context overflow, trim (to half the current estimate)
    and send again at once to the same provider, as often as it still overflows.

    When nothing is left to trim, or after ``max_rounds`` trims, the *first* overflow
    error is raised. Any other error propagates unchanged. ``messages`` is never
    modified: retries send new lists.
    """
    rounds = _Rounds(model, max_rounds, estimate)
    current = messages
    while True:
        try:
            return send(current)
        except Exception as error:
            if not _is_overflow(is_overflow, error):
                raise
            following = rounds.after_overflow(error, current)
        if following is None:
            raise rounds.give_up()
        current = following


async def acall_with_emergency_trim(
    send: Callable[[list[Any]], Awaitable[T]],
    messages: list[Any],
    *,
    model: str | None = None,
    max_rounds: int = 8,
    is_overflow: OverflowPredicate = is_context_length_error,
    estimate: Estimator | None = None,
) -> T:
    """The async twin of :func:`call_with_emergency_trim` (``send`` is awaited)."""
    rounds = _Rounds(model, max_rounds, estimate)
    current = messages
    while True:
        try:
            return await send(current)
        except Exception as error:
            if not _is_overflow(is_overflow, error):
                raise
            following = rounds.after_overflow(error, current)
        if following is None:
            raise rounds.give_up()
        current = following
