"""Google ADK's own telemetry, put in the GenAI conventions' form before it is read.

ADK (2.x) writes the GenAI conventions by default (``generate_content`` and
``execute_tool`` spans, content with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
= ``span_only`` or ``span_and_event``). With ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`` it
writes its older spans instead: ``call_llm`` with the request as Gemini ``contents`` in
``gcp.vertex.agent.llm_request`` and the answer in ``gcp.vertex.agent.llm_response``, and
the tool's result in ``gcp.vertex.agent.tool_response`` (``{}`` when
``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false`` keeps content off).

Either way a tool that returns anything but a dict has it wrapped, ``{"result": value}``,
at every stage: the wrapping is taken off, so the value is what is measured.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

import orjson

from ctxledger import semconv as sc
from ctxledger_collector.derive.cuts import ADK_SCOPE
from ctxledger_collector.derive.messages import parse_json
from ctxledger_collector.derive.result_parts import (
    call_part,
    map_results,
    response_part,
    text_part,
)
from ctxledger_collector.derive.spans import SourceSpan

LLM_REQUEST: Final = "gcp.vertex.agent.llm_request"
LLM_RESPONSE: Final = "gcp.vertex.agent.llm_response"
TOOL_RESPONSE: Final = "gcp.vertex.agent.tool_response"
CALL_LLM: Final = "call_llm"
#: What the older spans hold where content is kept off.
NO_CONTENT: Final = "{}"
_ROLES: Final = {"model": "assistant"}


def unwrapped(response: Any) -> Any:
    """A tool's value without ADK's ``{"result": value}`` wrapping."""
    if isinstance(response, dict) and list(response) == ["result"]:
        return response["result"]
    return response


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return parse_json(value)
    except ValueError:
        return None


def _part(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, dict):
        return None
    if isinstance(part.get("text"), str):
        return text_part(part["text"])
    if isinstance(call := part.get("function_call"), dict):
        return call_part(call.get("id"), call.get("name"), call.get("args"))
    if isinstance(response := part.get("function_response"), dict):
        return response_part(response.get("id"), unwrapped(response.get("response")))
    return None


def _message(content: Any) -> dict[str, Any]:
    content = content if isinstance(content, dict) else {}
    role = str(content.get("role") or "user")
    parts = [p for p in map(_part, content.get("parts") or ()) if p is not None]
    return {"role": _ROLES.get(role, role), "parts": parts}


def _call_llm(attributes: dict[str, Any]) -> None:
    """The older ``call_llm`` span's request and answer as the conventions' messages
    (left out where content is off: the span then shows none)."""
    request = _json(attributes.pop(LLM_REQUEST, None))
    answer = _json(attributes.pop(LLM_RESPONSE, None))
    attributes[sc.GEN_AI_OPERATION_NAME] = "chat"
    if isinstance(request, dict) and isinstance(request.get("contents"), list):
        messages = [_message(c) for c in request["contents"]]
        attributes[sc.GEN_AI_INPUT_MESSAGES] = orjson.dumps(messages).decode()
    if isinstance(answer, dict) and isinstance(answer.get("content"), dict):
        output = [_message(answer["content"])]
        attributes[sc.GEN_AI_OUTPUT_MESSAGES] = orjson.dumps(output).decode()


def _tool_result(attributes: dict[str, Any]) -> None:
    result = attributes.pop(sc.GEN_AI_TOOL_CALL_RESULT, attributes.pop(TOOL_RESPONSE, None))
    value = _json(result)
    if result is None or result == NO_CONTENT or value is None:
        return
    inner = unwrapped(value)
    attributes[sc.GEN_AI_TOOL_CALL_RESULT] = result if inner is value else inner


def as_conventions(span: SourceSpan) -> SourceSpan:
    """An ADK span in the conventions' form (any other span as it is)."""
    if span.scope_name != ADK_SCOPE:
        return span
    attributes = dict(span.attributes)
    if attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.GEN_AI_EXECUTE_TOOL:
        attributes.pop(LLM_REQUEST, None)
        attributes.pop(LLM_RESPONSE, None)
        _tool_result(attributes)
    elif span.name == CALL_LLM:
        _call_llm(attributes)
    else:
        for key in (sc.GEN_AI_INPUT_MESSAGES, sc.GEN_AI_OUTPUT_MESSAGES):
            if isinstance(attributes.get(key), str):
                attributes[key] = map_results(attributes[key], unwrapped)
    return dataclasses.replace(span, attributes=attributes)
