"""The replayer: a thread that stores what the ingest spool holds, oldest first, as soon
as the database takes writes again, and deletes each file only once it is committed.

While the database is still out, the oldest file is put back and tried again after a
backoff (doubling up to ``max_backoff_s``); an export that arrives meanwhile wakes the
thread. Once the database takes writes again, an export that arrives while files still
wait first stores two of them in its own thread (:meth:`SpoolReplayer.help_drain`), so
the spool drains faster than exports arrive, however busy the machine: alone, the one
thread could fall behind a steady stream of exports, each spooled behind the backlog.

A file that cannot be decoded (it was damaged on disk: the spool only takes exports that
decoded) is deleted, logged and counted ``discarded``. At start-up the
thread first puts back what a process that died had claimed, so a collector restarted
with a non-empty spool replays it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Literal, Protocol

from prometheus_client import Counter

from ctxledger_collector.ingest.spool import IngestSpool, SpooledExport

logger = logging.getLogger("ctxledger.collector")


class ReplayMetrics(Protocol):
    """The metrics the replayer counts in (the collector's ``CollectorMetrics``)."""

    spool_replays: Counter


#: How often spool files claimed by processes that are gone are put back.
_RECOVER_EVERY_S = 10.0
#: How long the thread sleeps with nothing to replay before it looks again (other
#: worker processes may spool files this process was never told about).
_IDLE_S = 1.0


class StorageUnavailable(Exception):
    """The database cannot take the export now: keep it and retry later."""


class Discarded(Exception):
    """The spooled export cannot be stored ever (it is damaged): delete it."""


Replay = Callable[[SpooledExport], None]
Outcome = Literal["stored", "empty", "outage"]
#: How many waiting exports an arriving export stores before its own.
HELP_PER_EXPORT = 2


class SpoolReplayer:
    def __init__(
        self,
        spool: IngestSpool,
        replay: Replay,
        metrics: ReplayMetrics,
        base_backoff_s: float = 0.5,
        max_backoff_s: float = 5.0,
    ) -> None:
        self.spool = spool
        self._replay = replay
        self._metrics = metrics
        self._base_backoff_s = base_backoff_s
        self._max_backoff_s = max_backoff_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        #: The last replay stored its export: the database takes writes.
        self._storing = False
        self._thread = threading.Thread(
            target=self._run, name="ctxledger-spool-replay", daemon=True
        )

    def start(self) -> None:
        if self.spool.enabled:
            self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout_s: float) -> None:
        """Stop after the export being stored now (bounded: the thread is a daemon)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        backoff = self._base_backoff_s
        recovered_at = -_RECOVER_EVERY_S
        while not self._stop.is_set():
            if time.monotonic() - recovered_at >= _RECOVER_EVERY_S:
                self.spool.recover_stale()
                recovered_at = time.monotonic()
            outcome = self.replay_oldest()
            if outcome == "stored":
                backoff = self._base_backoff_s
                continue
            if outcome == "outage":
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self._max_backoff_s)
            else:
                self._wake.wait(_IDLE_S)
                self._wake.clear()

    def help_drain(self, exports: int = HELP_PER_EXPORT) -> bool:
        """For an export that found files waiting: store up to ``exports`` of the oldest
        in this thread, if the last replay found the database taking writes (never while
        it is out: the export goes to the spool at once). True once nothing waits."""
        for _ in range(exports):
            if not self._storing or self.replay_oldest() != "stored":
                break
        return not self.spool.has_backlog()

    def replay_one(self) -> bool:
        """Store the oldest spooled export; True if one was stored (or discarded)."""
        return self.replay_oldest() == "stored"

    def replay_oldest(self) -> Outcome:
        """Store (or discard) the oldest spooled export: ``stored``; ``empty`` when none
        waits unclaimed; ``outage`` when it could not be read or stored (it waits on)."""
        claim = self.spool.claim()
        if claim is None:
            return "empty"
        data = self.spool.read(claim)
        if data is None:  # unreadable now (the read is logged): leave it for later
            self.spool.release(claim)
            return "outage"
        try:
            self._replay(SpooledExport.decode(data))
        except StorageUnavailable:
            self.spool.release(claim)
            self._metrics.spool_replays.labels("retried").inc()
            self._storing = False
            return "outage"
        except (Discarded, ValueError) as error:
            logger.error("ctxledger collector: spooled export %s discarded: %s", claim.name, error)
            self.spool.done(claim)
            self._metrics.spool_replays.labels("discarded").inc()
            return "stored"
        except Exception:  # a defect: keep the export and say so
            logger.exception("ctxledger collector: replaying %s failed", claim.name)
            self.spool.release(claim)
            self._storing = False
            return "outage"
        self.spool.done(claim)
        self._metrics.spool_replays.labels("stored").inc()
        self._storing = True
        return "stored"
