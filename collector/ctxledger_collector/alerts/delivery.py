"""The delivery worker: a thread of its own, so a dead or slow sink never slows ingest.

Each tick it notifies groups whose window has passed, resolves quiet groups, then claims
due notifications from the outbox with a lease (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL) and delivers them. A failure is retried with exponential backoff up to
``max_attempts``; a lease left behind by a collector that died mid-delivery expires and
another worker (or the restarted one) delivers again with the same ``webhook-id``, which
receivers use to drop duplicates.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from ctxledger_collector.alerts.context import AlertContext
from ctxledger_collector.alerts.groups import flush_due_groups, resolve_quiet_groups
from ctxledger_collector.alerts.sinks import DeliveryError, send
from ctxledger_collector.storage.alert_tables import NOTIFICATIONS

logger = logging.getLogger("ctxledger.collector.alerts")

#: Called after each attempt: (sink name, outcome "delivered"|"failed"|"dead", seconds).
DeliveryObserver = Callable[[str, str, float], None]


def backoff_s(attempts: int, base_s: float, max_s: float) -> float:
    """Seconds before retry number ``attempts`` (1 → base, 2 → 2×base, …, capped)."""
    return float(min(max_s, base_s * 2 ** max(attempts - 1, 0)))


class DeliveryWorker:
    def __init__(
        self,
        engine: Engine,
        context: AlertContext,
        *,
        lease_s: float = 30.0,
        tick_s: float = 1.0,
        retry_base_s: float = 1.0,
        batch: int = 20,
        observer: DeliveryObserver | None = None,
    ) -> None:
        self.engine = engine
        self.context = context
        self.lease_s = lease_s
        self.tick_s = tick_s
        self.retry_base_s = retry_base_s
        self.batch = batch
        self.observer = observer
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"[:64]
        self._sinks = {sink.name: sink for sink in context.config.sinks}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ctxledger-alerts", daemon=True)
        self._http = httpx.Client(follow_redirects=False)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop after the delivery in progress, then hand back the leases of what this
        worker claimed and did not deliver, so that the next worker (or this collector
        restarted) delivers it at once instead of after the lease."""
        self._stop.set()
        self._thread.join(timeout=timeout_s)
        self._http.close()
        if self._thread.is_alive():
            return  # still delivering: its lease expires on its own
        try:
            self.release_leases()
        except Exception as error:  # the database is out: the leases expire instead
            logger.warning("ctxledger alerts: could not release leases at shutdown: %s", error)

    def release_leases(self) -> int:
        with Session(self.engine) as session, session.begin():
            released = session.execute(
                update(NOTIFICATIONS)
                .where(
                    NOTIFICATIONS.c.lease_owner == self.owner,
                    NOTIFICATIONS.c.delivery == "pending",
                )
                .values(lease_until=None, lease_owner=None)
            )
        return int(getattr(released, "rowcount", 0) or 0)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick(time.time())
            except Exception as error:  # the next tick tries again
                logger.warning("ctxledger alerts: delivery tick failed: %s", error)
            self._stop.wait(self.tick_s)

    def tick(self, now: float) -> int:
        """One round: group, resolve, deliver what is due. Returns deliveries attempted."""
        flush_due_groups(self.engine, self.context, now)
        resolve_quiet_groups(self.engine, self.context, now)
        attempted = 0
        for notification in self._claim(now):
            if self._stop.is_set():
                break  # the rest of the claim is released by stop()
            self._deliver(notification)
            attempted += 1
        return attempted

    def _claim(self, now: float) -> list[Any]:
        due = (
            select(NOTIFICATIONS.c.id)
            .where(
                NOTIFICATIONS.c.delivery == "pending",
                NOTIFICATIONS.c.next_attempt_at <= now,
                (NOTIFICATIONS.c.lease_until.is_(None)) | (NOTIFICATIONS.c.lease_until < now),
            )
            .order_by(NOTIFICATIONS.c.id)
            .limit(self.batch)
        )
        with Session(self.engine) as session, session.begin():
            if session.get_bind().dialect.name == "postgresql":
                due = due.with_for_update(skip_locked=True)
            ids = list(session.scalars(due))
            if not ids:
                return []
            claimed = session.execute(
                update(NOTIFICATIONS)
                .where(NOTIFICATIONS.c.id.in_(ids))
                .values(lease_until=now + self.lease_s, lease_owner=self.owner)
                .returning(NOTIFICATIONS)
            ).all()
        return sorted(claimed, key=lambda row: row.id)

    def _deliver(self, notification: Any) -> None:
        sink = self._sinks.get(notification.sink)
        started = time.monotonic()
        attempts = notification.attempts + 1
        outcome = "delivered"
        values: dict[str, Any] = {"attempts": attempts, "lease_until": None, "lease_owner": None}
        if sink is None:
            outcome = "dead"
            values.update(
                delivery="dead", last_error=f"sink {notification.sink!r} is no longer configured"
            )
        else:
            try:
                send(sink, notification.webhook_id, notification.payload, self._http)
                values.update(delivery="delivered", delivered_at=time.time(), last_error=None)
            except DeliveryError as error:
                config = self.context.config
                outcome = "dead" if attempts >= config.max_attempts else "failed"
                values.update(
                    delivery="dead" if outcome == "dead" else "pending",
                    last_error=str(error)[:1000],
                    next_attempt_at=time.time()
                    + backoff_s(attempts, self.retry_base_s, config.max_backoff_s),
                )
                logger.info(
                    "ctxledger alerts: %s to %s failed (%s)",
                    notification.webhook_id,
                    notification.sink,
                    error,
                )
        with Session(self.engine) as session, session.begin():
            session.execute(
                update(NOTIFICATIONS)
                .where(
                    NOTIFICATIONS.c.id == notification.id,
                    NOTIFICATIONS.c.lease_owner == self.owner,
                )
                .values(**values)
            )
        if self.observer is not None:
            self.observer(notification.sink, outcome, time.monotonic() - started)
