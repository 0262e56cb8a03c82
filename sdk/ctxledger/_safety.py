"""The SDK never raises into the agent: failures are logged once and swallowed.

Under pytest (or with ``CTXLEDGER_RAISE_ERRORS=1``) they re-raise, so bugs show in tests.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

logger = logging.getLogger("ctxledger")

P = ParamSpec("P")
R = TypeVar("R")
D = TypeVar("D")

_logged: set[tuple[str, str]] = set()
_lock = threading.Lock()


def raise_errors() -> bool:
    """Whether SDK failures re-raise: ``CTXLEDGER_RAISE_ERRORS`` if set, else under pytest."""
    explicit = os.environ.get("CTXLEDGER_RAISE_ERRORS")
    if explicit is not None:
        return explicit.strip().lower() in ("1", "true", "yes", "on")
    return "PYTEST_CURRENT_TEST" in os.environ


def report_failure(where: str, error: BaseException) -> None:
    """Log a failure once per (place, kind of error)."""
    key = (where, type(error).__name__)
    with _lock:
        first = key not in _logged
        _logged.add(key)
    if first:
        logger.warning(
            "ctxledger: %s failed (%s: %s); the agent is unaffected, this is logged once",
            where,
            type(error).__name__,
            error,
            exc_info=error,
        )


def never_raises(default: D) -> Callable[[Callable[P, R]], Callable[P, R | D]]:
    """Decorate an SDK entry point so a failure returns ``default`` instead of raising."""

    def decorate(func: Callable[P, R]) -> Callable[P, R | D]:
        @functools.wraps(func)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R | D:
            try:
                return func(*args, **kwargs)
            except Exception as error:
                if raise_errors():
                    raise
                report_failure(func.__qualname__, error)
                return default

        return guarded

    return decorate
