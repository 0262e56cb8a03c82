"""Rewriting the tool results of a conventions' messages document: what a framework
wraps a result in (Strands' content blocks, ADK's ``{"result": ...}``) taken off, so the
result is measured as the text it was, the same at every stage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ctxledger import semconv as sc
from ctxledger_collector.derive.messages import parse_json


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
