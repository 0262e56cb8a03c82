"""A real local stand-in for the OpenAI Chat Completions endpoint.

It listens on 127.0.0.1, answers ``POST …/chat/completions`` with a valid
``chat.completion`` object and records the exact bytes of every request body, so a
test can compare what the SDK measured with what the server received.

Like OpenAI, it refuses a conversation whose tool calls and results do not pair up
(an assistant message's ``tool_calls`` must be followed by a ``tool`` message for each
id; a ``tool`` message must answer a preceding call) with a 400 and OpenAI's error
body. Its answers can be scripted: each request takes the next scripted assistant
message (text, or tool calls), and plain ``"ok"`` once the script is used up.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable, Sequence
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


@dataclass(frozen=True)
class ToolCall:
    """A tool call the stand-in's scripted answer issues."""

    id: str
    name: str
    arguments: dict[str, Any]


_completion_ids = itertools.count(1)


def chat_completion(
    model: str, content: str | None = "ok", tool_calls: Sequence[ToolCall] = ()
) -> dict[str, Any]:
    """A minimal valid ``chat.completion`` response object."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in tool_calls
        ]
    return {
        "id": f"chatcmpl-e2e-{next(_completion_ids)}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }


def _invalid_request(message: str, param: str | None) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}
    }


def pairing_error(messages: Sequence[Any]) -> dict[str, Any] | None:
    """OpenAI's 400 body for a conversation whose tool calls and results do not pair up
    (None when they do). The wording, typo included, is OpenAI's."""
    pending: list[str] = []
    answered: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending and call_id not in answered:
                return _invalid_request(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    f"messages.[{index}].role",
                )
            if call_id in pending:
                pending.remove(call_id)
                answered.add(call_id)
            continue
        if pending:
            return _invalid_request(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                "response messages: " + ", ".join(pending),
                f"messages.[{index}].role",
            )
        if role == "assistant":
            pending = [c.get("id") for c in message.get("tool_calls") or ()]
    if pending:
        return _invalid_request(
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            "response messages: " + ", ".join(pending),
            f"messages.[{len(messages)}].role",
        )
    return None


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
            request = json.loads(body)
            model = str(request.get("model", "unknown"))
        except (ValueError, AttributeError):
            self._reply(400, {"error": {"message": "body is not a JSON object"}})
            return
        refused = pairing_error(request.get("messages") or [])
        if refused is not None:
            self._reply(400, refused)
            return
        with self.server.lock:
            answer = self.server.script.pop(0) if self.server.script else None
        if answer is None:
            self._reply(200, chat_completion(model))
        elif isinstance(answer, str):
            self._reply(200, chat_completion(model, answer))
        else:
            self._reply(200, chat_completion(model, None, answer))


#: A scripted answer: the assistant's text, or the tool calls it issues.
Answer = str | Sequence[ToolCall]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], script: Iterable[Answer]) -> None:
        self.lock = threading.Lock()
        self.received: list[LLMRequest] = []
        self.script: list[Answer] = list(script)
        super().__init__(address, _Handler)


class ChatCompletionsServer:
    """``with ChatCompletionsServer() as llm: OpenAI(base_url=llm.base_url, ...)``."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, script: Iterable[Answer] = ()
    ) -> None:
        self._server = _Server((host, port), script)
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

    def script(self, *answers: Answer) -> None:
        """Queue the next answers (each request takes one)."""
        with self._server.lock:
            self._server.script.extend(answers)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in ``/v1``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[LLMRequest]:
        with self._server.lock:
            return list(self._server.received)
