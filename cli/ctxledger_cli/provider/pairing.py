"""The providers' pairing rules: a tool call and its result travel together, or the
request is refused with the provider's own 400 (bodies in :mod:`.errors`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxledger_cli.provider import errors
from ctxledger_cli.provider.errors import Refusal


def _role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, Mapping) else None


def check_chat(messages: Sequence[Any]) -> Refusal | None:
    """Chat Completions: an assistant message's ``tool_calls`` must be followed by a
    ``tool`` message for each id; a ``tool`` message must answer a preceding call."""
    pending: list[str] = []
    answered: set[str] = set()
    for index, message in enumerate(messages):
        role = _role(message)
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id in pending:
                pending.remove(call_id)
                answered.add(call_id)
            elif call_id not in answered:
                return errors.chat_orphan_tool_message(index)
            continue
        if pending:
            return errors.chat_missing_tool_responses(index, pending)
        if role == "assistant":
            pending = [str(call.get("id")) for call in message.get("tool_calls") or ()]
    if pending:
        return errors.chat_missing_tool_responses(len(messages), pending)
    return None


def check_responses(items: Sequence[Any], earlier_calls: Iterable[str] = ()) -> Refusal | None:
    """Responses API: each ``function_call_output`` needs its ``function_call`` (earlier in
    ``input``, or in the response ``previous_response_id`` names), and each
    ``function_call`` in ``input`` needs its output."""
    called = set(earlier_calls)
    answered: set[str] = set()
    for item in items:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        call_id = str(item.get("call_id"))
        if kind == "function_call":
            called.add(call_id)
        elif kind == "function_call_output":
            if call_id not in called:
                return errors.responses_orphan_output(call_id)
            answered.add(call_id)
    for item in items:
        is_call = isinstance(item, Mapping) and item.get("type") == "function_call"
        if is_call and str(item.get("call_id")) not in answered:
            return errors.responses_missing_output(str(item.get("call_id")))
    return None


def _blocks(message: Any, kind: str) -> list[tuple[int, Mapping[str, Any]]]:
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        return []
    return [
        (index, block)
        for index, block in enumerate(content)
        if isinstance(block, Mapping) and block.get("type") == kind
    ]


def check_anthropic(messages: Sequence[Any]) -> Refusal | None:
    """Anthropic Messages: the ``tool_use`` blocks of an assistant message are answered by
    ``tool_result`` blocks in the very next message, and a ``tool_result`` answers a
    ``tool_use`` of the message just before it."""
    for index, message in enumerate(messages):
        previous_uses = (
            {str(block.get("id")) for _, block in _blocks(messages[index - 1], "tool_use")}
            if index > 0 and _role(messages[index - 1]) == "assistant"
            else set()
        )
        for block_index, block in _blocks(message, "tool_result"):
            tool_use_id = str(block.get("tool_use_id"))
            if tool_use_id not in previous_uses:
                return errors.anthropic_orphan_tool_result(index, block_index, tool_use_id)
        if _role(message) != "assistant":
            continue
        uses = [str(block.get("id")) for _, block in _blocks(message, "tool_use")]
        if not uses:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        results = {str(block.get("tool_use_id")) for _, block in _blocks(following, "tool_result")}
        missing = [use for use in uses if use not in results]
        if missing:
            return errors.anthropic_missing_tool_results(index, missing)
    return None
