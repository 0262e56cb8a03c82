"""OpenAI Chat Completions: ``POST /v1/chat/completions``, plain and streaming."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ctxledger_cli.provider import errors, pairing, sse
from ctxledger_cli.provider.engine import Engine, Reply
from ctxledger_cli.provider.script import Step, new_call_id
from ctxledger_cli.provider.tokens import count_answer, count_messages

_ids = itertools.count(1)


def _refused(refusal: errors.Refusal) -> Reply:
    return Reply(refusal.status, refusal.body, headers=refusal.headers)


def _tool_calls(step: Step) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id or new_call_id("call"),
            "type": "function",
            "function": {
                "name": call.name,
                "arguments": json.dumps(dict(call.arguments), ensure_ascii=False),
            },
        }
        for call in step.tool_calls
    ]


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def handle(payload: Mapping[str, Any], engine: Engine) -> Reply:
    model = payload.get("model")
    messages = payload.get("messages")
    if not isinstance(model, str) or not isinstance(messages, list) or not messages:
        return _refused(errors.openai_error("'model' and a non-empty 'messages' are required."))
    refused = pairing.check_chat(messages)
    if refused is not None:
        return _refused(refused)
    tools = payload.get("tools")

    def count(kept: Sequence[Any]) -> int:
        return count_messages(kept, model, tools=tools)

    fitted = engine.fit(
        "chat",
        model,
        messages,
        count,
        lambda m: isinstance(m, Mapping) and m.get("role") in {"system", "developer"},
    )
    window = engine.window_for(model)
    if fitted.prompt_tokens > window and not engine.silent_front_discard:
        return _refused(errors.chat_context_exceeded(window, fitted.prompt_tokens))
    step = engine.next_step()
    calls = _tool_calls(step)
    completion = count_answer(
        step.text, [(c["function"]["name"], c["function"]["arguments"]) for c in calls], model
    )
    usage = _usage(fitted.prompt_tokens, completion)
    completion_id = f"chatcmpl-standin{next(_ids):08d}"
    created = int(time.time())
    finish = "tool_calls" if calls else "stop"
    if payload.get("stream"):
        options = payload.get("stream_options") or {}
        include_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
        frames = _stream(
            completion_id, created, model, step.text, calls, finish, usage, include_usage
        )
        return Reply(200, events=frames)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": step.text,
        "refusal": None,
        "annotations": [],
    }
    if calls:
        message["tool_calls"] = calls
    return Reply(
        200,
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": usage,
            "service_tier": "default",
            "system_fingerprint": None,
        },
    )


def _chunks_of(text: str, size: int = 16) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _stream(
    completion_id: str,
    created: int,
    model: str,
    text: str | None,
    calls: list[dict[str, Any]],
    finish: str,
    usage: dict[str, Any],
    include_usage: bool,
) -> tuple[bytes, ...]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        body: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": None,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:
            body["usage"] = None
        return sse.data_frame(body)

    frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if text:
        frames += [chunk({"content": piece}) for piece in _chunks_of(text)]
    for index, call in enumerate(calls):
        head = {"name": call["function"]["name"], "arguments": ""}
        frames.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": index, "id": call["id"], "type": "function", "function": head}
                    ]
                }
            )
        )
        for piece in _chunks_of(call["function"]["arguments"]):
            frames.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    frames.append(chunk({}, finish))
    if include_usage:
        frames.append(
            sse.data_frame(
                {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "system_fingerprint": None,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    frames.append(sse.DONE)
    return tuple(frames)
