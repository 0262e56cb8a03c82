"""Capture the ``sent`` stage from the exact bytes that leave the process.

Works with any httpx-compatible client (``httpx``, ``httpx2``) through its event hooks,
so it serves the ``openai`` and ``anthropic`` packages without importing either. Pass the
client class the provider package expects (``DefaultHttpxClient`` always is):

    OpenAI(http_client=openai.DefaultHttpxClient(event_hooks=ctxledger.httpx_event_hooks()))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ctxledger._api import measure_request
from ctxledger._safety import never_raises

#: Request paths of the chat APIs whose bodies carry tool results.
LLM_PATH_SUFFIXES: tuple[str, ...] = ("/chat/completions", "/messages", "/responses")

UrlFilter = Callable[[str], bool]


def _is_llm_request(request: Any, url_filter: UrlFilter | None) -> bool:
    if getattr(request, "method", "") != "POST":
        return False
    url = str(getattr(request, "url", ""))
    if url_filter is not None:
        return url_filter(url)
    path = url.split("?", 1)[0].rstrip("/")
    return path.endswith(LLM_PATH_SUFFIXES)


@never_raises(None)
def _measure_http_request(request: Any, url_filter: UrlFilter | None) -> None:
    if not _is_llm_request(request, url_filter):
        return
    body = request.content  # bytes of a non-streaming body; what the server receives
    if body:
        measure_request(bytes(body))


def httpx_event_hooks(
    *, is_async: bool = False, url_filter: UrlFilter | None = None
) -> dict[str, list[Callable[[Any], Any]]]:
    """Event hooks for ``httpx.Client(event_hooks=...)`` (``is_async=True`` for an
    ``AsyncClient``). Requests to ``…/chat/completions``, ``…/messages`` and
    ``…/responses`` are measured, or those ``url_filter(url)`` accepts."""
    if is_async:

        async def on_request_async(request: Any) -> None:
            _measure_http_request(request, url_filter)

        hooks: list[Callable[[Any], Awaitable[None] | None]] = [on_request_async]
        return {"request": hooks}

    def on_request(request: Any) -> None:
        _measure_http_request(request, url_filter)

    return {"request": [on_request]}


def instrument_http_client(client: Any, *, url_filter: UrlFilter | None = None) -> Any:
    """Add the ``sent`` hook to an existing httpx-compatible client; returns it."""
    is_async = hasattr(client, "aclose")
    hooks = client.event_hooks
    hooks.setdefault("request", [])
    hooks["request"] = [
        *hooks["request"],
        *httpx_event_hooks(is_async=is_async, url_filter=url_filter)["request"],
    ]
    client.event_hooks = hooks
    return client
