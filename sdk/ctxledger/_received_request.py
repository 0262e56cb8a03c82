"""The request as sent, cut into the segments stage ``received`` is judged on.

Pure (standard library only). Runs on the measuring worker, never on the agent's thread.

One segment per message (Chat Completions, ollama's ``/api/chat``), input item
(Responses) or system prompt, except that each tool-result block is a segment of its own
(Anthropic's ``tool_result`` blocks; a user message's other blocks are one segment). A
llama.cpp ``/completion`` prompt is one segment.

The count follows the rule the provider stand-in and OpenAI's cookbook use for a chat
prompt: every string the model reads (role, content, names, ids, a call's arguments),
:data:`TOKENS_PER_MESSAGE` more per message (charged to the message's first segment),
:data:`REPLY_PRIMING` more per prompt. Tool definitions are not counted: every server
renders them in a form of its own (OpenAI's is shorter than their JSON), so counting them
could only make a shortfall up; without them the count errs low, where a shortfall is
never invented. Counting
the request body's JSON instead (what ``ctxledger.request.tokens`` counts) charges the
keys, quotes and escapes of the JSON text to the prompt: 14 % more than the prompt's
tokens for a gpt-4o request with a 40-record tool result, a false loss on every request
under an exact tokenizer's 2 % tolerance.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ctxledger import semconv as sc
from ctxledger._tokens import TokenCounter

TOKENS_PER_MESSAGE: Final = 3
REPLY_PRIMING: Final = 3
#: Keys whose values are structure, never text the model reads.
_STRUCTURE_KEYS: Final = frozenset({"type", "status", "cache_control", "annotations", "logprobs"})
_ROLES: Final = {
    "system": sc.ROLE_SYSTEM,
    "developer": sc.ROLE_SYSTEM,
    "user": sc.ROLE_USER,
    "assistant": sc.ROLE_ASSISTANT,
    "tool": sc.ROLE_TOOL,
    "function": sc.ROLE_TOOL,
}
_RESPONSES_OUTPUTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})

CountTokens = Callable[[Sequence[str]], int]
"""Tokens of a segment's strings (the sum of each string's count)."""


def digest_counter(counter: TokenCounter, encoding: str) -> CountTokens:
    """A segment counter over ``counter``'s cache by digest: every request of a
    conversation sends its history again."""

    def count(strings: Sequence[str]) -> int:
        return sum(
            counter.count(
                s, hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest(), encoding
            ).tokens
            for s in strings
            if s
        )

    return count


@dataclass(frozen=True)
class RequestSegments:
    """What the ``received`` span needs of the request, computed when it was sent."""

    call_ids: tuple[str, ...]
    tokens: tuple[int, ...]
    chars: tuple[int, ...]
    roles: tuple[str, ...]
    counted_tokens: int
    tokenizer: str
    model: str | None
    tool_names: Mapping[str, str]
    """Call id → tool name, from the request's tool calls."""
    keep_tokens: int | None = None
    """llama.cpp's ``n_keep`` (ollama's ``options.num_keep``); ``-1`` keeps the prompt."""
    excluded_tools: frozenset[str] = frozenset()
    """Tools Anthropic's context editing was told never to clear."""


@dataclass
class _Builder:
    count: CountTokens
    call_ids: list[str]
    tokens: list[int]
    chars: list[int]
    roles: list[str]

    def add(self, role: str, call_id: str, strings: list[str], overhead: int) -> None:
        self.call_ids.append(call_id)
        self.roles.append(role)
        self.tokens.append(self.count(strings) + overhead)
        self.chars.append(sum(len(s) for s in strings))


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _strings(value: Any) -> Iterator[str]:
    """Every text inside a message part, in order (keys that are structure are not)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key in _STRUCTURE_KEYS:
                continue
            if key in ("input", "arguments") and not isinstance(item, str):
                yield compact_json(item)
            else:
                yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _role(value: Any) -> str:
    return _ROLES.get(value, sc.ROLE_USER) if isinstance(value, str) else sc.ROLE_USER


def _text_id(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _chat_message(message: Mapping[str, Any], out: _Builder) -> None:
    role = _role(message.get("role"))
    call_id = _text_id(message.get("tool_call_id")) if role == sc.ROLE_TOOL else ""
    out.add(role, call_id, list(_strings(message)), TOKENS_PER_MESSAGE)


def _message(message: Mapping[str, Any], out: _Builder) -> None:
    """A chat message: one segment, or (Anthropic) one per ``tool_result`` block and one
    for the message's other blocks."""
    content = message.get("content")
    if not isinstance(content, list) or not any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
    ):
        _chat_message(message, out)
        return
    role = message.get("role")
    rest: list[Any] = [role] if isinstance(role, str) else []
    results: list[Mapping[str, Any]] = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            results.append(block)
        else:
            rest.append(block)
    overhead = TOKENS_PER_MESSAGE
    if len(rest) > (1 if isinstance(role, str) else 0):
        out.add(_role(role), "", list(_strings(rest)), overhead)
        overhead = 0
    for block in results:
        out.add(sc.ROLE_TOOL, _text_id(block.get("tool_use_id")), list(_strings(block)), overhead)
        overhead = 0


