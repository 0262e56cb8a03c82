"""Strands Agents' own telemetry, put in the GenAI conventions' form before it is read.

Strands keeps messages in the Bedrock Converse shape: a message's content is a list of
blocks, ``{"text"}``, ``{"toolUse": {toolUseId, name, input}}`` and ``{"toolResult":
{toolUseId, status, content: [{"text"} | {"json"}]}}``; what the model gets of a result
is its blocks' text (its OpenAI-compatible models join adjacent texts with a newline).
It writes them in one of two ways:

* by default, the older per-message span events (``gen_ai.user.message``, …,
  ``gen_ai.tool.message``, ``gen_ai.choice``), each ``content`` or ``message`` a JSON
  list of blocks; a tool span's result in its ``gen_ai.choice`` event;
* with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``, the conventions'
  parts in ``gen_ai.client.inference.operation.details`` events (a result's ``response``
  still a list of blocks), a tool span's result in ``gen_ai.tool.call.result`` (the same).

:func:`as_conventions` gives the span with ``gen_ai.input.messages`` /
``gen_ai.output.messages`` as parts and each result as the text the model saw.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Final

import orjson

from ctxledger import semconv as sc
from ctxledger_collector.derive.cuts import STRANDS_SCOPE
from ctxledger_collector.derive.messages import parse_json
from ctxledger_collector.derive.result_parts import (
    call_part,
    map_results,
    response_part,
    text_part,
)
from ctxledger_collector.derive.spans import SourceSpan

#: What Strands writes in place of a value its redaction policy keeps out.
REDACTED: Final = "[REDACTED]"
#: The same inside a JSON document built from per-message events.
REDACTED_JSON: Final = json.dumps(REDACTED)
#: The latest conventions' event holding a span's messages.
OPERATION_DETAILS: Final = "gen_ai.client.inference.operation.details"
_MESSAGES = (sc.GEN_AI_INPUT_MESSAGES, sc.GEN_AI_OUTPUT_MESSAGES)


def result_text(blocks: Any) -> Any:
    """What the model gets of a result's content blocks: their texts (a ``json`` block as
    JSON), joined by newlines; anything else as it is."""
    if not isinstance(blocks, list) or not blocks:
        return blocks
    texts: list[str] = []
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block, dict) and "json" in block:
            texts.append(json.dumps(block["json"], ensure_ascii=False))
        else:
            return blocks
    return "\n".join(texts)


def _part(block: Any) -> dict[str, Any] | None:
    if not isinstance(block, dict):
        return None
    if isinstance(block.get("text"), str):
        return text_part(block["text"])
    if isinstance(use := block.get("toolUse"), dict):
        return call_part(use.get("toolUseId"), use.get("name"), use.get("input"))
    if isinstance(result := block.get("toolResult"), dict):
        return response_part(result.get("toolUseId"), result_text(result.get("content")))
    return None


def _blocks(value: Any) -> list[Any]:
    if isinstance(value, str):
        try:
            value = parse_json(value)
        except ValueError:
            return [{"text": value}]
    return value if isinstance(value, list) else []


def _message(role: str, content: Any) -> dict[str, Any]:
    parts = [p for p in map(_part, _blocks(content)) if p is not None]
    return {"role": role, "parts": parts}


def _from_message_events(span: SourceSpan) -> dict[str, Any]:
    """The older per-message events as the conventions' messages attributes."""
    inputs, outputs = [], []
    for event in span.events:
        role = sc.GEN_AI_MESSAGE_EVENTS.get(event.name)
        if role is not None:
            inputs.append(_message(role, event.attributes.get("content")))
        elif event.name == sc.GEN_AI_EVENT_CHOICE:
            outputs.append(_message("assistant", event.attributes.get("message")))
    found: dict[str, Any] = {}
    if inputs:
        found[sc.GEN_AI_INPUT_MESSAGES] = orjson.dumps(inputs).decode()
    if outputs:
        found[sc.GEN_AI_OUTPUT_MESSAGES] = orjson.dumps(outputs).decode()
    return found


def _tool_result(span: SourceSpan) -> Any:
    """A tool span's result: its attribute, else its ``gen_ai.choice`` event's message
    (None where there is none, or Strands redacted it)."""
    result = span.attributes.get(sc.GEN_AI_TOOL_CALL_RESULT)
    if result is None:
        choice = next((e for e in span.events if e.name == sc.GEN_AI_EVENT_CHOICE), None)
        result = None if choice is None else choice.attributes.get("message")
    if result is None or result == REDACTED:
        return None
    return result_text(_blocks(result))


def _messages(span: SourceSpan) -> dict[str, Any]:
    """The span's input and output messages as the conventions' attributes; a side
    Strands redacted (or did not write) is left out."""
    found = {k: v for k, v in span.attributes.items() if k in _MESSAGES}
    for event in span.events:
        if event.name == OPERATION_DETAILS:
            found.update({k: v for k, v in event.attributes.items() if k in _MESSAGES})
    if not found:
        found = _from_message_events(span)
    return {
        key: map_results(value, result_text)
        for key, value in found.items()
        if isinstance(value, str) and REDACTED_JSON not in value and value != REDACTED
    }


def as_conventions(span: SourceSpan) -> SourceSpan:
    """A Strands span in the conventions' form (any other span as it is)."""
    if span.scope_name != STRANDS_SCOPE:
        return span
    attributes = {k: v for k, v in span.attributes.items() if k not in _MESSAGES}
    attributes.pop(sc.GEN_AI_TOOL_CALL_RESULT, None)
    if attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.GEN_AI_EXECUTE_TOOL:
        result = _tool_result(span)
        if result is not None:
            attributes[sc.GEN_AI_TOOL_CALL_RESULT] = result
    else:
        attributes.update(_messages(span))
    return dataclasses.replace(span, attributes=attributes, events=())
