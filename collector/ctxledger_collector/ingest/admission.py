"""Admission control for ingest: a bounded number of export requests read, decoded and
stored at once, and a bounded total of their body bytes.

A request is admitted when a slot is free and its declared body (``Content-Length``)
fits in the bytes still free; it waits at most ``wait_s`` for that, then is refused so
the exporter retries later instead of piling up work (and memory) that outlives its
timeout. A body larger than the whole budget (but within the body limit, which the
route checks first) is admitted only when nothing else is in flight, so the budget
never refuses a valid body for good. A body sent without a length (chunked) reserves
its bytes as they arrive and is refused when they no longer fit. A gzip body reserves
its decompressed bytes too, as they grow (:meth:`IngestAdmission.grow_to`): it waits up
to ``wait_s`` for the other requests to free room, then is refused. Everything here runs
on the server's event loop; nothing blocks it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio.from_thread


@dataclass(frozen=True)
class AdmissionLimits:
    max_requests: int
    max_bytes: int
    wait_s: float


class Busy(Exception):
    """No slot, or not enough in-flight bytes, within the wait: retry later."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason  # "requests" (every slot taken) or "bytes" (budget spent)


class Reservation:
    """The bytes one admitted request holds; chunked bodies grow it as they arrive."""

    def __init__(self, admission: IngestAdmission, reserved: int, declared: bool) -> None:
        self._admission = admission
        self.reserved = reserved
        self.declared = declared

    def account(self, received: int) -> None:
        """Note that ``received`` body bytes have arrived in all; raises :class:`Busy`
        when a body without a declared length outgrows the free budget."""
        if received <= self.reserved:
            return
        self._admission.grow(self, received - self.reserved)

    def grow_from_worker(self, total: int) -> None:
        """From a worker thread of the server's loop (``run_in_threadpool``): reserve
        ``total`` bytes in all, waiting on the loop as :meth:`IngestAdmission.grow_to`
        does; raises :class:`Busy` when they do not fit."""
        anyio.from_thread.run(self._admission.grow_to, self, total)


class IngestAdmission:
    """The slots and the byte budget of one collector app."""

    def __init__(self, limits: AdmissionLimits) -> None:
        self.limits = limits
        self.requests_in_flight = 0
        self.bytes_in_flight = 0
        self._changed = asyncio.Condition()

    def _refusal(self, declared: int) -> str | None:
        """Why a request of ``declared`` bytes cannot start now; None when it can."""
        if self.requests_in_flight >= self.limits.max_requests:
            return "requests"
        if declared > self.limits.max_bytes:
            return None if self.requests_in_flight == 0 else "bytes"
        if self.bytes_in_flight + declared > self.limits.max_bytes:
            return "bytes"
        return None

    @asynccontextmanager
    async def admit(self, declared_bytes: int | None) -> AsyncIterator[Reservation]:
        """Hold a slot and ``declared_bytes`` of the budget while the body is read,
        decoded and stored. Raises :class:`Busy` when that is not possible within
        ``wait_s``; the body is not read meanwhile."""
        declared = declared_bytes or 0
        async with self._changed:
            if self._refusal(declared) is not None:
                try:
                    await asyncio.wait_for(
                        self._changed.wait_for(lambda: self._refusal(declared) is None),
                        timeout=self.limits.wait_s,
                    )
                except asyncio.TimeoutError:
                    raise Busy(self._refusal(declared) or "requests") from None
            self.requests_in_flight += 1
            self.bytes_in_flight += declared
        reservation = Reservation(self, declared, declared_bytes is not None)
        try:
            yield reservation
        finally:
            async with self._changed:
                self.requests_in_flight -= 1
                self.bytes_in_flight -= reservation.reserved
                self._changed.notify_all()

    def _has_room(self, extra: int) -> bool:
        return self.requests_in_flight == 1 or self.bytes_in_flight + extra <= self.limits.max_bytes

    async def grow_to(self, reservation: Reservation, total: int) -> None:
        """Reserve ``total`` bytes in all for ``reservation`` (a body and what it
        decompressed to so far), waiting up to ``wait_s`` for other requests to free
        room; raises :class:`Busy` (``bytes``) when they do not."""
        extra = total - reservation.reserved
        if extra <= 0:
            return
        async with self._changed:
            if not self._has_room(extra):
                try:
                    await asyncio.wait_for(
                        self._changed.wait_for(lambda: self._has_room(extra)),
                        timeout=self.limits.wait_s,
                    )
                except asyncio.TimeoutError:
                    raise Busy("bytes") from None
            self.bytes_in_flight += extra
            reservation.reserved += extra

    def grow(self, reservation: Reservation, extra: int) -> None:
        # Called from the request's own task between awaits: no other task runs meanwhile.
        alone = self.requests_in_flight == 1
        if not alone and self.bytes_in_flight + extra > self.limits.max_bytes:
            raise Busy("bytes")
        self.bytes_in_flight += extra
        reservation.reserved += extra
