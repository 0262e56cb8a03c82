"""Anthropic's context editing, ``clear_tool_uses_20250919`` (beta header
``anthropic-beta: context-management-2025-06-27``), applied before the prompt is counted.

A request's ``context_management: {"edits": [...]}`` holds edits of the shape the
``anthropic`` client's ``BetaClearToolUses20250919EditParam`` types:

* ``trigger``: ``{"type": "input_tokens", "value": N}`` (default 100,000) fires when the
  prompt has more than N input tokens, ``{"type": "tool_uses", "value": N}`` when it
  holds more than N tool uses;
* ``keep``: ``{"type": "tool_uses", "value": K}`` (default 3): the K most recent tool uses
  (of those that may be cleared) keep their results;
* ``exclude_tools``: tool names never cleared; ``clear_at_least``:
  ``{"type": "input_tokens", "value": M}``: clear only if that frees M tokens or more;
  ``clear_tool_inputs``: ``true`` (or a list of tool names) also empties the calls'
  ``input``.

Fired, every older tool result's content becomes :data:`PLACEHOLDER` (the model sees
that something was cleared), in chronological order, and the answer reports
``context_management.applied_edits: [{"type": "clear_tool_uses_20250919",
"cleared_tool_uses": N, "cleared_input_tokens": M}]`` (the shape of the client's
``BetaClearToolUses20250919EditResponse``). Anthropic does not publish its placeholder's
wording; :data:`PLACEHOLDER` is the stand-in's (LangChain's mirror of this edit uses the
same). Other edit types (``clear_thinking_20251015``: the stand-in sends no thinking)
change nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BETA = "context-management-2025-06-27"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
PLACEHOLDER = "[cleared]"
DEFAULT_TRIGGER_TOKENS = 100_000
DEFAULT_KEEP = 3


@dataclass(frozen=True)
class Edited:
    messages: list[Any]
    applied: list[dict[str, Any]]
    cleared_ids: tuple[str, ...]
    received_tokens: int
    kept_tokens: int


@dataclass(frozen=True)
class _Use:
    message: int
    block: int
    id: str
    name: str


def has_beta(headers: Mapping[str, str]) -> bool:
    betas = headers.get("anthropic-beta", "")
    return BETA in {part.strip() for part in betas.split(",")}


def problem(config: Any) -> str | None:
    """Why ``context_management`` is malformed, or None."""
    if not isinstance(config, Mapping):
        return "context_management: Input should be an object"
    edits = config.get("edits", [])
    if not isinstance(edits, list):
        return "context_management.edits: Input should be a valid list"
    for index, edit in enumerate(edits):
        if not isinstance(edit, Mapping) or not isinstance(edit.get("type"), str):
            return f"context_management.edits.{index}.type: Field required"
        for name in ("trigger", "keep", "clear_at_least"):
            value = edit.get(name)
            # clear_thinking_20251015 takes ``keep: "all"`` (Claude Code sends it).
            if value is None or (name == "keep" and value == "all"):
                continue
            if not (isinstance(value, Mapping) and isinstance(value.get("value"), int)):
                return f"context_management.edits.{index}.{name}.value: Field required"
    return None


def _tool_uses(messages: Sequence[Any]) -> list[_Use]:
    uses: list[_Use] = []
    for m_index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for b_index, block in enumerate(content):
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                uses.append(_Use(m_index, b_index, str(block.get("id")), str(block.get("name"))))
    return uses


def _cleared(messages: list[Any], uses: Sequence[_Use], inputs: Any) -> list[Any]:
    edited = copy.deepcopy(messages)
    ids = {use.id for use in uses}
    for use in uses:
        if inputs is True or (isinstance(inputs, list) and use.name in inputs):
            edited[use.message]["content"][use.block]["input"] = {}
    for message in edited:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else ():
            is_result = isinstance(block, dict) and block.get("type") == "tool_result"
            if is_result and str(block.get("tool_use_id")) in ids:
                block["content"] = PLACEHOLDER
    return edited


def _value(setting: Any, default: int) -> int:
    return int(setting["value"]) if isinstance(setting, Mapping) else default


def apply(
    messages: list[Any], config: Mapping[str, Any], count: Callable[[Sequence[Any]], int]
) -> Edited:
    """``messages`` after the edits of ``config`` (a valid one: :func:`problem`);
    ``count`` gives a prompt's input tokens (reported units)."""
    received = current = count(messages)
    edited = messages
    applied: list[dict[str, Any]] = []
    cleared: list[str] = []
    for edit in config.get("edits", []):
        if edit.get("type") != CLEAR_TOOL_USES:
            continue
        uses = _tool_uses(edited)
        trigger = edit.get("trigger")
        if isinstance(trigger, Mapping) and trigger.get("type") == "tool_uses":
            fired = len(uses) > int(trigger["value"])
        else:
            fired = current > _value(trigger, DEFAULT_TRIGGER_TOKENS)
        excluded = set(edit.get("exclude_tools") or ())
        clearable = [u for u in uses if u.name not in excluded and u.id not in cleared]
        chosen = clearable[: max(0, len(clearable) - _value(edit.get("keep"), DEFAULT_KEEP))]
        if not fired or not chosen:
            continue
        trial = _cleared(edited, chosen, edit.get("clear_tool_inputs"))
        after = count(trial)
        if current - after < _value(edit.get("clear_at_least"), 0):
            continue
        applied.append(
            {
                "type": CLEAR_TOOL_USES,
                "cleared_tool_uses": len(chosen),
                "cleared_input_tokens": current - after,
            }
        )
        edited, current = trial, after
        cleared += [use.id for use in chosen]
    return Edited(list(edited), applied, tuple(cleared), received, current)
