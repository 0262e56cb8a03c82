"""A real collector: the FastAPI app under uvicorn in a thread, on a free loopback port."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import httpx
import uvicorn

from ctxledger_collector.app import create_app
from ctxledger_collector.ops.settings import Settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LiveCollector:
    """``with LiveCollector(settings) as c: httpx.get(c.url + "/healthz")``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = create_app(settings)
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveCollector:
        self._thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.server.started:
                return self
            if not self._thread.is_alive():
                raise RuntimeError("the collector failed to start")
            time.sleep(0.02)
        raise RuntimeError("the collector did not start within 30 s")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=15)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)
