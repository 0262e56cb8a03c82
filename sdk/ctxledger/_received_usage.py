"""What a model server says it processed, read from the start and the end of its response.

Pure (standard library only); runs on the measuring worker. The agent's thread keeps only
the first and the last bytes of a response (:mod:`ctxledger._response_watch`), so a
streamed body is never held whole; the numbers every server reports sit at one end: the
final usage chunk of a stream, the ``usage`` object at the end of a JSON answer,
Anthropic's ``message_start`` at the beginning. The keys are found in the raw text: in
JSON, ``"key":`` with its quotes unescaped cannot occur inside a string value, so a
match is a key whatever the model wrote, and a value cut at either end simply fails to
decode and is skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ctxledger import semconv as sc

# Which API answered, from the request's path (see ctxledger._http_hooks).
KIND_CHAT: Final = "openai_chat"
KIND_RESPONSES: Final = "openai_responses"
KIND_ANTHROPIC: Final = "anthropic"
KIND_OLLAMA: Final = "ollama_chat"
KIND_LLAMACPP: Final = "llamacpp_completion"

_KEYS = re.compile(
    r'"(usage|truncation|prompt_eval_count|tokens_evaluated|truncated|context_management'
    r'|system_fingerprint|timings)"\s*:\s*'
)
_DECODER = json.JSONDecoder()
# How each API's stream says it is complete; without it the stream was cut.
_STREAM_ENDS: Final = {
    KIND_CHAT: ("[DONE]",),
    KIND_RESPONSES: ('"response.completed"', '"response.incomplete"', '"response.failed"'),
    KIND_ANTHROPIC: ('"message_stop"',),
    KIND_OLLAMA: ('"done":true', '"done": true'),
    KIND_LLAMACPP: ('"stop":true', '"stop": true'),
}


@dataclass
class Reported:
    """What the response said, as found (values not yet checked)."""

    usages: list[Mapping[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    """The last decodable value of every other key."""

    def usage_field(self, name: str) -> Any:
        """The last value of ``name`` in any ``usage`` object (Anthropic's stream splits
        its usage over ``message_start`` and ``message_delta``)."""
        for usage in reversed(self.usages):
            if name in usage and usage[name] is not None:
                return usage[name]
        return None


def read_reported(pieces: Sequence[str]) -> Reported:
    """Every key of interest in the text pieces (in order: head, then tail)."""
    found = Reported()
    for text in pieces:
        for match in _KEYS.finditer(text):
            try:
                value, _ = _DECODER.raw_decode(text, match.end())
            except (ValueError, RecursionError):
                continue  # cut at the end of a piece
            key = match.group(1)
            if key == "usage":
                if isinstance(value, Mapping):
                    found.usages.append(value)
            elif value is not None:
                found.values[key] = value
    return found


def stream_complete(kind: str, tail: str) -> bool:
    return any(end in tail for end in _STREAM_ENDS.get(kind, ()))


def count_or_none(value: Any) -> int | None:
    """An integer count as reported; None for anything else (bool, float, text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


@dataclass(frozen=True)
class ServerReport:
    """The server's count and what it declared, ready for the span."""

    input_tokens: int | None
    """None: no count, or one that is not an integer (``invalid``)."""
    invalid: bool = False
    policy: str | None = None
    declared: bool | None = None
    marked: bool | None = None
    cleared_tool_uses: int = 0
    cleared_ids: tuple[str, ...] | None = None
    """Named by the response; otherwise the oldest ``cleared_tool_uses`` results."""


def _counted(*values: Any) -> tuple[int | None, bool]:
    """The sum of present counts; (None, True) when one is not a count or negative."""
    total: int | None = None
    for value in values:
        if value is None:
            continue
        count = count_or_none(value)
        if count is None or count < 0:
            return None, True
        total = (total or 0) + count
    return total, False


def _anthropic_edits(found: Reported) -> tuple[int, tuple[str, ...] | None, bool]:
    management = found.values.get("context_management")
    edits = management.get("applied_edits") if isinstance(management, Mapping) else None
    cleared, applied = 0, False
    named: list[str] = []
    for edit in edits if isinstance(edits, list) else ():
        if not isinstance(edit, Mapping):
            continue
        applied = True
        uses = count_or_none(edit.get("cleared_tool_uses"))
        cleared += max(uses or 0, 0)
        ids = edit.get("cleared_tool_use_ids")
        if isinstance(ids, list):
            named.extend(i for i in ids if isinstance(i, str))
    return cleared, (tuple(named) if named else None), applied


def _policy_by_host(host: str) -> str | None:
    # The hosted APIs refuse an over-long prompt with an error rather than cut it.
    return sc.POLICY_REFUSE if host in ("api.openai.com", "api.anthropic.com") else None


def server_report(kind: str, found: Reported, host: str) -> ServerReport:
    """What one API's response says it processed, by the rules of docs/instrumenting.md."""
    if kind == KIND_ANTHROPIC:
        total, invalid = _counted(
            found.usage_field("input_tokens"),
            found.usage_field("cache_read_input_tokens"),
            found.usage_field("cache_creation_input_tokens"),
        )
        if found.usage_field("input_tokens") is None and not invalid:
            total = None
        cleared, named, applied = _anthropic_edits(found)
        if applied:
            return ServerReport(total, invalid, sc.POLICY_PROVIDER_EDIT, True, True, cleared, named)
        return ServerReport(total, invalid, _policy_by_host(host), False)
    if kind == KIND_RESPONSES:
        total, invalid = _counted(found.usage_field("input_tokens"))
        truncation = found.values.get("truncation")
        if truncation == "auto":
            return ServerReport(total, invalid, sc.POLICY_FRONT_DISCARD, True)
        refuse = sc.POLICY_REFUSE if truncation == "disabled" else _policy_by_host(host)
        return ServerReport(total, invalid, refuse, False)
    if kind == KIND_OLLAMA:
        total, invalid = _counted(found.values.get("prompt_eval_count"))
        return ServerReport(total, invalid, sc.POLICY_FRONT_DISCARD, False)
    if kind == KIND_LLAMACPP:
        total, invalid = _counted(found.values.get("tokens_evaluated"))
        truncated = found.values.get("truncated") is True
        return ServerReport(total, invalid, sc.POLICY_TOKEN_TRUNCATE, truncated)
    # Chat Completions, from OpenAI or any OpenAI-compatible server.
    total, invalid = _counted(found.usage_field("prompt_tokens"))
    if found.values.get("system_fingerprint") == "fp_ollama":
        policy: str | None = sc.POLICY_FRONT_DISCARD
    elif "timings" in found.values:  # llama.cpp's server adds its timings
        policy = sc.POLICY_TOKEN_TRUNCATE
    else:
        policy = _policy_by_host(host)
    return ServerReport(total, invalid, policy, found.values.get("truncated") is True)
