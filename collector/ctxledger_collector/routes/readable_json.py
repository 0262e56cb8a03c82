"""JSON whose raw bytes a person can read safely: characters that reorder or hide text
(bidi overrides and isolates, zero-width and other invisible format characters, C1
controls, line and paragraph separators) written as ``\\uXXXX`` escapes. A JSON parser
reads the very same strings; a terminal or a log viewer shows the escape instead of
letting a hostile tool name reverse the rest of the line. And every answer says
``X-Content-Type-Options: nosniff``, so a browser never reads a JSON answer as a page."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ctxledger.visible import escape_invisible_in_json


def readable_bytes(data: bytes) -> bytes:
    """A UTF-8 JSON document with the invisible characters escaped (the document is
    valid JSON before and after: these characters can only be inside strings)."""
    if data.isascii():
        return data
    return escape_invisible_in_json(data.decode("utf-8")).encode("utf-8")


class ReadableJSONResponse(JSONResponse):
    """FastAPI's JSON answer, its invisible characters escaped."""

    def render(self, content: Any) -> bytes:
        return readable_bytes(super().render(content))


class NoSniff:
    """ASGI middleware: ``X-Content-Type-Options: nosniff`` on every HTTP answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"x-content-type-options", b"nosniff"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_header)
