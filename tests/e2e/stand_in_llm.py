"""A real local stand-in for the OpenAI Chat Completions endpoint.

It listens on 127.0.0.1, answers ``POST …/chat/completions`` with a valid
``chat.completion`` object and records the exact bytes of every request body, so a
test can compare what the SDK measured with what the server received.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class LLMRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Keys lower-cased."""
    body: bytes
    """The request body exactly as it arrived."""


def chat_completion(model: str, content: str = "ok") -> dict[str, Any]:
    """A minimal valid ``chat.completion`` response object."""
    return {
        "id": "chatcmpl-e2e-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        return None

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.server.lock:
            self.server.received.append(
                LLMRequest(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
            )
        if not self.path.split("?", 1)[0].endswith("/chat/completions"):
            self._reply(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            model = str(json.loads(body).get("model", "unknown"))
        except (ValueError, AttributeError):
            self._reply(400, {"error": {"message": "body is not a JSON object"}})
            return
        self._reply(200, chat_completion(model))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int]) -> None:
        self.lock = threading.Lock()
        self.received: list[LLMRequest] = []
        super().__init__(address, _Handler)


class ChatCompletionsServer:
    """``with ChatCompletionsServer() as llm: OpenAI(base_url=llm.base_url, ...)``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server((host, port))
        self._thread: threading.Thread | None = None

    def start(self) -> ChatCompletionsServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="stand-in-llm",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ChatCompletionsServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in ``/v1``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[LLMRequest]:
        with self._server.lock:
            return list(self._server.received)
