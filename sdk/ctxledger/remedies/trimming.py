"""Emergency trim itself: replace the content of the oldest tool results with the
placeholder, one at a time, until the estimated request is small enough.

The why and the rules are in :mod:`ctxledger.remedies.emergency`, which also retries the
provider with the trimmed request.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxledger import semconv
from ctxledger._api import measure
from ctxledger._encodings import encoding_name_for
from ctxledger._markers import EMERGENCY_TRIM_PLACEHOLDER
from ctxledger._message_content import RESPONSES_OUTPUT_TYPES, TEXT_PART_TYPES, usable_call_id
from ctxledger._messages import parse_messages
from ctxledger._serialize import to_text
from ctxledger._tokens import TokenCounter
from ctxledger.verdicts import STAGE_EMERGENCY_TRIM_ORDER

#: Estimates the tokens of a whole message list.
Estimator = Callable[[list[Any]], int]

_counter = TokenCounter()


def _message_tokens(message: Any, encoding: str) -> int:
    try:
        text = to_text(message)
    except (TypeError, ValueError, RecursionError):
        text = str(message)
    digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
    return _counter.count(text, digest, encoding).tokens


def estimate_tokens(messages: Sequence[Any], model: str | None = None) -> int:
    """The default estimate: the sum over messages of the exact token count (offline;
    the model's encoding, else ``cl100k_base``) of each message's JSON text."""
    encoding = encoding_name_for(model)
    return sum(_message_tokens(message, encoding) for message in messages)


# --- finding and replacing tool results ----------------------------------------------


@dataclass(frozen=True)
class _Slot:
    """Where one tool result's content lives."""

    message_index: int
    block_index: int | None
    """Index of an Anthropic ``tool_result`` block in the message content, else None."""
    key: str
    """``content`` (OpenAI chat, Anthropic) or ``output`` (Responses)."""
    tool_call_id: str


def _slots(messages: Sequence[Any]) -> list[_Slot]:
    """Every tool result with an id, oldest first (message order, then block order).

    Only mappings are read: a message given as an SDK object is left untouched.
    """
    found: list[_Slot] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        if message.get("type") in RESPONSES_OUTPUT_TYPES:
            call_id = usable_call_id(message.get("call_id"))
            if call_id:
                found.append(_Slot(index, None, "output", call_id))
            continue
        if message.get("role") == "tool":
            call_id = usable_call_id(message.get("tool_call_id"))
            if call_id:
                found.append(_Slot(index, None, "content", call_id))
            continue
        content = message.get("content")
        if not isinstance(content, (list, tuple)):
            continue
        for block_index, block in enumerate(content):
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                call_id = usable_call_id(block.get("tool_use_id"))
                if call_id:
                    found.append(_Slot(index, block_index, "content", call_id))
    return found


def _read(messages: Sequence[Any], slot: _Slot) -> Any:
    message = messages[slot.message_index]
    if slot.block_index is None:
        return message.get(slot.key)
    return message["content"][slot.block_index].get(slot.key)


def _write_placeholder(messages: list[Any], slot: _Slot, copied: set[int]) -> None:
    """Put the placeholder in ``slot``, deep-copying the message the first time."""
    index = slot.message_index
    if index not in copied:
        messages[index] = copy.deepcopy(dict(messages[index]))
        copied.add(index)
    message = messages[index]
    if slot.block_index is None:
        message[slot.key] = EMERGENCY_TRIM_PLACEHOLDER
        return
    blocks = list(message["content"])
    blocks[slot.block_index] = {**blocks[slot.block_index], slot.key: EMERGENCY_TRIM_PLACEHOLDER}
    message["content"] = blocks


def is_trimmed(content: Any) -> bool:
    """Whether a tool result content is the emergency-trim placeholder: the string
    itself, or a list of text parts that together are exactly the placeholder."""
    if isinstance(content, str):
        return content.strip() == EMERGENCY_TRIM_PLACEHOLDER
    if isinstance(content, (list, tuple)) and content:
        texts: list[str] = []
        for part in content:
            if not isinstance(part, Mapping) or part.get("type") not in TEXT_PART_TYPES:
                return False
            text = part.get("text")
            if not isinstance(text, str):
                return False
            texts.append(text)
        return "".join(texts).strip() == EMERGENCY_TRIM_PLACEHOLDER
    return False


@dataclass(frozen=True)
class TrimResult:
    """What :func:`emergency_trim` did."""

    messages: list[Any]
    """The request to send: a new list; changed messages are deep copies."""
    trimmed: tuple[str, ...]
    """The tool_call_ids whose content became the placeholder, oldest first."""
    tokens_before: int
    tokens_after: int
    target_tokens: int
    reached_target: bool
    """``tokens_after <= target_tokens``."""
    nothing_left: bool
    """No tool result is left that is not the placeholder."""

    @property
    def changed(self) -> bool:
        return bool(self.trimmed)


def emergency_trim(
    messages: Sequence[Any],
    *,
    target_tokens: int | None = None,
    model: str | None = None,
    estimate: Estimator | None = None,
) -> TrimResult:
    """Replace the content of the oldest tool results by the placeholder until the
    estimate is at or below ``target_tokens`` (default: half of the current estimate).

    Works on OpenAI chat (``role: tool`` messages), Anthropic (``tool_result`` blocks,
    content as a string or a list of blocks) and Responses (``function_call_output``)
    lists of dicts. ``estimate`` replaces the default :func:`estimate_tokens`; it is
    called on the whole candidate list after each replacement. Each trimmed result is
    measured as the declared stage ``emergency_trim`` (order 35).
    """
    work = list(messages)
    slots = _slots(work)
    names: dict[str, str | None] = {}
    for call in parse_messages(work).calls:
        if names.get(call.tool_call_id) is None:
            names[call.tool_call_id] = call.tool_name

    encoding = encoding_name_for(model)
    counts: list[int] = []
    if estimate is None:
        counts = [_message_tokens(message, encoding) for message in work]
        current = sum(counts)
    else:
        current = estimate(work)
    before = current
    target = before // 2 if target_tokens is None else target_tokens

    trimmed: list[_Slot] = []
    copied: set[int] = set()
    for slot in slots:
        if current <= target:
            break
        if is_trimmed(_read(work, slot)):
            continue
        _write_placeholder(work, slot, copied)
        trimmed.append(slot)
        if estimate is None:
            counts[slot.message_index] = _message_tokens(work[slot.message_index], encoding)
            current = sum(counts)
        else:
            current = estimate(work)

    for slot in trimmed:
        measure(
            semconv.STAGE_EMERGENCY_TRIM,
            EMERGENCY_TRIM_PLACEHOLDER,
            tool_call_id=slot.tool_call_id,
            tool_name=names.get(slot.tool_call_id),
            order=STAGE_EMERGENCY_TRIM_ORDER,
            model=model,
            declared=True,
            strategy=semconv.STAGE_EMERGENCY_TRIM,
            marker=True,
        )
    return TrimResult(
        messages=work,
        trimmed=tuple(slot.tool_call_id for slot in trimmed),
        tokens_before=before,
        tokens_after=current,
        target_tokens=target,
        reached_target=current <= target,
        nothing_left=all(is_trimmed(_read(work, slot)) for slot in slots),
    )
