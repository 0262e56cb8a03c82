"""One destination's sender: a thread that POSTs its queue's requests one at a time,
in the order they were accepted, retrying transient failures (:mod:`.retry`).

The thread is the only place that waits on the destination, so a slow or unreachable
one fills its own queue and nothing else: ingest only ever puts into the queue.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Protocol
from urllib.parse import urlsplit

import httpx

from ctxledger.__about__ import __version__
from ctxledger_collector.alerts.destination_guard import (
    PinnedRequest,
    RefusedDestination,
    UnresolvedDestination,
    checked_addresses,
    pinned_to,
)
from ctxledger_collector.forwarding.destinations import Destination
from ctxledger_collector.forwarding.queue import ForwardQueue, ForwardRequest
from ctxledger_collector.forwarding.retry import Outcome, RetryPolicy, Verdict, verdict_of

USER_AGENT = f"ctxledger-forwarder/{__version__}"


class Tally(Protocol):
    """Where a sender reports what became of each request."""

    def count(self, destination: str, outcome: Outcome, size: int) -> None: ...

    def warn_once(self, destination: str, reason: str, message: str) -> None: ...


class _Attempt:
    def __init__(self, verdict: Verdict, reason: str, retry_after: str | None = None) -> None:
        self.verdict = verdict
        self.reason = reason  # "HTTP 503", "ConnectError", ...: what the logs say once
        self.retry_after = retry_after


class DestinationSender:
    def __init__(
        self,
        destination: Destination,
        queue: ForwardQueue,
        policy: RetryPolicy,
        timeout_s: float,
        tally: Tally,
    ) -> None:
        self.destination = destination
        self.queue = queue
        self.policy = policy
        self.timeout_s = timeout_s
        self.tally = tally
        self._deadline: float | None = None  # set when closing: attempts end by then
        self._abandon = threading.Event()
        self._http = httpx.Client(headers={"User-Agent": USER_AGENT, **destination.headers})
        self._thread = threading.Thread(
            target=self._run, name=f"ctxledger-forward {destination.name}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def close(self, deadline: float) -> None:
        """Send what is queued, but no attempt past ``deadline`` (a monotonic time)."""
        self._deadline = deadline
        self.queue.close()

    def abandon(self) -> None:
        """Stop now: a request waiting for its retry is counted ``dropped_shutdown``."""
        self._abandon.set()
        self.queue.close()

    def join(self, timeout_s: float) -> bool:
        """Wait for the thread; True once it has ended."""
        if self._thread.ident is not None:
            self._thread.join(max(timeout_s, 0.0))
        return not self._thread.is_alive()

    def release(self) -> None:
        self._http.close()

    def _run(self) -> None:
        while not self._abandon.is_set():
            request = self.queue.get()
            if request is None:
                return
            try:
                self._deliver(request)
            except Exception as error:  # never let one request end the sender
                self._count("given_up", request)
                self._warn(f"unexpected {type(error).__name__}", f"given up: {error}")

    def _deliver(self, request: ForwardRequest) -> None:
        first = time.monotonic()
        retry = 0
        while True:
            if self._abandon.is_set():
                self._count("dropped_shutdown", request)
                return
            attempt = self._attempt(request)
            if attempt.verdict is Verdict.DELIVERED:
                self._count("delivered", request)
                return
            if attempt.verdict is Verdict.GIVE_UP:
                self._count("given_up", request)
                self._warn(attempt.reason, f"given up on a request answered {attempt.reason}")
                return
            retry += 1
            delay = self.policy.delay_s(retry, attempt.retry_after, random.random())
            if time.monotonic() - first + delay > self.policy.max_elapsed_s:
                self._count("given_up", request)
                self._warn(
                    "retries exhausted",
                    f"given up on a request still failing ({attempt.reason}) after "
                    f"{self.policy.max_elapsed_s:g} s of retries",
                )
                return
            self._count("retried", request)
            self._warn(attempt.reason, f"failing ({attempt.reason}); retrying with backoff")
            if self._abandon.wait(delay):
                self._count("dropped_shutdown", request)
                return

    def _attempt(self, request: ForwardRequest) -> _Attempt:
        url = self.destination.logs_url if request.signal == "logs" else self.destination.url
        pinned = self._pinned(url or self.destination.url)
        if isinstance(pinned, _Attempt):
            return pinned
        headers = {"Content-Type": request.content_type, "Host": pinned.host_header}
        if request.content_encoding is not None:
            headers["Content-Encoding"] = request.content_encoding
        try:
            response = self._http.post(
                pinned.url,
                content=request.body,
                headers=headers,
                timeout=self._attempt_timeout_s(),
                extensions={"sni_hostname": pinned.server_name},
            )
        except httpx.HTTPError as error:  # refused, reset, timed out, ...
            return _Attempt(Verdict.RETRY, type(error).__name__)
        return _Attempt(
            verdict_of(response.status_code),
            f"HTTP {response.status_code}",
            response.headers.get("retry-after"),
        )

    def _pinned(self, url: str) -> PinnedRequest | _Attempt:
        """What the host resolves to now, checked before the request (and its headers)
        leaves, and the request sent to that checked address itself, so a second DNS
        answer cannot swap in another: a name that came to resolve to a metadata or
        link-local address is given up on; one that does not resolve is retried."""
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            addresses = checked_addresses(parts.hostname or "", port, allow_loopback=True)
        except RefusedDestination as error:
            return _Attempt(Verdict.GIVE_UP, f"refused: {error}")
        except UnresolvedDestination:
            return _Attempt(Verdict.RETRY, "DNS lookup failed")
        return pinned_to(url, addresses[0])

    def _attempt_timeout_s(self) -> float:
        if self._deadline is None:
            return self.timeout_s
        # While flushing at shutdown, an attempt may not outlast the flush.
        return max(min(self.timeout_s, self._deadline - time.monotonic()), 0.001)

    def _count(self, outcome: Outcome, request: ForwardRequest) -> None:
        self.tally.count(self.destination.name, outcome, request.size)

    def _warn(self, reason: str, message: str) -> None:
        self.tally.warn_once(self.destination.name, reason, message)
