"""Real webhook receivers on loopback for the alerting tests.

Each receiver is a ``ThreadingHTTPServer`` in a thread of its own, used as a context
manager. Every request is recorded (headers, body, and the payload when the Standard
Webhooks signature verifies with :func:`ctxledger.webhooks.verify`), then answered:

* :class:`Receiver`: 204 to every request that verifies (400 otherwise);
* :class:`FailingReceiver`: 500 to the first ``failures`` requests (all of them when
  ``failures`` is None), then like :class:`Receiver`;
* :class:`SlowReceiver`: holds the first request until :meth:`SlowReceiver.release` or
  ``hold_s`` seconds, whichever comes first, then like :class:`Receiver`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from ctxledger.webhooks import WebhookVerificationError, verify


@dataclass(frozen=True)
class Received:
    """One request as the receiver saw it."""

    index: int
    webhook_id: str | None
    headers: dict[str, str]
    body: bytes
    payload: Any  # the verified JSON payload; None when the signature did not verify
    error: str | None  # why verification failed, else None
    status: int  # what the receiver answered (or meant to, if the sender had gone)

    @property
    def group(self) -> tuple[str, str | None, str | None] | None:
        if not isinstance(self.payload, dict):
            return None
        group = self.payload["group"]
        return group["rule"], group["agent"], group["tool"]


class Receiver:
    """A healthy webhook endpoint: verifies the signature, records, answers 204."""

    def __init__(self, secrets: Sequence[str]) -> None:
        self.secrets = list(secrets)
        self._requests: list[Received] = []
        self._condition = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                receiver._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks/ctxledger"

    # --- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._before_close()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def _before_close(self) -> None:
        pass

    # --- what came in ------------------------------------------------------------------

    @property
    def requests(self) -> list[Received]:
        with self._condition:
            return list(self._requests)

    def delivered(self) -> list[Received]:
        """The requests answered with a 2xx, in arrival order."""
        return [r for r in self.requests if 200 <= r.status < 300]

    def wait_for(
        self, predicate: Callable[[list[Received]], bool], timeout_s: float = 30.0
    ) -> list[Received]:
        """Wait until ``predicate(requests)`` holds; AssertionError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._condition:
            while not predicate(list(self._requests)):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"the receiver never saw what was expected; it saw {self._summary()}"
                    )
                self._condition.wait(min(left, 0.5))
            return list(self._requests)

    def _summary(self) -> str:
        return repr(
            [
                (r.index, r.webhook_id, r.status, r.group, (r.payload or {}).get("status"))
                for r in self._requests
            ]
        )

    # --- answering ---------------------------------------------------------------------

    def _status_for(self, index: int, verified: bool) -> int:
        return 204 if verified else 400

    def _hold(self, index: int) -> None:
        pass

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length)
        headers = {name.lower(): value for name, value in handler.headers.items()}
        payload: Any = None
        error: str | None = None
        try:
            payload = verify(body, headers, self.secrets)
        except WebhookVerificationError as failure:
            error = str(failure)
        with self._condition:
            index = len(self._requests)
            status = self._status_for(index, error is None)
            received = Received(
                index, headers.get("webhook-id"), headers, body, payload, error, status
            )
            self._requests.append(received)
            self._condition.notify_all()
        self._hold(index)
        try:
            handler.send_response(status)
            handler.send_header("content-length", "0")
            handler.end_headers()
        except OSError:  # the sender gave up (timed out, or was killed) meanwhile
            pass
        self._after_answer(index)

    def _after_answer(self, index: int) -> None:
        pass


class FailingReceiver(Receiver):
    """Answers 500 to the first ``failures`` requests (every request when None)."""

    def __init__(self, secrets: Sequence[str], failures: int | None) -> None:
        super().__init__(secrets)
        self.failures = failures

    def _status_for(self, index: int, verified: bool) -> int:
        if self.failures is None or index < self.failures:
            return 500
        return super()._status_for(index, verified)


class SlowReceiver(Receiver):
    """Holds the first request until :meth:`release` (or ``hold_s``), then answers it."""

    def __init__(self, secrets: Sequence[str], hold_s: float = 5.0) -> None:
        super().__init__(secrets)
        self.hold_s = hold_s
        self.first_arrived = threading.Event()
        self.first_answered = threading.Event()
        self._release = threading.Event()

    def release(self) -> None:
        self._release.set()

    def _before_close(self) -> None:
        self.release()

    def _hold(self, index: int) -> None:
        if index == 0:
            self.first_arrived.set()
            self._release.wait(self.hold_s)

    def _after_answer(self, index: int) -> None:
        if index == 0:
            self.first_answered.set()
