"""Anthropic Messages: ``POST /v1/messages`` (plain and streaming) and
``POST /v1/messages/count_tokens``. Tokens are counted with the approximation named in
:mod:`.tokens`. With the beta header ``context-management-2025-06-27``, a request's
``context_management`` edits are applied first (:mod:`.context_editing`) and the answer
reports them in ``context_management.applied_edits``."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ctxledger_cli.provider import context_editing, errors, pairing, sse
from ctxledger_cli.provider.engine import Discard, Engine, Reply
from ctxledger_cli.provider.script import Step, new_call_id
from ctxledger_cli.provider.tokens import compact_json

_NO_HEADERS: Mapping[str, str] = {}

_ids = itertools.count(1)


def _refused(refusal: errors.Refusal) -> Reply:
    return Reply(refusal.status, refusal.body, headers=refusal.headers)


def _validated(payload: Mapping[str, Any]) -> tuple[str, list[Any]] | errors.Refusal:
    model = payload.get("model")
    messages = payload.get("messages")
    if not isinstance(model, str):
        return errors.anthropic_error("model: Field required")
    if not isinstance(messages, list) or not messages:
        return errors.anthropic_error("messages: Field required")
    return model, messages


def _counter(payload: Mapping[str, Any], model: str, engine: Engine) -> Any:
    tools, system = payload.get("tools"), payload.get("system")

    def count(kept: Sequence[Any]) -> int:
        return engine.counting.prompt(kept, model, tools=tools, system=system)

    return count


def count_tokens(
    payload: Mapping[str, Any], engine: Engine, headers: Mapping[str, str] = _NO_HEADERS
) -> Reply:
    checked = _validated(payload)
    if isinstance(checked, errors.Refusal):
        return _refused(checked)
    model, messages = checked
    return Reply(200, {"input_tokens": _counter(payload, model, engine)(messages)})


def _edited(
    payload: Mapping[str, Any],
    engine: Engine,
    headers: Mapping[str, str],
    messages: list[Any],
    count: Any,
) -> context_editing.Edited | errors.Refusal | None:
    config = payload.get("context_management")
    if config is None:
        return None
    if not context_editing.has_beta(headers):
        return errors.anthropic_error("context_management: Extra inputs are not permitted")
    problem = context_editing.problem(config)
    if problem is not None:
        return errors.anthropic_error(problem)
    edited = context_editing.apply(messages, config, count)
    if edited.cleared_ids:
        engine.note(
            Discard(
                "anthropic",
                0,
                edited.received_tokens,
                edited.kept_tokens,
                policy="provider_edit",
                declared=True,
                cleared_ids=edited.cleared_ids,
            )
        )
    return edited


def _content(step: Step) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if step.text is not None or not step.tool_calls:
        blocks.append({"type": "text", "text": step.text or ""})
    for call in step.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id or new_call_id("toolu"),
                "name": call.name,
                "input": dict(call.arguments),
            }
        )
    return blocks


def handle(
    payload: Mapping[str, Any], engine: Engine, headers: Mapping[str, str] = _NO_HEADERS
) -> Reply:
    checked = _validated(payload)
    if isinstance(checked, errors.Refusal):
        return _refused(checked)
    model, messages = checked
    refused = pairing.check_anthropic(messages)
    if refused is not None:
        return _refused(refused)
    count = _counter(payload, model, engine)
    edited = _edited(payload, engine, headers, messages, count)
    if isinstance(edited, errors.Refusal):
        return _refused(edited)
    if edited is not None:
        messages = edited.messages
    # Anthropic keeps the system prompt outside ``messages``: every message may go.
    fitted = engine.fit("anthropic", model, messages, count, lambda m: False)
    window = engine.window_for(model)
    if fitted.prompt_tokens > window and not engine.silent_front_discard:
        return _refused(errors.anthropic_context_exceeded(window, fitted.prompt_tokens))
    step = engine.next_step()
    content = _content(step)
    uses = [b for b in content if b["type"] == "tool_use"]
    completion = engine.counting.answer(
        step.text, [(b["name"], compact_json(b["input"])) for b in uses], model
    )
    usage = {
        "input_tokens": fitted.prompt_tokens,
        "output_tokens": completion,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    message: dict[str, Any] = {
        "id": f"msg_standin{next(_ids):012d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if uses else "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }
    if edited is not None:
        message["context_management"] = {"applied_edits": edited.applied}
    if payload.get("stream"):
        return Reply(200, events=_stream(message))
    return Reply(200, message)


def _stream(message: dict[str, Any]) -> tuple[bytes, ...]:
    usage = message["usage"]
    started = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**usage, "output_tokens": 1},
    }
    closing: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": usage["output_tokens"]},
    }
    if "context_management" in message:
        started["context_management"] = None
        closing["context_management"] = message["context_management"]
    frames = [
        sse.named_frame("message_start", {"type": "message_start", "message": started}),
        sse.named_frame("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            head: dict[str, Any] = {"type": "text", "text": ""}
            text = block["text"]
            pieces = [
                {"type": "text_delta", "text": text[i : i + 16]} for i in range(0, len(text), 16)
            ]
        else:
            head = {**block, "input": {}}
            arguments = json.dumps(block["input"], ensure_ascii=False)
            pieces = [
                {"type": "input_json_delta", "partial_json": arguments[i : i + 16]}
                for i in range(0, len(arguments), 16)
            ]
        frames.append(
            sse.named_frame(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": head},
            )
        )
        for delta in pieces:
            frames.append(
                sse.named_frame(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        frames.append(
            sse.named_frame("content_block_stop", {"type": "content_block_stop", "index": index})
        )
    frames.append(sse.named_frame("message_delta", closing))
    frames.append(sse.named_frame("message_stop", {"type": "message_stop"}))
    return tuple(frames)
