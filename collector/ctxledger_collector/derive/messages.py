"""The messages one LLM span shows, whatever convention carried them: text, the tool
calls an assistant message issued, and the tool results a message carried. Held in
memory while a span is derived, then dropped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ctxledger import semconv as sc
from ctxledger_collector.derive.compaction import compaction_key


@dataclass(frozen=True)
class ToolCall:
    id: str | None
    name: str | None
    arguments: Any = None
    """As the span gave them: a JSON string, or an already parsed value."""


#: The ``cut`` of a tool result part that carries no value at all (content capture off);
#: the reader that knows the span replaces it by the setting to change.
VALUE_NOT_CAPTURED = "the tool_call_response part carries no value (content capture is off)"


@dataclass(frozen=True)
class ToolResult:
    id: str | None
    text: str
    cut: str | None = None
    """Why the telemetry did not show this result whole."""
    memo: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    """What derivation learned of this result, kept with it: later requests of a long run
    carry the same parsed object (:mod:`.parsed_prefixes`). Not part of its value."""


@dataclass
class Message:
    role: str
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    #: The compaction a part of the message stands for (:mod:`.compaction`), if any.
    compaction: str | None = None
    #: A result part carries no value (``VALUE_NOT_CAPTURED``): a flag, so that a long
    #: run's request need not look through every result it carries.
    uncaptured: bool = False
    memo: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    """What derivation learned of the input this message ends, kept with it: a later
    request of the run extends the same parsed messages. Not part of its value."""


@dataclass
class Exchange:
    """One LLM request and its response. ``input``/``output`` are None when the span does
    not show them; ``*_cut`` say why the telemetry could not show them whole."""

    input: list[Message] | None = None
    output: list[Message] | None = None
    system: list[str] = field(default_factory=list)
    input_cut: str | None = None
    output_cut: str | None = None
    #: Lengths of values that were cut by an attribute length limit: the limit in force.
    cut_lengths: set[int] = field(default_factory=set)


def as_text(value: Any) -> str:
    """A value as the model saw it: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return orjson.dumps(value).decode()


def parse_json(text: Any) -> Any:
    """``text`` parsed as JSON; raises ValueError when it is not (or not a string)."""
    if not isinstance(text, (str, bytes)):
        raise ValueError("not a JSON string")
    return orjson.loads(text)


def _parts_message(raw: dict[str, Any]) -> Message:
    """A GenAI ``{"role", "parts": [...]}`` message. Matched on the part type; a tool
    result's value is under ``response`` (the spec) or ``result`` (its example,
    pydantic-ai), whatever the role (pydantic-ai sends tool returns as ``user``)."""
    message = Message(str(raw.get("role") or ""))
    parts = raw.get("parts")
    if not isinstance(parts, list):
        content = raw.get("content")
        if isinstance(content, str):
            message.texts.append(content)
        return message
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == sc.GEN_AI_PART_TEXT:
            message.texts.append(as_text(part.get("content")))
        elif kind == sc.GEN_AI_PART_TOOL_CALL:
            message.calls.append(
                ToolCall(_id(part.get("id")), _id(part.get("name")), part.get("arguments"))
            )
        elif kind == sc.GEN_AI_PART_TOOL_CALL_RESPONSE:
            key = next((k for k in sc.GEN_AI_TOOL_RESPONSE_KEYS if k in part), None)
            if key is None:  # content capture off: the part says only which call it answers
                message.results.append(ToolResult(_id(part.get("id")), "", VALUE_NOT_CAPTURED))
                message.uncaptured = True
            else:
                message.results.append(ToolResult(_id(part.get("id")), as_text(part[key])))
        elif kind == sc.GEN_AI_PART_COMPACTION and message.compaction is None:
            message.compaction = compaction_key(sc.GEN_AI_PART_COMPACTION, part)
    return message


def parts_messages(document: Any) -> list[Message]:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages``, parsed."""
    if not isinstance(document, list):
        raise ValueError("messages must be a JSON array")
    return [_parts_message(m) for m in document if isinstance(m, dict)]


def chat_message(raw: dict[str, Any], role: str | None = None) -> Message:
    """An OpenAI Chat Completions style message (the older events and OpenLLMetry's
    legacy JSON): ``content``, ``tool_calls[].{id, function.{name, arguments}}``, and a
    tool message's ``tool_call_id`` (or ``id``)."""
    role = str(raw.get("role") or role or "")
    message = Message(role)
    content = raw.get("content")
    calls = raw.get("tool_calls")
    if role == "tool":
        call_id = raw.get("tool_call_id") or raw.get("id")
        message.results.append(ToolResult(_id(call_id), content_text(content)))
        return message
    if content not in (None, ""):
        message.texts.append(content_text(content))
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            function = _mapping(call.get("function"))
            message.calls.append(
                ToolCall(
                    _id(call.get("id")),
                    _id(function.get("name") or call.get("name")),
                    function.get("arguments", call.get("arguments")),
                )
            )
    return message


def content_text(content: Any) -> str:
    """A content that may be a list of ``{"type": "text", "text"}`` blocks."""
    if isinstance(content, list) and all(isinstance(b, dict) for b in content):
        texts = [b.get("text") for b in content if isinstance(b.get("text"), str)]
        if len(texts) == len(content):
            return "".join(str(t) for t in texts)
    return as_text(content)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def nested_message(body: dict[str, Any]) -> dict[str, Any]:
    """A ``{"message": {...}}`` wrapper's message (a choice), or the body itself."""
    inner = body.get("message")
    return inner if isinstance(inner, dict) else body


def _id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
