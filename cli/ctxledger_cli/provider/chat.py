"""OpenAI Chat Completions: ``POST /v1/chat/completions``, plain and streaming. With
``token_truncate`` (``--token-truncate``) an over-long prompt is cut like llama-server's
OpenAI-compatible endpoint cut it (:mod:`.truncation`; the request's ``n_keep``, else
``--n-keep``), with ``silent_front_discard`` like ollama's; with ``refuse_over_window``
(``--refuse-over-window``) it is refused with today's llama-server's
``exceed_context_size_error``; with ``stop_at_limit`` (``--stop-at-limit``) the answer
stops where the window fills, as LM Studio's ``stopAtLimit`` (:mod:`.lm_studio`)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ctxledger_cli.provider import errors, lm_studio, pairing, sse
from ctxledger_cli.provider.engine import Discard, Engine, Reply
from ctxledger_cli.provider.script import Step, new_call_id
from ctxledger_cli.provider.truncation import messages_hit, truncate

_ids = itertools.count(1)
_NO_HEADERS: Mapping[str, str] = {}


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


OLLAMA_FINGERPRINT = "fp_ollama"


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def handle(
    payload: Mapping[str, Any], engine: Engine, headers: Mapping[str, str] = _NO_HEADERS
) -> Reply:
    model = payload.get("model")
    messages = payload.get("messages")
    if not isinstance(model, str) or not isinstance(messages, list) or not messages:
        return _refused(errors.openai_error("'model' and a non-empty 'messages' are required."))
    refused = pairing.check_chat(messages)
    if refused is not None:
        return _refused(refused)
    tools = payload.get("tools")

    def count(kept: Sequence[Any]) -> int:
        return engine.counting.prompt(kept, model, tools=tools)

    window = engine.window_for(model)
    if engine.refuse_over_window:
        prompt_tokens = count(messages)
        if prompt_tokens >= window:  # llama.cpp's ">=": a full window leaves no room
            return _refused(errors.llama_context_exceeded(prompt_tokens, window))
    elif engine.token_truncate:
        prompt_tokens = _truncated(payload, engine, model, messages, window)
    else:
        fitted = engine.fit(
            "chat",
            model,
            messages,
            count,
            lambda m: isinstance(m, Mapping) and m.get("role") in {"system", "developer"},
        )
        prompt_tokens = fitted.prompt_tokens
        if prompt_tokens > window and not engine.silent_front_discard:
            return _refused(errors.chat_context_exceeded(window, prompt_tokens))
    step = engine.next_step()
    text, calls = step.text, _tool_calls(step)
    completion = engine.counting.answer(
        text, [(c["function"]["name"], c["function"]["arguments"]) for c in calls], model
    )
    finish = "tool_calls" if calls else "stop"
    stats: dict[str, Any] | None = None  # LM Studio's, only with stop_at_limit
    if engine.stop_at_limit:
        stopped = lm_studio.stop_at_limit(
            payload, engine.counting, model, prompt_tokens, window, text, calls
        )
        text, calls, completion = stopped.text, stopped.calls, stopped.completion_tokens
        finish, stats = stopped.finish_reason, stopped.stats
    usage = _usage(prompt_tokens, completion)
    # What ollama's OpenAI-compatible endpoint answers, the server whose discard this mimics.
    fingerprint = OLLAMA_FINGERPRINT if engine.silent_front_discard else None
    completion_id = f"chatcmpl-standin{next(_ids):08d}"
    created = int(time.time())
    if payload.get("stream"):
        options = payload.get("stream_options") or {}
        include_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
        frames = _stream(
            completion_id, created, model, text, calls, finish, usage, include_usage,
            fingerprint, stats,
        )  # fmt: skip
        return Reply(200, events=frames)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text,
        "refusal": None,
        "annotations": [],
    }
    if calls:
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
        "service_tier": "default",
        "system_fingerprint": fingerprint,
    }
    if stats is not None:
        body["stats"] = stats
    return Reply(200, body)


def _truncated(
    payload: Mapping[str, Any], engine: Engine, model: str, messages: list[Any], window: int
) -> int:
    """The prompt tokens llama-server reads of an over-long prompt: the first ``n_keep``
    and the tail (reported units); nothing in the answer says so."""
    counting = engine.counting
    layout = counting.layout(messages, model, tools=payload.get("tools"))
    n_keep = payload.get("n_keep", engine.n_keep)
    n_keep = n_keep if isinstance(n_keep, int) and not isinstance(n_keep, bool) else 0
    own_keep = n_keep if n_keep < 0 else counting.own(n_keep)
    cut = truncate(layout.total, counting.own(window), own_keep)
    kept = counting.units(cut.kept)
    if cut.truncated:
        dropped, partly = messages_hit(layout, cut)
        engine.note(
            Discard(
                "chat",
                len(dropped),
                counting.units(layout.total),
                kept,
                policy="token_truncate",
                dropped_indices=dropped,
                cut_indices=partly,
                keep_tokens=cut.keep,
            )
        )
    return kept


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
    fingerprint: str | None = None,
    stats: dict[str, Any] | None = None,
) -> tuple[bytes, ...]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        body: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": fingerprint,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:
            body["usage"] = None
        if finish_reason is not None and stats is not None:
            body["stats"] = stats  # LM Studio's stop reason, with the finish reason
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
                    "system_fingerprint": fingerprint,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    frames.append(sse.DONE)
    return tuple(frames)
