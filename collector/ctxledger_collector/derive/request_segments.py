"""A span's input counted as the SDK counts a request body (contract §7), as a Chat
Completions body: each message's segments counted once per model and kept on the parsed
message, which the later requests of a run carry again (:mod:`.parsed_prefixes`); the
request's segments are its messages' in order, what counting the whole body gives
(``tests/collector/test_derive_received.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
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


@dataclass(frozen=True)
class _JoinedPrefix:
    """The segments of a request's first ``length`` input messages, joined; kept on the
    last of them for the next request of the run, which extends the same messages."""

    length: int
    first: Message
    segments: RequestSegments


def request_segments(
    exchange: Exchange, count: CountTokens, tokenizer: str, model: str | None
) -> RequestSegments:
    """``segment_request`` of the span's chat body (:func:`chat_body`)."""
    system = {"system": list(exchange.system)} if exchange.system else {}
    head = segment_request(system, count, tokenizer, model)
    inputs = exchange.input or []
    if not inputs:
        return head
    key = f"{_MEMO_KEY}:{tokenizer}:{model}"
    joined_key = f"{key}:joined"
    earlier = _earlier_prefix(inputs, joined_key)
    parts = [earlier.segments] if earlier is not None else []
    for message in inputs[earlier.length if earlier is not None else 0 :]:
        part = message.memo.get(key)
        if part is None:
            body = {"messages": _chat_messages(message)}
            part = message.memo[key] = segment_request(body, count, tokenizer, model)
        parts.append(part)
    messages = _joined(parts)
    if earlier is not None:
        inputs[earlier.length - 1].memo.pop(joined_key, None)  # one per run's latest
    inputs[-1].memo[joined_key] = _JoinedPrefix(len(inputs), inputs[0], messages)
    return _joined([head, messages])


def _earlier_prefix(inputs: list[Message], joined_key: str) -> _JoinedPrefix | None:
    """The joined segments an earlier request kept of the messages ``inputs`` begins
    with, if any."""
    for index in range(len(inputs) - 1, -1, -1):
        kept: _JoinedPrefix | None = inputs[index].memo.get(joined_key)
        if kept is None:
            continue
        # The same message object at the same place: the same parsed messages before it.
        if kept.length != index + 1 or kept.first is not inputs[0]:
            return None
        return kept
    return None


def _joined(parts: list[RequestSegments]) -> RequestSegments:
    """Segments counted apart, as one request's: in order, primed once, a call's tool
    name the first given."""
    first = parts[0]
    tokens = tuple(chain.from_iterable(p.tokens for p in parts))
    names: dict[str, str] = {}
    for part in reversed(parts):  # the first given wins
        names.update(part.tool_names)
    return RequestSegments(
        call_ids=tuple(chain.from_iterable(p.call_ids for p in parts)),
        tokens=tokens,
        chars=tuple(chain.from_iterable(p.chars for p in parts)),
        roles=tuple(chain.from_iterable(p.roles for p in parts)),
        counted_tokens=first.counted_tokens - sum(first.tokens) + sum(tokens),
        tokenizer=first.tokenizer,
        model=first.model,
        tool_names=names,
        keep_tokens=first.keep_tokens,
        excluded_tools=first.excluded_tools,
    )