def _responses_item(item: Any, out: _Builder) -> None:
    if isinstance(item, str):
        out.add(sc.ROLE_USER, "", [item], TOKENS_PER_MESSAGE)
        return
    if not isinstance(item, Mapping):
        return
    kind = item.get("type")
    if kind in _RESPONSES_OUTPUTS:
        role, call_id = sc.ROLE_TOOL, _text_id(item.get("call_id"))
    elif "role" in item:
        role, call_id = _role(item.get("role")), ""
    else:  # function_call, reasoning and the other items the model produced
        role, call_id = sc.ROLE_ASSISTANT, ""
    out.add(role, call_id, list(_strings(item)), TOKENS_PER_MESSAGE)


def _tool_names(messages: Sequence[Any]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                spec = call.get("function") or call.get("custom") or {}
                if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
                    names.setdefault(call["id"], spec["name"])
        content = message.get("content")
        blocks = content if isinstance(content, list) else [message]
        for block in blocks:
            if not isinstance(block, Mapping):
                continue
            call_id = block.get("id") if block.get("type") == "tool_use" else block.get("call_id")
            if isinstance(call_id, str) and isinstance(block.get("name"), str):
                names.setdefault(call_id, block["name"])
    return names


def _excluded_tools(body: Mapping[str, Any]) -> frozenset[str]:
    management = body.get("context_management")
    edits = management.get("edits") if isinstance(management, Mapping) else None
    excluded: set[str] = set()
    for edit in edits if isinstance(edits, list) else ():
        tools = edit.get("exclude_tools") if isinstance(edit, Mapping) else None
        excluded.update(t for t in tools or () if isinstance(t, str))
    return frozenset(excluded)


def _keep_tokens(body: Mapping[str, Any]) -> int | None:
    options = body.get("options")
    for value in (
        body.get("n_keep"),
        options.get("num_keep") if isinstance(options, Mapping) else None,
    ):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def segment_request(
    body: Mapping[str, Any], count: CountTokens, tokenizer: str, model: str | None
) -> RequestSegments:
    """Cut a decoded request body into segments and count it (see the module's doc)."""
    out = _Builder(count, [], [], [], [])
    system = body.get("system", body.get("instructions"))
    if system:
        out.add(sc.ROLE_SYSTEM, "", list(_strings(system)), TOKENS_PER_MESSAGE)
    messages = body.get("messages")
    items: list[Any] = []
    if isinstance(messages, list):
        items = messages
        for message in messages:
            if isinstance(message, Mapping):
                _message(message, out)
    elif isinstance(body.get("input"), (list, str)):
        given = body["input"]
        items = given if isinstance(given, list) else []
        for item in items if isinstance(given, list) else [given]:
            _responses_item(item, out)
    elif isinstance(body.get("prompt"), str):  # llama.cpp /completion: the prompt as text
        out.add(sc.ROLE_USER, "", [body["prompt"]], 0)
    return RequestSegments(
        call_ids=tuple(out.call_ids),
        tokens=tuple(out.tokens),
        chars=tuple(out.chars),
        roles=tuple(out.roles),
        counted_tokens=REPLY_PRIMING + sum(out.tokens),
        tokenizer=tokenizer,
        model=model,
        tool_names=_tool_names(items),
        keep_tokens=_keep_tokens(body),
        excluded_tools=_excluded_tools(body),
    )
