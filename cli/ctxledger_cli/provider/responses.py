"""OpenAI Responses: ``POST /v1/responses``, plain and streaming, with
``previous_response_id`` chaining (responses are kept in memory).

``truncation``: ``"disabled"`` (the default) refuses an input over the window with
``context_length_exceeded``; ``"auto"`` drops input items from the start of the
conversation (the first system or developer item kept) until it fits, and the answer
echoes ``"truncation": "auto"`` with ``usage.input_tokens`` of what was kept."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ctxledger_cli.provider import errors, pairing, sse
from ctxledger_cli.provider.engine import Engine, Reply
from ctxledger_cli.provider.script import Step, new_call_id

_ids = itertools.count(1)
_NO_HEADERS: Mapping[str, str] = {}


def _refused(refusal: errors.Refusal) -> Reply:
    return Reply(refusal.status, refusal.body, headers=refusal.headers)


def _input_items(raw: Any) -> list[Any] | None:
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    return list(raw) if isinstance(raw, list) else None


def _output_items(step: Step) -> list[dict[str, Any]]:
    number = next(_ids)
    items: list[dict[str, Any]] = []
    if step.text is not None or not step.tool_calls:
        items.append(
            {
                "id": f"msg_standin{number:08d}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {
                        "type": "output_text",
                        "text": step.text or "",
                        "annotations": [],
                        "logprobs": [],
                    }
                ],
            }
        )
    for call in step.tool_calls:
        items.append(
            {
                "id": new_call_id("fc"),
                "type": "function_call",
                "status": "completed",
                "call_id": call.id or new_call_id("call"),
                "name": call.name,
                "arguments": json.dumps(dict(call.arguments), ensure_ascii=False),
            }
        )
    return items


def _response(
    response_id: str,
    payload: Mapping[str, Any],
    model: str,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": payload.get("instructions"),
        "max_output_tokens": payload.get("max_output_tokens"),
        "model": model,
        "output": output,
        "parallel_tool_calls": payload.get("parallel_tool_calls", True),
        "previous_response_id": payload.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": payload.get("store", True),
        "temperature": payload.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": payload.get("tool_choice", "auto"),
        "tools": payload.get("tools") or [],
        "top_p": payload.get("top_p", 1.0),
        "truncation": payload.get("truncation", "disabled"),
        "usage": usage,
        "user": None,
        "metadata": payload.get("metadata") or {},
    }


def _is_system(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("role") in {"system", "developer"}


def handle(
    payload: Mapping[str, Any], engine: Engine, headers: Mapping[str, str] = _NO_HEADERS
) -> Reply:
    model = payload.get("model")
    items = _input_items(payload.get("input"))
    if not isinstance(model, str) or items is None:
        return _refused(errors.openai_error("'model' and 'input' are required.", param="input"))
    earlier: list[Any] = []
    previous_id = payload.get("previous_response_id")
    if previous_id:
        found = engine.stored_response(str(previous_id))
        if found is None:
            return _refused(
                errors.openai_error(
                    f"Previous response with id '{previous_id}' not found.",
                    param="previous_response_id",
                    status=400,
                )
            )
        earlier = found
    earlier_calls = [
        str(i.get("call_id"))
        for i in earlier
        if isinstance(i, Mapping) and i.get("type") == "function_call"
    ]
    refused = pairing.check_responses(items, earlier_calls)
    if refused is not None:
        return _refused(refused)
    tools = payload.get("tools")
    instructions = payload.get("instructions")

    def count(kept: Sequence[Any]) -> int:
        return engine.counting.prompt(kept, model, tools=tools, system=instructions)

    conversation = [*earlier, *items]
    auto = payload.get("truncation") == "auto"
    if auto:
        first_system = next((m for m in conversation if _is_system(m)), None)
        fitted = engine.fit(
            "responses",
            model,
            conversation,
            count,
            lambda m: first_system is not None and m is first_system,
            discard=True,
            declared=True,
        )
    else:
        fitted = engine.fit("responses", model, conversation, count, _is_system)
    if fitted.prompt_tokens > engine.window_for(model) and not (
        auto or engine.silent_front_discard
    ):
        return _refused(errors.responses_context_exceeded())
    step = engine.next_step()
    output = _output_items(step)
    calls = [(i["name"], i["arguments"]) for i in output if i["type"] == "function_call"]
    completion = engine.counting.answer(step.text, calls, model)
    usage = {
        "input_tokens": fitted.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": fitted.prompt_tokens + completion,
    }
    response_id = f"resp_standin{next(_ids):08d}"
    engine.store_response(response_id, [*fitted.messages, *output])
    done = _response(response_id, payload, model, "completed", output, usage)
    if payload.get("stream"):
        started = _response(response_id, payload, model, "in_progress", [], None)
        return Reply(200, events=_stream(started, done))
    return Reply(200, done)


def _stream(started: dict[str, Any], done: dict[str, Any]) -> tuple[bytes, ...]:
    frames: list[bytes] = []
    numbers = itertools.count(0)

    def emit(kind: str, **fields: Any) -> None:
        frames.append(
            sse.named_frame(kind, {"type": kind, "sequence_number": next(numbers), **fields})
        )

    emit("response.created", response=started)
    emit("response.in_progress", response=started)
    for index, item in enumerate(done["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=empty,
            )
            for start in range(0, len(text), 16):
                emit(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=text[start : start + 16],
                    logprobs=[],
                )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            emit(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=item["content"][0],
            )
        else:
            arguments = item["arguments"]
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for start in range(0, len(arguments), 16):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=arguments[start : start + 16],
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=arguments,
            )
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=done)
    return tuple(frames)
