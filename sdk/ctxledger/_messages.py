"""Find tool calls and tool results in LLM chat message lists and request bodies.

This module is pure: standard library only and no I/O; its one SDK import is its pure
sibling :mod:`ctxledger._message_content`. It understands three wire formats, detected
per message (a list may mix them harmlessly):

``openai_chat``
    OpenAI Chat Completions. Calls are the ``tool_calls`` entries of (assistant)
    messages, ``{"id", "type": "function", "function": {"name", "arguments"}}``
    (``"type": "custom"`` with a ``custom`` object is accepted too). Results are
    ``{"role": "tool", "tool_call_id", "content"}`` messages.
``anthropic``
    Anthropic Messages. Calls are ``{"type": "tool_use", "id", "name", "input"}``
    content blocks; results are ``{"type": "tool_result", "tool_use_id", "content"}``
    content blocks (``is_error`` does not change the text).
``openai_responses``
    OpenAI Responses API ``input`` items: ``{"type": "function_call", "call_id",
    "name", "arguments"}`` and ``{"type": "function_call_output", "call_id",
    "output"}`` (and their ``custom_tool_call`` / ``custom_tool_call_output`` twins).

How a result's content becomes one text, and how messages given as objects are read, is
said in :mod:`ctxledger._message_content`. Anything unrecognised is skipped silently:
:func:`parse_messages` never raises because of an odd entry.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ctxledger._message_content import (
    RESPONSES_CALL_TYPES,
    RESPONSES_OUTPUT_TYPES,
    as_mapping,
    content_text,
    list_items,
    lookup,
    str_or_none,
    type_of,
    usable_call_id,
)

__all__ = [
    "FORMAT_ANTHROPIC",
    "FORMAT_OPENAI_CHAT",
    "FORMAT_OPENAI_RESPONSES",
    "FORMAT_UNKNOWN",
    "ParsedMessages",
    "ParsedRequest",
    "RequestBodyError",
    "ToolCallPart",
    "ToolResultPart",
    "parse_messages",
    "parse_request_body",
]

FORMAT_OPENAI_CHAT: Final = "openai_chat"
FORMAT_ANTHROPIC: Final = "anthropic"
FORMAT_OPENAI_RESPONSES: Final = "openai_responses"
FORMAT_UNKNOWN: Final = "unknown"


@dataclass(frozen=True)
class ToolResultPart:
    """One tool result found in a message list."""

    tool_call_id: str
    text: str
    """The result content exactly as the model will see it, as one string."""
    tool_name: str | None
    """Resolved from the matching tool call in the same message list, else ``None``."""
    message_index: int
    """Index of the message (or input item) that carries the result."""


@dataclass(frozen=True)
class ToolCallPart:
    """One tool call (a request by the model to run a tool) found in a message list."""

    tool_call_id: str
    tool_name: str | None
    message_index: int


@dataclass(frozen=True)
class ParsedMessages:
    """The tool calls and tool results of a message list, in message order."""

    format: str
    """``openai_chat``, ``anthropic``, ``openai_responses`` or ``unknown``.

    The format of the first tool call or result found; ``unknown`` if there is none.
    """
    results: tuple[ToolResultPart, ...]
    calls: tuple[ToolCallPart, ...]


@dataclass(frozen=True)
class ParsedRequest:
    """What :func:`parse_request_body` finds in an LLM request body."""

    messages: ParsedMessages
    model: str | None


class RequestBodyError(ValueError):
    """The request body is not a JSON object (invalid UTF-8, invalid JSON, other type)."""


# --- per-format extraction ----------------------------------------------------------


class _Collector:
    def __init__(self) -> None:
        self.calls: list[ToolCallPart] = []
        # (tool_call_id, text, message_index) -- names are resolved at the end
        self.results: list[tuple[str, str, int]] = []
        self.first_format: str | None = None

    def _seen(self, fmt: str) -> None:
        if self.first_format is None:
            self.first_format = fmt

    def call(self, fmt: str, call_id: str | None, name: Any, index: int) -> None:
        if call_id is None:
            return
        self._seen(fmt)
        self.calls.append(ToolCallPart(call_id, str_or_none(name), index))

    def result(self, fmt: str, call_id: str | None, content: Any, index: int) -> None:
        if call_id is None:
            return
        self._seen(fmt)
        self.results.append((call_id, content_text(content), index))

    def build(self) -> ParsedMessages:
        names: dict[str, str | None] = {}
        for call in self.calls:
            # The first call with an id wins; a later named duplicate fills a missing name.
            if names.get(call.tool_call_id) is None:
                names[call.tool_call_id] = call.tool_name
        results = tuple(
            ToolResultPart(call_id, text, names.get(call_id), index)
            for call_id, text, index in self.results
        )
        return ParsedMessages(
            format=self.first_format or FORMAT_UNKNOWN,
            results=results,
            calls=tuple(self.calls),
        )


def _openai_chat_calls(message: Mapping[str, Any], index: int, out: _Collector) -> None:
    for raw in list_items(lookup(message, "tool_calls")):
        call = as_mapping(raw)
        if call is None:
            continue
        name: Any = None
        for key in ("function", "custom"):
            spec = as_mapping(lookup(call, key))
            if spec is not None:
                name = lookup(spec, "name")
                break
        out.call(FORMAT_OPENAI_CHAT, usable_call_id(lookup(call, "id")), name, index)


def _anthropic_blocks(content: Any, index: int, out: _Collector) -> None:
    for raw in list_items(content):
        block = as_mapping(raw)
        if block is None:
            continue
        block_type = type_of(block)
        if block_type == "tool_use":
            out.call(
                FORMAT_ANTHROPIC, usable_call_id(lookup(block, "id")), lookup(block, "name"), index
            )
        elif block_type == "tool_result":
            out.result(
                FORMAT_ANTHROPIC,
                usable_call_id(lookup(block, "tool_use_id")),
                lookup(block, "content"),
                index,
            )


def _parse_one(raw: Any, index: int, out: _Collector) -> None:
    message = as_mapping(raw)
    if message is None:
        return
    item_type = type_of(message)
    if item_type in RESPONSES_CALL_TYPES:
        out.call(
            FORMAT_OPENAI_RESPONSES,
            usable_call_id(lookup(message, "call_id")),
            lookup(message, "name"),
            index,
        )
        return
    if item_type in RESPONSES_OUTPUT_TYPES:
        out.result(
            FORMAT_OPENAI_RESPONSES,
            usable_call_id(lookup(message, "call_id")),
            lookup(message, "output"),
            index,
        )
        return
    if lookup(message, "role") == "tool":
        out.result(
            FORMAT_OPENAI_CHAT,
            usable_call_id(lookup(message, "tool_call_id")),
            lookup(message, "content"),
            index,
        )
        return
    _openai_chat_calls(message, index, out)
    _anthropic_blocks(lookup(message, "content"), index, out)


# --- public API ----------------------------------------------------------------------


def parse_messages(messages: Iterable[Any]) -> ParsedMessages:
    """Find the tool calls and tool results in a list of chat messages or input items.

    Entries that are not recognisable messages (``None``, strings, wrong types, missing
    keys) are skipped; ``message_index`` still counts them, so it is always the index
    in ``messages``. A result's ``tool_name`` comes from the call with the same id
    anywhere in the list. Never raises on odd shapes, including a non-iterable argument.
    """
    out = _Collector()
    if isinstance(messages, (str, bytes, bytearray, Mapping)):
        return out.build()
    try:
        iterator = iter(messages)
    except TypeError:
        return out.build()
    for index, raw in enumerate(iterator):
        _parse_one(raw, index, out)
    return out.build()


def parse_request_body(body: str | bytes | bytearray | Mapping[str, Any]) -> ParsedRequest:
    """Parse an LLM request body (JSON text, UTF-8 bytes, or an already decoded mapping).

    Messages are read from ``messages`` (Chat Completions, Anthropic) or, if there is no
    ``messages`` list, from ``input`` (Responses API; a plain string ``input`` carries no
    tool parts). A body that uses ``input`` but has no tool parts reports the format
    ``openai_responses``. The model is ``body["model"]`` if it is a string.

    Raises :class:`RequestBodyError` if the body is not valid UTF-8, not valid JSON, or
    not a JSON object.
    """
    data: Any
    if isinstance(body, Mapping):
        data = body
    elif isinstance(body, (bytes, bytearray)):
        try:
            text = bytes(body).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RequestBodyError(f"request body is not valid UTF-8: {exc}") from exc
        data = _loads(text)
    elif isinstance(body, str):
        data = _loads(body)
    else:
        raise RequestBodyError(
            f"request body must be str, bytes or a mapping, got {type(body).__name__}"
        )
    if not isinstance(data, Mapping):
        raise RequestBodyError(f"request body must be a JSON object, got {_json_type_name(data)}")

    model = str_or_none(lookup(data, "model"))
    messages = lookup(data, "messages")
    if isinstance(messages, (list, tuple)):
        return ParsedRequest(parse_messages(messages), model)
    input_items = lookup(data, "input")
    if isinstance(input_items, (list, tuple, str)):
        parsed = parse_messages(input_items if not isinstance(input_items, str) else ())
        if parsed.format == FORMAT_UNKNOWN:
            parsed = dataclasses.replace(parsed, format=FORMAT_OPENAI_RESPONSES)
        return ParsedRequest(parsed, model)
    return ParsedRequest(parse_messages(()), model)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise RequestBodyError(f"request body is not valid JSON: {exc}") from exc


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return type(value).__name__
