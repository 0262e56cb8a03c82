"""The conventions' message parts a framework's own shapes are rewritten into (Strands'
Converse blocks, ADK's Gemini parts), and the tool results of a conventions' messages
document with what a framework wraps them in (Strands' content blocks, ADK's
``{"result": ...}``) taken off, so each result is measured as the text it was, the same
at every stage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ctxledger import semconv as sc
from ctxledger_collector.derive.messages import parse_json


def text_part(text: str) -> dict[str, Any]:
    return {"type": sc.GEN_AI_PART_TEXT, "content": text}


def call_part(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {"type": sc.GEN_AI_PART_TOOL_CALL, "id": call_id, "name": name, "arguments": arguments}


def response_part(call_id: Any, response: Any) -> dict[str, Any]:
    return {"type": sc.GEN_AI_PART_TOOL_CALL_RESPONSE, "id": call_id, "response": response}


def map_results(messages: str, unwrap: Callable[[Any], Any]) -> str:
    """``messages`` (``gen_ai.input.messages`` or ``.output.messages``) with each
    ``tool_call_response`` part's ``response`` replaced by ``unwrap(response)``; a document
    the telemetry cut is left as it is (it is read as cut)."""
    try:
        parsed = parse_json(messages)
    except ValueError:
        return messages
    for message in parsed if isinstance(parsed, list) else ():
        for part in message.get("parts") or () if isinstance(message, dict) else ():
            if isinstance(part, dict) and part.get("type") == sc.GEN_AI_PART_TOOL_CALL_RESPONSE:
                part["response"] = unwrap(part.get("response"))
    return orjson.dumps(parsed).decode()
