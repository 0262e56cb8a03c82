"""A token counter that starts on the backend quickest to load and moves to the fastest
once the process has counted enough for that load to pay.

fastokens counts several times faster than bpe-openai, but loading ``o200k_base`` takes
it ~1.5 s of a core and ~160 MiB (bpe-openai: ~0.1 s, ~70 MiB). An agent that counts a
few hundred results never earns that back; a collector ingesting for hours does. So by
default (``CTXLEDGER_TOKEN_COUNTER=auto``) the first counter counts from the start, and
once it has counted :data:`UPGRADE_AFTER_CHARS` a thread loads the faster one, which
takes over when loaded (after reproducing tiktoken's probe counts, as every counter
must). Counting never waits for it; both count as tiktoken does, so the counts do not
change when it takes over.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final, Protocol

logger = logging.getLogger("ctxledger")

#: Chars counted before the faster counter is loaded: about where the time it saves
#: passes the time its load costs (o200k_base: ~1.5 s to load, ~20 ms saved per MB).
UPGRADE_AFTER_CHARS: Final = 32 * 2**20


class ExactCounter(Protocol):
    """An exact counter of one backend encoding (:class:`~ctxledger._fast_counter.FastCounter`)."""

    @property
    def encoding(self) -> str: ...

    @property
    def backend(self) -> str: ...

    def count(self, text: str) -> int: ...

    def describe(self) -> str: ...


class UpgradingCounter:
    """Counts with ``first`` until ``after_chars`` are counted, then with what
    ``load_faster`` returns (loaded on a thread of its own; None or an error: ``first``
    goes on counting)."""

    def __init__(
        self,
        first: ExactCounter,
        load_faster: Callable[[], ExactCounter | None],
        after_chars: int = UPGRADE_AFTER_CHARS,
    ) -> None:
        self._current = first
        self._load_faster = load_faster
        # Chars to count before the load starts; 0 once it has (at least 1: the first
        # count starts it when ``after_chars`` is 0).
        self._chars_left = max(after_chars, 1)
        self._start_lock = threading.Lock()
        self._started = False
        self.upgraded = threading.Event()  # set once the faster counter counts

    @property
    def encoding(self) -> str:
        return self._current.encoding

    @property
    def backend(self) -> str:
        return self._current.backend

    def describe(self) -> str:
        return self._current.describe()

    def count(self, text: str) -> int:
        current = self._current
        if self._chars_left > 0:
            # Threads may race on the tally: the load starts a few texts later at worst.
            self._chars_left -= len(text)
            if self._chars_left <= 0:
                self._start_loading()
        return current.count(text)

    def upgrade_now(self) -> None:
        """Start loading the faster counter without waiting for the tally (a benchmark
        measuring a busy process's steady state); ``upgraded`` is set once it counts."""
        self._start_loading()

    def _start_loading(self) -> None:
        with self._start_lock:
            if self._started:
                return
            self._started = True
        self._chars_left = 0
        threading.Thread(target=self._load, name="ctxledger-token-counter", daemon=True).start()

    def _load(self) -> None:
        try:
            faster = self._load_faster()
        except Exception as error:  # the SDK never raises into the agent
            logger.warning(
                "ctxledger: the faster token counter did not load (%r); %s keeps counting",
                error,
                self._current.backend,
            )
            return
        if faster is not None:
            self._current = faster
            self.upgraded.set()
