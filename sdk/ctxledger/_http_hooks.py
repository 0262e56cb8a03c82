"""Capture the ``sent`` stage from the exact bytes that leave the process, and the
``received`` stage from what the model server says, in its response, it processed.

Works with any httpx-compatible client (``httpx``, ``httpx2``) through its event hooks,
so it serves the ``openai`` and ``anthropic`` packages without importing either. Pass the
client class the provider package expects (``DefaultHttpxClient`` always is):

    OpenAI(http_client=openai.DefaultHttpxClient(event_hooks=ctxledger.httpx_event_hooks()))

The response hook never reads the body itself: it watches the chunks as the caller reads
them (:mod:`ctxledger._response_watch`), so a streamed answer streams as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from ctxledger._api import submit_request
from ctxledger._client import get_client
from ctxledger._received_usage import (
    KIND_ANTHROPIC,
    KIND_CHAT,
    KIND_LLAMACPP,
    KIND_OLLAMA,
    KIND_RESPONSES,
)
from ctxledger._response_watch import watch_response
from ctxledger._safety import never_raises

#: Request paths of the LLM APIs whose bodies carry the prompt, and which API each is.
_KINDS: Final = (
    ("/chat/completions", KIND_CHAT),
    ("/responses", KIND_RESPONSES),
    ("/messages", KIND_ANTHROPIC),
    ("/api/chat", KIND_OLLAMA),
    ("/completion", KIND_LLAMACPP),
)
LLM_PATH_SUFFIXES: tuple[str, ...] = tuple(suffix for suffix, _ in _KINDS)
#: Where the request hook leaves the request id for the response hook.
_EXTENSION: Final = "ctxledger.request_id"

UrlFilter = Callable[[str], bool]


def _kind(path: str) -> str | None:
    for suffix, kind in _KINDS:
        if path.endswith(suffix):
            return kind
    return None


def _request_kind(request: Any, url_filter: UrlFilter | None) -> str | None:
    """The API of an LLM request to measure, None for any other request."""
    if getattr(request, "method", "") != "POST":
        return None
    url = str(getattr(request, "url", ""))
    kind = _kind(url.split("?", 1)[0].rstrip("/"))
    if url_filter is not None:
        # A path of its own (a proxy, a gateway): read as OpenAI-compatible chat.
        return (kind or KIND_CHAT) if url_filter(url) else None
    return kind


@never_raises(None)
def _measure_http_request(request: Any, url_filter: UrlFilter | None) -> None:
    kind = _request_kind(request, url_filter)
    if kind is None:
        return
    body = request.content  # bytes of a non-streaming body; what the server receives
    if body:
        request_id = submit_request(bytes(body), model=None, read_response=True)
        request.extensions[_EXTENSION] = (request_id, kind)


@never_raises(None)
def _watch_http_response(response: Any) -> None:
    found = response.request.extensions.get(_EXTENSION)
    if found is None or not 200 <= response.status_code < 300:
        return  # an error answer: the server read nothing, and the agent sees why
    request_id, kind = found
    watch_response(get_client(), response, request_id, kind)


def httpx_event_hooks(
    *, is_async: bool = False, url_filter: UrlFilter | None = None
) -> dict[str, list[Callable[[Any], Any]]]:
    """Event hooks for ``httpx.Client(event_hooks=...)`` (``is_async=True`` for an
    ``AsyncClient``). Requests to ``…/chat/completions``, ``…/messages``,
    ``…/responses``, ollama's ``…/api/chat`` and llama.cpp's ``…/completion`` are
    measured, or those ``url_filter(url)`` accepts; their responses are read for what
    the server says it processed (stage ``received``)."""
    if is_async:

        async def on_request_async(request: Any) -> None:
            _measure_http_request(request, url_filter)

        async def on_response_async(response: Any) -> None:
            _watch_http_response(response)

        requests: list[Callable[[Any], Awaitable[None] | None]] = [on_request_async]
        responses: list[Callable[[Any], Awaitable[None] | None]] = [on_response_async]
        return {"request": requests, "response": responses}

    def on_request(request: Any) -> None:
        _measure_http_request(request, url_filter)

    def on_response(response: Any) -> None:
        _watch_http_response(response)

    return {"request": [on_request], "response": [on_response]}


def instrument_http_client(client: Any, *, url_filter: UrlFilter | None = None) -> Any:
    """Add the ``sent`` and ``received`` hooks to an existing httpx-compatible client;
    returns it."""
    is_async = hasattr(client, "aclose")
    added = httpx_event_hooks(is_async=is_async, url_filter=url_filter)
    hooks = client.event_hooks
    for name in ("request", "response"):
        hooks[name] = [*hooks.get(name, []), *added[name]]
    client.event_hooks = hooks
    return client
