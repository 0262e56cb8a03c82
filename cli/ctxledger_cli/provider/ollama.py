"""ollama's native chat API: ``POST /api/chat``.

Request ``{"model", "messages", "options": {"num_ctx": N}, "stream", "tools"}``: messages
of role ``system``, ``user``, ``assistant`` (``tool_calls``: ``[{"function": {"name",
"arguments": {…}}}]``, arguments an object) and ``tool`` (the result, with ``tool_name``).
Like ollama (ollama#3839) a prompt over the window loses its oldest messages, system
messages excepted and the last one always kept, and the answer is a 200: the only trace
is ``prompt_eval_count``, the tokens of what was kept. The window is the request's
``options.num_ctx``, else ``--context-window``, else :data:`DEFAULT_NUM_CTX`. A request
saying ``"truncate": false`` (absent or true: the discard) is refused instead, as ollama
refuses it: a 400 ``{"error": "the input length exceeds the context length"}``, and the
script keeps its step.

The answer: ``{"model", "created_at", "message": {"role": "assistant", "content",
"tool_calls"}, "done_reason": "stop", "done": true, "total_duration", "load_duration",
"prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"}`` (durations
in nanoseconds); each tool call as recent ollama versions send it, ``{"id",
"function": {"index", "name", "arguments": {…}}}``. ``stream`` is true unless the
request says false, as in ollama: newline-delimited JSON objects
(``application/x-ndjson``), text in pieces with ``"done": false``, the tool calls in one
object, then the closing object with ``"done": true`` and the counts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ctxledger_cli.provider import errors
from ctxledger_cli.provider.engine import Engine, Reply
from ctxledger_cli.provider.script import new_call_id
from ctxledger_cli.provider.tokens import compact_json

#: ollama's default context window (``num_ctx``) before versions sized it by VRAM.
DEFAULT_NUM_CTX = 4096
NDJSON = "application/x-ndjson"

_NO_HEADERS: Mapping[str, str] = {}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


def _error(status: int, message: str) -> Reply:
    return Reply(status, {"error": message})


def _num_ctx(payload: Mapping[str, Any]) -> int | None:
    options = payload.get("options")
    value = options.get("num_ctx") if isinstance(options, Mapping) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _line(body: Mapping[str, Any]) -> bytes:
    return (json.dumps(body, ensure_ascii=False) + "\n").encode()


def handle(
    payload: Mapping[str, Any], engine: Engine, headers: Mapping[str, str] = _NO_HEADERS
) -> Reply:
    model = payload.get("model")
    messages = payload.get("messages")
    if not isinstance(model, str) or not model:
        return _error(400, "model is required")
    if messages is not None and not isinstance(messages, list):
        return _error(400, "messages must be an array")
    if not messages:  # ollama's "load the model" answer
        loaded = {"role": "assistant", "content": ""}
        return Reply(
            200,
            {
                "model": model,
                "created_at": _now(),
                "message": loaded,
                "done_reason": "load",
                "done": True,
            },
        )
    tools = payload.get("tools")

    def count(kept: Sequence[Any]) -> int:
        return engine.counting.prompt(kept, model, tools=tools)

    window = _num_ctx(payload) or engine.window_for(model, DEFAULT_NUM_CTX)
    # ollama reads only a JSON false as "do not truncate"; anything else keeps the discard.
    truncate = payload.get("truncate") is not False
    fitted = engine.fit(
        "ollama",
        model,
        messages,
        count,
        lambda m: isinstance(m, Mapping) and m.get("role") == "system",
        discard=truncate,
        window=window,
    )
    if not truncate and fitted.prompt_tokens > window:
        refusal = errors.ollama_input_too_long()
        return Reply(refusal.status, refusal.body)
    step = engine.next_step()
    calls: list[dict[str, Any]] = [
        {
            "id": call.id or new_call_id("call"),
            "function": {"index": index, "name": call.name, "arguments": dict(call.arguments)},
        }
        for index, call in enumerate(step.tool_calls)
    ]
    eval_count = engine.counting.answer(
        step.text,
        [(c["function"]["name"], compact_json(c["function"]["arguments"])) for c in calls],
        model,
    )
    message: dict[str, Any] = {"role": "assistant", "content": step.text or ""}
    if calls:
        message["tool_calls"] = calls
    closing = {
        "model": model,
        "created_at": _now(),
        "message": message,
        "done_reason": "stop",
        "done": True,
        "total_duration": 1_000_000 + 10_000 * (fitted.prompt_tokens + eval_count),
        "load_duration": 1_000_000,
        "prompt_eval_count": fitted.prompt_tokens,
        "prompt_eval_duration": 5_000 * fitted.prompt_tokens,
        "eval_count": eval_count,
        "eval_duration": 5_000 * eval_count,
    }
    if payload.get("stream") is False:
        return Reply(200, closing)
    return Reply(200, events=_stream(model, message, closing), content_type=NDJSON)


def _stream(
    model: str, message: Mapping[str, Any], closing: Mapping[str, Any]
) -> tuple[bytes, ...]:
    def piece(content: str, **extra: Any) -> bytes:
        body = {"role": "assistant", "content": content, **extra}
        return _line({"model": model, "created_at": _now(), "message": body, "done": False})

    text = str(message["content"])
    frames = [piece(text[i : i + 16]) for i in range(0, len(text), 16)]
    if "tool_calls" in message:
        frames.append(piece("", tool_calls=message["tool_calls"]))
    frames.append(_line({**closing, "message": {"role": "assistant", "content": ""}}))
    return tuple(frames)
