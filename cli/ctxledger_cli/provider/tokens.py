"""How the stand-in counts a request's tokens, offline, with the SDK's own counters.

The encoding is the one the SDK picks for the model (:func:`ctxledger.text.encoding_for_model`:
``o200k_base`` for gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and the o-series, ``cl100k_base`` for
gpt-4 and gpt-3.5 and for models it does not know). Anthropic publishes no offline
tokenizer (its ``count_tokens`` endpoint is online), so Claude models are counted with
``cl100k_base``: an approximation, named as such in :data:`ANTHROPIC_APPROXIMATION`.

A message costs its texts' tokens plus :data:`TOKENS_PER_MESSAGE`, and every prompt
:data:`REPLY_PRIMING` more: the rule of OpenAI's cookbook ("How to count tokens with
tiktoken", ``num_tokens_from_messages``), applied alike to the three APIs. "Texts" are
every string that reaches the model: role, content text, names, tool call ids, a tool
call's name and its arguments (Anthropic's ``input`` as compact JSON), a tool result's
text, and the JSON of the ``tools`` definitions. The count is exact for those texts and
deterministic, so a test can recompute it; it is not OpenAI's hidden server-side count.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ctxledger.text import encoding_for_model, measure_text

TOKENS_PER_MESSAGE = 3
REPLY_PRIMING = 3
ANTHROPIC_APPROXIMATION = "cl100k_base"

#: Context windows (prompt tokens) by model prefix, longest prefix first.
_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-5", 272_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("claude", 200_000),
)
DEFAULT_WINDOW = 128_000


def context_window_for(model: str) -> int:
    name = model.strip().lower()
    for prefix, window in sorted(_WINDOWS, key=lambda entry: -len(entry[0])):
        if name.startswith(prefix):
            return window
    return DEFAULT_WINDOW


def is_anthropic_model(model: str) -> bool:
    return model.strip().lower().startswith("claude")


def encoding_for(model: str) -> str:
    """The encoding the stand-in counts ``model``'s tokens with (before the SDK's offline
    fallback: see :func:`tokenizer_used`)."""
    return ANTHROPIC_APPROXIMATION if is_anthropic_model(model) else encoding_for_model(model)


def _counting_model(model: str) -> str | None:
    # No model: the SDK counts with cl100k_base, the Anthropic approximation.
    return None if is_anthropic_model(model) else model


def tokenizer_used(model: str) -> str:
    """The encoding that actually counts ``model``'s tokens here (``o200k_base`` falls back
    to ``cl100k_base`` where the SDK cannot load it offline)."""
    return measure_text("tokenizer", model=_counting_model(model)).tokenizer or encoding_for(model)


def count_text(text: str, model: str) -> int:
    """Exact tokens of one text with the SDK's counter for ``model``."""
    if not text:
        return 0
    return measure_text(text, model=_counting_model(model)).tokens or 0


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _strings(value: Any) -> Iterator[str]:
    """Every text inside a message part, in order (dict keys that are structure are not)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key in {"type", "status", "cache_control", "annotations", "logprobs"}:
                continue
            if key in {"input", "arguments"} and not isinstance(item, str):
                yield compact_json(item)
            else:
                yield from _strings(item)
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        for item in value:
            yield from _strings(item)


def count_messages(
    messages: Sequence[Any],
    model: str,
    *,
    tools: Sequence[Any] | None = None,
    system: Any = None,
) -> int:
    """A prompt's tokens by the rule above. ``system`` is a separate system prompt
    (Anthropic's ``system``, the Responses API's ``instructions``), one message more."""
    return sum(prompt_layout(messages, model, tools=tools, system=system).parts)


def message_tokens(message: Any, model: str) -> int:
    """One message's tokens: :data:`TOKENS_PER_MESSAGE` and every text in it."""
    return TOKENS_PER_MESSAGE + sum(count_text(t, model) for t in _strings(message))


class Layout:
    """A prompt's tokens in the order the stand-in lays them out: the separate system
    prompt (if any), each message, then the tool definitions and the reply priming.
    ``parts[first_message + i]`` are the tokens of ``messages[i]``."""

    def __init__(self, parts: list[int], first_message: int, messages: int) -> None:
        self.parts = parts
        self.first_message = first_message
        self.messages = messages

    @property
    def total(self) -> int:
        return sum(self.parts)

    def message_span(self, index: int) -> tuple[int, int]:
        """Token offsets ``[start, end)`` of ``messages[index]`` in the layout."""
        start = sum(self.parts[: self.first_message + index])
        return start, start + self.parts[self.first_message + index]


def prompt_layout(
    messages: Sequence[Any],
    model: str,
    *,
    tools: Sequence[Any] | None = None,
    system: Any = None,
) -> Layout:
    parts: list[int] = []
    if system:
        parts.append(message_tokens(system, model))
    first = len(parts)
    parts += [message_tokens(message, model) for message in messages]
    if tools:
        parts.append(count_text(compact_json(list(tools)), model))
    parts.append(REPLY_PRIMING)
    return Layout(parts, first, len(messages))


def count_answer(text: str | None, calls: Sequence[tuple[str, str]], model: str) -> int:
    """Completion tokens of an answer: its text, and each call's name and arguments."""
    total = count_text(text or "", model)
    for name, arguments in calls:
        total += count_text(name, model) + count_text(arguments, model)
    return total
