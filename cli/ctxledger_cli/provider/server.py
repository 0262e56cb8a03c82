"""The HTTP server: routes each POST to its API, records every request's exact bytes,
and sends JSON answers or SSE streams (chunked, as the providers stream).
``POST /_ctxledger/reset``, the stand-in's own route (not recorded), rewinds the script."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ctxledger_cli.provider import anthropic_messages, chat, errors, llama_cpp, ollama, responses
from ctxledger_cli.provider.counting import Counting
from ctxledger_cli.provider.engine import Discard, Engine, RecordedRequest, Reply
from ctxledger_cli.provider.script import ScriptUsedUp, StepLike

#: Rewinds the script; outside every provider's routes.
RESET_PATH = "/_ctxledger/reset"

#: A handler gets the JSON body, the engine and the request's headers (keys lower-cased).
Handler = Callable[[Mapping[str, Any], Engine, Mapping[str, str]], Reply]

#: Path endings and their handlers; ``/v1`` in front is optional. Longest first.
ROUTES: tuple[tuple[str, Handler, bool], ...] = (
    ("/messages/count_tokens", anthropic_messages.count_tokens, True),
    ("/chat/completions", chat.handle, False),
    ("/responses", responses.handle, False),
    ("/messages", anthropic_messages.handle, True),
    ("/api/chat", ollama.handle, False),
    ("/completion", llama_cpp.handle, False),
)


def _route(path: str) -> tuple[Handler, bool] | None:
    bare = path.split("?", 1)[0].rstrip("/")
    for suffix, handler, is_anthropic in ROUTES:
        if bare.endswith(suffix):
            return handler, is_anthropic
    return None


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(*args)

    def _send_json(self, status: int, body: Mapping[str, Any], headers: Mapping[str, str]) -> None:
        encoded = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(encoded)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(encoded)

    def _send_stream(
        self, frames: Iterable[bytes], headers: Mapping[str, str], content_type: str
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        for frame in frames:
            self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        engine = self.server.engine
        if self.path.split("?", 1)[0].rstrip("/") == RESET_PATH:
            self._send_json(200, {"rewound": True, "turns": engine.script.rewind()}, {})
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        engine.record(RecordedRequest(self.command, self.path, headers, body))
        routed = _route(self.path)
        if routed is None:
            refusal = errors.openai_error(
                f"Invalid URL (POST {self.path})", error_type="invalid_request_error", status=404
            )
            self._send_json(refusal.status, refusal.body, refusal.headers)
            return
        handler, is_anthropic = routed
        try:
            payload = json.loads(body)
            if not isinstance(payload, dict):
                raise ValueError("not an object")
        except ValueError:
            refusal = errors.malformed(
                "We could not parse the JSON body of your request.", anthropic=is_anthropic
            )
            self._send_json(refusal.status, refusal.body, refusal.headers)
            return
        try:
            reply = handler(payload, engine, headers)
        except ScriptUsedUp as used_up:
            refusal = errors.script_used_up(
                used_up.turns, self.server.url + RESET_PATH, anthropic=is_anthropic
            )
            self._send_json(refusal.status, refusal.body, refusal.headers)
            return
        if reply.events is not None:
            self._send_stream(reply.events, reply.headers, reply.content_type)
        else:
            self._send_json(reply.status, reply.body or {}, reply.headers)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], engine: Engine, verbose: bool) -> None:
        self.engine = engine
        self.verbose = verbose
        super().__init__(address, _RequestHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class ProviderStandIn:
    """The stand-in on ``host:port`` (port 0: a free one), served from a thread.

    What an over-long prompt gets, at most one of: ``silent_front_discard`` (ollama's
    discard), ``token_truncate`` (llama.cpp's server before it refused),
    ``refuse_over_window`` (llama.cpp's server today: ``exceed_context_size_error``),
    ``stop_at_limit`` (LM Studio's ``stopAtLimit``); none: the provider's own refusal::

    with ProviderStandIn(script=[ToolCall("query_orders", {"customer": "C-1"}), "done"]) as p:
        client = openai.OpenAI(base_url=p.openai_base_url, api_key="x")
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        script: Iterable[StepLike] = (),
        context_window: int | None = None,
        silent_front_discard: bool = False,
        token_truncate: bool = False,
        n_keep: int = 0,
        refuse_over_window: bool = False,
        stop_at_limit: bool = False,
        count_scale: float = 1.0,
        count_encoding: str | None = None,
        loop: bool = False,
        verbose: bool = False,
    ) -> None:
        self.engine = Engine(
            script,
            context_window=context_window,
            silent_front_discard=silent_front_discard,
            token_truncate=token_truncate,
            n_keep=n_keep,
            counting=Counting(count_scale, count_encoding),
            loop=loop,
            refuse_over_window=refuse_over_window,
            stop_at_limit=stop_at_limit,
        )
        self._server = _Server((host, port), self.engine, verbose)
        self._thread: threading.Thread | None = None

    def start(self) -> ProviderStandIn:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="ctxledger-provider",
                daemon=True,
            )
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (the CLI command)."""
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._server.server_close()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ProviderStandIn:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def script(self, *steps: StepLike) -> None:
        """Queue the next answers (each request takes one)."""
        self.engine.script.extend(steps)

    def reset(self) -> None:
        """Rewind the script to its first step (what ``POST /_ctxledger/reset`` does)."""
        self.engine.script.rewind()

    @property
    def reset_url(self) -> str:
        """``http://host:port/_ctxledger/reset``: POST to rewind the script."""
        return self.url + RESET_PATH

    @property
    def url(self) -> str:
        """``http://host:port``: the base URL of the ``anthropic`` client."""
        return self._server.url

    @property
    def openai_base_url(self) -> str:
        """``http://host:port/v1``: the base URL of the ``openai`` client."""
        return f"{self.url}/v1"

    base_url = openai_base_url

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self.engine.lock:
            return list(self.engine.received)

    @property
    def ollama_url(self) -> str:
        """``http://host:port``: ollama's base URL (``/api/chat`` under it)."""
        return self.url

    @property
    def discards(self) -> list[Discard]:
        """The prompts shortened so far: front discards (``silent_front_discard``,
        ollama's ``/api/chat``, Responses ``truncation: "auto"``), token truncations
        (``token_truncate``, llama.cpp's ``/completion``) and Anthropic's context edits."""
        with self.engine.lock:
            return list(self.engine.discards)
