"""Recognising a context overflow: whether a provider's error says the request is longer
than the model's context window, without importing any provider SDK."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from ctxledger._serialize import to_text

#: A check that says whether an error is a context overflow.
OverflowPredicate = Callable[[BaseException], bool]

#: Text that says the request is longer than the model's context window.
OVERFLOW_PATTERNS: Final[tuple[re.Pattern[str], ...]] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"context[_ ]length[_ ]exceeded",  # OpenAI / Azure error code
        r"maximum context length",  # OpenAI, vLLM: "This model's maximum context length is"
        r"prompt is too long",  # Anthropic
        r"exceeds? (?:the )?context (?:limit|window|length)",  # Anthropic input + max_tokens
        r"context[_ ]window[_ ]exceeded",  # LiteLLM
        r"input is too long",  # Bedrock
        r"too many (?:input |prompt )?tokens",
        r"exceeds the maximum number of tokens",  # Gemini
    )
)
#: A 413 that says the request body is too large (Anthropic ``request_too_large``).
_TOO_LARGE = re.compile(r"request_too_large|too large|exceeds the maximum size", re.IGNORECASE)


def _attr(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def http_status(error: BaseException) -> int | None:
    """The HTTP status the error (or its ``response``) carries, if any."""
    for holder in (error, _attr(error, "response")):
        if holder is None:
            continue
        for name in ("status_code", "status", "http_status"):
            value = _attr(holder, name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _body(error: BaseException) -> Any:
    body = _attr(error, "body")
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", errors="replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            return body
    return body


def _inner_errors(body: Any) -> list[Mapping[str, Any]]:
    """The body and its ``error`` object, where they are mappings."""
    found: list[Mapping[str, Any]] = []
    if isinstance(body, Mapping):
        found.append(body)
        inner = body.get("error")
        if isinstance(inner, Mapping):
            found.append(inner)
    return found


def _texts(error: BaseException) -> list[str]:
    """Everything the error says: its message, its body, its HTTP response text."""
    texts = [str(error)]
    message = _attr(error, "message")
    if isinstance(message, str):
        texts.append(message)
    body = _body(error)
    if body is not None:
        texts.append(body if isinstance(body, str) else to_text(body))
    response = _attr(error, "response")
    if response is not None:
        text = _attr(response, "text")  # an unread streaming response raises: ignored
        if isinstance(text, str):
            texts.append(text)
    return texts


def _openai_code(error: BaseException) -> bool:
    """OpenAI (and compatible): ``code == "context_length_exceeded"`` on the exception
    or in its body."""
    if http_status(error) == 429:
        return False
    codes = [_attr(error, "code")]
    codes += [inner.get("code") for inner in _inner_errors(_body(error))]
    return "context_length_exceeded" in codes


def _anthropic_error(error: BaseException) -> bool:
    """Anthropic: an ``invalid_request_error`` whose message says the prompt is too
    long or exceeds the context, or a ``request_too_large`` error."""
    if http_status(error) not in (None, 400, 413):
        return False
    for inner in _inner_errors(_body(error)):
        kind, message = inner.get("type"), inner.get("message")
        if kind == "request_too_large":
            return True
        if (
            kind == "invalid_request_error"
            and isinstance(message, str)
            and any(pattern.search(message) for pattern in OVERFLOW_PATTERNS)
        ):
            return True
    return False


def _http_overflow(error: BaseException) -> bool:
    """An HTTP 400 or 413 (or an error without a status) whose text names the overflow."""
    status = http_status(error)
    if status not in (None, 400, 413):
        return False
    texts = _texts(error)
    if any(pattern.search(text) for text in texts for pattern in OVERFLOW_PATTERNS):
        return True
    return status == 413 and any(_TOO_LARGE.search(text) for text in texts)


#: The checks :func:`is_context_length_error` runs; append your own predicate for a
#: provider whose overflow error none of them recognises.
CONTEXT_LENGTH_PREDICATES: list[OverflowPredicate] = [
    _openai_code,
    _anthropic_error,
    _http_overflow,
]


def is_context_length_error(error: BaseException) -> bool:
    """Whether ``error`` says the request exceeded the model's context window.

    Recognises OpenAI's ``context_length_exceeded`` code, Anthropic's ``prompt is too
    long`` / ``exceed context limit`` / ``request_too_large``, and HTTP 400/413 bodies
    with those markers, without importing any provider SDK; then any predicate added to
    :data:`CONTEXT_LENGTH_PREDICATES`. Follows ``raise ... from`` causes. A rate limit
    (429) is never an overflow. A predicate that raises counts as "no". Never raises.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 8:
        seen.add(id(current))
        for predicate in list(CONTEXT_LENGTH_PREDICATES):
            try:
                if predicate(current):
                    return True
            except Exception:
                continue
        current = current.__cause__
    return False
