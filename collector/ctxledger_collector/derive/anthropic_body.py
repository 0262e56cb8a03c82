"""An Anthropic Messages API request body as a runtime logged it (Claude Code's
``api_request_body``), read into an :class:`Exchange`: its system text, and per message
its texts, the ``tool_use`` calls and the ``tool_result`` results it carried.

The body may be only a prefix (a telemetry cut): the messages wholly inside it are read,
and the exchange says the rest was not seen. Claude Code writes ``messages`` before
``system`` and ``tools``, so a cut that falls after the messages loses nothing read here.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from ctxledger_collector.derive.compaction import claude_code_summary, compaction_key
from ctxledger_collector.derive.messages import (
    Exchange,
    Message,
    ToolCall,
    ToolResult,
    content_text,
)

_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"
MESSAGES_KEY = "messages"
SYSTEM_KEY = "system"
#: The content block Anthropic's server-side compaction puts in place of the history.
ANTHROPIC_COMPACTION_BLOCK = "compaction"


def _skip(text: str, index: int, chars: str) -> int:
    while index < len(text) and text[index] in chars:
        index += 1
    return index


def _array_prefix(text: str, index: int) -> tuple[list[Any], int | None]:
    """The whole elements of the JSON array opening at ``index``, and where the array
    ends (None: the text ends first)."""
    found: list[Any] = []
    index += 1
    while True:
        index = _skip(text, index, _SPACE + ",")
        if index >= len(text):
            return found, None
        if text[index] == "]":
            return found, index + 1
        try:
            element, index = _DECODER.raw_decode(text, index)
        except ValueError:
            return found, None
        found.append(element)


def _top_level(text: str) -> tuple[dict[str, Any], list[Any] | None, bool]:
    """The body's top-level values that are whole, the messages that are whole, and
    whether the messages array is whole."""
    values: dict[str, Any] = {}
    index = _skip(text, 0, _SPACE)
    if text[index : index + 1] != "{":
        return values, None, False
    index += 1
    while True:
        index = _skip(text, index, _SPACE + ",")
        if index >= len(text) or text[index] == "}":
            return _found(values)
        try:
            key, index = _DECODER.raw_decode(text, index)
        except ValueError:
            return _found(values)
        index = _skip(text, index, _SPACE + ":")
        if key == MESSAGES_KEY and text[index : index + 1] == "[":
            messages, end = _array_prefix(text, index)
            if end is None:
                return values, messages, False
            values[MESSAGES_KEY] = messages
            index = end
            continue
        try:
            value, index = _DECODER.raw_decode(text, index)
        except ValueError:
            return _found(values)
        values[str(key)] = value


def _found(values: dict[str, Any]) -> tuple[dict[str, Any], list[Any] | None, bool]:
    """What a body read to its end (or to a cut after its messages) holds."""
    messages = values.get(MESSAGES_KEY)
    return values, messages, messages is not None


def _whole(text: str) -> tuple[dict[str, Any], list[Any] | None, bool]:
    """A body the telemetry kept whole, parsed at once (read as a prefix if it is not
    JSON after all)."""
    try:
        values = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _top_level(text)
    if not isinstance(values, dict) or not isinstance(values.get(MESSAGES_KEY), list):
        return {}, None, False
    return _found(values)


def _message(raw: dict[str, Any]) -> Message:
    message = Message(str(raw.get("role") or ""))
    content = raw.get("content")
    if isinstance(content, str):
        message.texts.append(content)
        message.compaction = claude_code_summary(message.texts) if message.role == "user" else None
        return message
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            message.texts.append(block["text"])
        elif kind == "tool_use":
            message.calls.append(
                ToolCall(_id(block.get("id")), _id(block.get("name")), block.get("input"))
            )
        elif kind == "tool_result":
            message.results.append(
                ToolResult(_id(block.get("tool_use_id")), content_text(block.get("content")))
            )
        elif kind == ANTHROPIC_COMPACTION_BLOCK and message.compaction is None:
            message.compaction = compaction_key(ANTHROPIC_COMPACTION_BLOCK, block.get("content"))
    if message.compaction is None and message.role == "user":
        message.compaction = claude_code_summary(message.texts)
    return message


def _system(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [b["text"] for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return []


def read_request_body(text: str, cut: str | None) -> Exchange:
    """The request ``text`` (whole, or the prefix the telemetry kept: then ``cut`` says
    why) as an exchange; its input is None when not one message of it is readable."""
    values, messages, whole = _whole(text) if cut is None else _top_level(text)
    if messages is None:
        reason = cut or "the request body is not an Anthropic Messages API request"
        return Exchange(input=None, input_cut=reason)
    exchange = Exchange(
        input=[_message(m) for m in messages if isinstance(m, dict)],
        system=_system(values.get(SYSTEM_KEY)),
    )
    if not whole:
        exchange.input_cut = (
            f"{cut or 'the request body ends early'}; the messages after the first "
            f"{len(messages):,} were not seen"
        )
    return exchange


def _id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
