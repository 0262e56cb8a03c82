"""One export body to the collector, and what its answer means for the spans in it:
exported, refused for good (counted by reason), halved (413), or handed back to be kept
and sent again later."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ctxledger._backoff import Backoff
from ctxledger._otlp_sender import ExportAnswer, OTLPSender, Outcome
from ctxledger._otlp_split import halve
from ctxledger._pipeline_stats import DropCounter

logger = logging.getLogger("ctxledger")

Parts = list[tuple[bytes, int]]
_OUTAGE_LOG_EVERY_S = 60.0


class Delivery:
    def __init__(
        self, sender: OTLPSender, counter: DropCounter, backoff: Backoff, kept_in: str
    ) -> None:
        self.sender = sender
        self.backoff = backoff
        self._counter = counter
        self._kept_in = kept_in
        self._last_outage_log = -_OUTAGE_LOG_EVERY_S

    def send(self, body: bytes, spans: int, may_send: Callable[[], bool]) -> Parts:
        """Export ``body``; the parts that must be kept to be sent again later.
        ``may_send`` says whether the halves of a 413 may go now."""
        answer = self.sender.send(body)
        if answer.outcome is Outcome.RETRY:
            self._failed(answer)
            return [(body, spans)]
        self._counter.set_export_problem("")
        if self.backoff.succeeded():
            logger.info("ctxledger: the collector takes batches again")
        if answer.outcome is Outcome.ACCEPTED:
            rejected = min(answer.rejected_spans, spans)
            if rejected:
                self._counter.reject(answer.reason, rejected, answer.detail)
            self._counter.add("spans_exported", spans - rejected)
            return []
        halves = halve(body) if answer.outcome is Outcome.TOO_LARGE else None
        if halves is None:
            self._counter.reject(answer.reason, spans, answer.detail)
            return []
        kept: Parts = []
        for part, count in halves:  # once a half is kept, the rest is kept behind it
            sent_now = not kept and may_send()
            kept.extend(self.send(part, count, may_send) if sent_now else [(part, count)])
        return kept

    def _failed(self, answer: ExportAnswer) -> None:
        self._counter.add("export_failures")
        detail = f": {answer.detail}" if answer.detail else ""
        self._counter.set_export_problem(f"{answer.reason}{detail}")
        wait = self.backoff.failed(answer.retry_after_s)
        if time.monotonic() - self._last_outage_log >= _OUTAGE_LOG_EVERY_S:
            self._last_outage_log = time.monotonic()
            logger.warning(
                "ctxledger: the collector did not take a batch (%s%s); batches wait in %s "
                "and are sent again in %.1f s and later",
                answer.reason,
                detail,
                self._kept_in,
                wait,
            )
