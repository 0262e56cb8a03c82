"""The agent loop's plumbing the scripted incidents share: OpenAI Chat messages and the
two measurements of an LLM request.

No LLM and no network. Every incident plays the loop a real agent runs: the tool is
``@ctxledger.tool`` (``original``, ``serialized``), the messages about to be sent go
through ``measure_messages`` (``assembled``) and the request body bytes through
``measure_request`` (``sent`` plus the request manifest), as the httpx hook would.
Between them sits the context step each seed is about, losing data or not.
"""

from __future__ import annotations

import json
from typing import Any

import ctxledger

Message = dict[str, Any]
DEFAULT_MODEL = "gpt-4o"


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    arguments_text = json.dumps(arguments, ensure_ascii=False)
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments_text},
    }


def assistant_calls(*calls: dict[str, Any]) -> Message:
    """An assistant message that asks for one or more tool calls (OpenAI Chat format)."""
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def tool_message(call_id: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def request_body(messages: list[Message], model: str) -> bytes:
    return json.dumps({"model": model, "messages": messages}, ensure_ascii=False).encode("utf-8")


def body_chars(messages: list[Message]) -> int:
    """The size of a request's messages in characters, the scripts' stand-in for tokens."""
    return len(json.dumps(messages, ensure_ascii=False))


def send(messages: list[Message], model: str) -> None:
    """One LLM request: ``assembled`` from the messages, ``sent`` from the body bytes."""
    ctxledger.measure_messages(messages, model=model)
    ctxledger.measure_request(request_body(messages, model), model=model)
