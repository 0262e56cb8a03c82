"""A span's input counted as the SDK counts a request body (contract §7), as a Chat
Completions body: each message's segments counted once per model and kept on the parsed
message, which the later requests of a run carry again (:mod:`.parsed_prefixes`); the
request's segments are its messages' in order, what counting the whole body gives
(``tests/collector/test_derive_received.py``).
"""

from __future__ import annotations

from typing import Any

from ctxledger.request_count import CountTokens, RequestSegments, segment_request
from ctxledger_collector.derive.messages import Exchange, Message

_MEMO_KEY = __name__


def chat_body(exchange: Exchange) -> dict[str, Any]:
    """The span's input as a Chat Completions body: a message's tool results each a
    ``tool`` message of their own, after the message's own text and calls."""
    messages: list[dict[str, Any]] = []
    for message in exchange.input or ():
        messages.extend(_chat_messages(message))
    body: dict[str, Any] = {"messages": messages}
    if exchange.system:
        body["system"] = list(exchange.system)
    return body


def _chat_messages(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if message.texts or message.calls or not message.results:
        own: dict[str, Any] = {"role": message.role, "content": "".join(message.texts)}
        if message.calls:
            own["tool_calls"] = [
                {"id": c.id or "", "function": {"name": c.name or "", "arguments": c.arguments}}
                for c in message.calls
            ]
        out.append(own)
    for result in message.results:
        out.append({"role": "tool", "tool_call_id": result.id or "", "content": result.text})
    return out


def request_segments(
    exchange: Exchange, count: CountTokens, tokenizer: str, model: str | None
) -> RequestSegments:
    """``segment_request`` of the span's chat body (:func:`chat_body`)."""
    system = {"system": list(exchange.system)} if exchange.system else {}
    parts = [segment_request(system, count, tokenizer, model)]
    key = f"{_MEMO_KEY}:{tokenizer}:{model}"
    for message in exchange.input or ():
        part = message.memo.get(key)
        if part is None:
            body = {"messages": _chat_messages(message)}
            part = message.memo[key] = segment_request(body, count, tokenizer, model)
        parts.append(part)
    return _joined(parts)


def _joined(parts: list[RequestSegments]) -> RequestSegments:
    """Segments counted apart, as one request's: in order, primed once, a call's tool
    name the first given."""
    first = parts[0]
    tokens = tuple(t for p in parts for t in p.tokens)
    names: dict[str, str] = {}
    for part in parts:
        for call_id, name in part.tool_names.items():
            names.setdefault(call_id, name)
    return RequestSegments(
        call_ids=tuple(c for p in parts for c in p.call_ids),
        tokens=tokens,
        chars=tuple(c for p in parts for c in p.chars),
        roles=tuple(r for p in parts for r in p.roles),
        counted_tokens=first.counted_tokens - sum(first.tokens) + sum(tokens),
        tokenizer=first.tokenizer,
        model=first.model,
        tool_names=names,
        keep_tokens=first.keep_tokens,
        excluded_tools=first.excluded_tools,
    )
