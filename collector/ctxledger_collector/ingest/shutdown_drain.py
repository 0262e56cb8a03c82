"""What ingest does once the server is shutting down: an export the collector will not
finish in time is answered 503 with Retry-After (OTLP's retryable answer), never left
to the server's cancellation, which answers 500 (final for a stock exporter).

On SIGTERM (or Ctrl-C) uvicorn stops accepting, waits ``CTXLEDGER_SHUTDOWN_TIMEOUT_S``
for the requests in flight, then cancels them. An export still being read or stored
:data:`ANSWER_MARGIN_S` before that is answered 503 instead; its storage thread stops
after the chunk it is committing (the spans already committed stay: the retry upserts
them again, which changes nothing), and the app's shutdown waits for that chunk before
it closes the database.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

#: How long before the server's own cancellation the 503 is sent.
ANSWER_MARGIN_S = 0.5

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class ShutdownDrain:
    """One app's view of the server's shutdown; the ingest route races its work with it."""

    def __init__(self, shutdown_timeout_s: float) -> None:
        self.answer_within_s = max(0.0, shutdown_timeout_s - ANSWER_MARGIN_S)
        self.began: float | None = None
        self._answer_now = asyncio.Event()
        self.answered = False
        """Set when every export still in flight was answered 503: each storage thread
        stops after the chunk it is committing."""
        self._storing = 0
        self._idle = threading.Condition()

    def hook_signals(self, loop: asyncio.AbstractEventLoop) -> None:
        """Learn of the shutdown from the signals the server handles (call it in the main
        thread once the server installed its handlers; each still runs after ours)."""
        for number in _SIGNALS:
            previous = signal.getsignal(number)
            if callable(previous):
                signal.signal(number, self._chained(loop, previous))

    def _chained(
        self, loop: asyncio.AbstractEventLoop, previous: Callable[[int, FrameType | None], Any]
    ) -> Callable[[int, FrameType | None], None]:
        def handler(number: int, frame: FrameType | None) -> None:
            loop.call_soon_threadsafe(self.begin)
            previous(number, frame)

        return handler

    def begin(self) -> None:
        """The server is shutting down (call in the event loop)."""
        if self.began is not None:
            return
        self.began = time.monotonic()
        asyncio.get_running_loop().call_later(self.answer_within_s, self._answer_all)

    def _answer_all(self) -> None:
        self.answered = True
        self._answer_now.set()

    async def unless_shutting_down(self, work: Coroutine[Any, Any, T]) -> T | None:
        """``work``'s result, or None once the shutdown leaves no time to finish it
        (``work`` is then cancelled; a storage thread it started carries on alone)."""
        task = asyncio.ensure_future(work)
        answer_now = asyncio.ensure_future(self._answer_now.wait())
        try:
            await asyncio.wait({task, answer_now}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if self.began is None:
                task.cancel()
                raise
            self.answered = True  # the server cancelled first: the same answer
        finally:
            answer_now.cancel()
        if task.done() and not task.cancelled():
            return task.result()
        task.cancel()
        task.add_done_callback(_retrieve)
        return None

    def storing(self, function: Callable[..., T]) -> Callable[..., T]:
        """``function`` counted while it runs, so that :meth:`wait_for_storage` knows."""

        def counted(*args: Any) -> T:
            with self._idle:
                self._storing += 1
            try:
                return function(*args)
            finally:
                with self._idle:
                    self._storing -= 1
                    self._idle.notify_all()

        return counted

    def wait_for_storage(self, timeout_s: float) -> bool:
        """Block until no export is being stored, at most ``timeout_s``."""
        with self._idle:
            return self._idle.wait_for(lambda: self._storing == 0, timeout_s)


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # an abandoned export's error is not "never retrieved"
