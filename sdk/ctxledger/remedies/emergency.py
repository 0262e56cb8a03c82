"""Emergency trim (seed 001): make a request that overflowed the context window fit.

When a provider rejects a request with ``context_length_exceeded``, there is no time to
summarise. :func:`emergency_trim` replaces the *content* of the oldest tool results with
:data:`~ctxledger._markers.EMERGENCY_TRIM_PLACEHOLDER`, one at a time, re-estimating the
size after each, and stops as soon as the estimate is at or below the target (by default
half of the current estimate, leaving room for the conversation to grow). Nothing else
changes: every message stays, in its position, with its ids and names, so every tool
call keeps its result and the provider still accepts the request. Deleting the oldest
result instead leaves its call orphaned, and the provider rejects the request for good.

* There is no protected "recent N": in the extreme case every result is trimmed. Being
  able to send the request matters more than any one old output; the placeholder tells
  the model to re-run the tool if it still needs the data.
* A result that already is the placeholder is recognised and skipped, so trimming
  again continues where the last trim stopped.
* Only this request changes: a new list is returned, the input list, its messages and
  blocks are never mutated (changed messages are deep copies). The stored history keeps
  the originals; the next turn loads them again.

:func:`call_with_emergency_trim` (and :func:`acall_with_emergency_trim`) wraps a call to
the provider: on an overflow it trims and retries the same provider at once, no sleep,
no backoff, no failover, no health penalty (the request was too big; the provider is
fine). It trims again while the request still overflows, and raises the original error
when nothing is left to trim.

Each trimmed result is declared to ctxledger as the custom stage ``emergency_trim``
(order 35: after the messages were assembled, before the bytes leave); each provider
overflow is an event ``ctxledger.context_length_exceeded`` on the current span.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from opentelemetry import trace

from ctxledger import semconv
from ctxledger._api import measure
from ctxledger._markers import EMERGENCY_TRIM_PLACEHOLDER
from ctxledger._messages import parse_messages
from ctxledger._safety import never_raises
from ctxledger._serialize import to_text
from ctxledger._tokens import TokenCounter, encoding_name_for
from ctxledger.verdicts import STAGE_EMERGENCY_TRIM_ORDER

__all__ = [
    "CONTEXT_LENGTH_PREDICATES",
    "EVENT_CONTEXT_LENGTH_EXCEEDED",
    "OVERFLOW_PATTERNS",
    "STAGE_EMERGENCY_TRIM",
    "STAGE_EMERGENCY_TRIM_ORDER",
    "TrimResult",
    "acall_with_emergency_trim",
    "call_with_emergency_trim",
    "emergency_trim",
    "estimate_tokens",
    "is_context_length_error",
    "is_trimmed",
]

T = TypeVar("T")
Estimator = Callable[[list[Any]], int]
OverflowPredicate = Callable[[BaseException], bool]

STAGE_EMERGENCY_TRIM: Final = semconv.STAGE_EMERGENCY_TRIM
EVENT_CONTEXT_LENGTH_EXCEEDED: Final = semconv.EVENT_CONTEXT_LENGTH_EXCEEDED

_RESPONSES_OUTPUT_TYPES: Final = frozenset({"function_call_output", "custom_tool_call_output"})
_TEXT_PART_TYPES: Final = frozenset({"text", "input_text", "output_text"})
_MAX_EVENT_MESSAGE_CHARS: Final = 1000

_counter = TokenCounter()


# --- estimating ----------------------------------------------------------------------


def _message_tokens(message: Any, encoding: str) -> int:
    try:
        text = to_text(message)
    except (TypeError, ValueError, RecursionError):
        text = str(message)
    digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
    return _counter.count(text, digest, encoding).tokens


def estimate_tokens(messages: Sequence[Any], model: str | None = None) -> int:
    """The default estimate: the sum over messages of the tiktoken count (offline; the
    model's encoding, else ``cl100k_base``) of each message's JSON text."""
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


def _call_id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _slots(messages: Sequence[Any]) -> list[_Slot]:
    """Every tool result with an id, oldest first (message order, then block order).

    Only mappings are read: a message given as an SDK object is left untouched.
    """
    found: list[_Slot] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        if message.get("type") in _RESPONSES_OUTPUT_TYPES:
            call_id = _call_id(message.get("call_id"))
            if call_id:
                found.append(_Slot(index, None, "output", call_id))
            continue
        if message.get("role") == "tool":
            call_id = _call_id(message.get("tool_call_id"))
            if call_id:
                found.append(_Slot(index, None, "content", call_id))
            continue
        content = message.get("content")
        if not isinstance(content, (list, tuple)):
            continue
        for block_index, block in enumerate(content):
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                call_id = _call_id(block.get("tool_use_id"))
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
            if not isinstance(part, Mapping) or part.get("type") not in _TEXT_PART_TYPES:
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
            STAGE_EMERGENCY_TRIM,
            EMERGENCY_TRIM_PLACEHOLDER,
            tool_call_id=slot.tool_call_id,
            tool_name=names.get(slot.tool_call_id),
            order=STAGE_EMERGENCY_TRIM_ORDER,
            model=model,
            declared=True,
            strategy=STAGE_EMERGENCY_TRIM,
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


# --- recognising a context overflow --------------------------------------------------

#: Text that says the request is longer than the model's context window.
OVERFLOW_PATTERNS: Final[tuple[re.Pattern[str], ...]] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"context[_ ]length[_ ]exceeded",  # OpenAI / Azure error code
        r"maximum context length",  # OpenAI, vLLM: "This model's maximum context length is"
        r"prompt is too long",  # Anthropic
        r"exceeds? (?:the )?context (?:limit|window|length)",  # Anthropic input + max_tokens
        r"context[_ ]window[_ ]exceeded",  # LiteLLM
        r"input is too long",  # Bedrock
        r"too many (?:input |prompt )?tokens",
        r"exceeds the maximum number of tokens",  # Gemini
    )
)
#: A 413 that says the request body is too large (Anthropic ``request_too_large``).
_TOO_LARGE = re.compile(r"request_too_large|too large|exceeds the maximum size", re.IGNORECASE)


def _attr(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _status(error: BaseException) -> int | None:
    for holder in (error, _attr(error, "response")):
        if holder is None:
            continue
        for name in ("status_code", "status", "http_status"):
            value = _attr(holder, name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _body(error: BaseException) -> Any:
    body = _attr(error, "body")
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", errors="replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            return body
    return body


def _inner_errors(body: Any) -> list[Mapping[str, Any]]:
    """The body and its ``error`` object, where they are mappings."""
    found: list[Mapping[str, Any]] = []
    if isinstance(body, Mapping):
        found.append(body)
        inner = body.get("error")
        if isinstance(inner, Mapping):
            found.append(inner)
    return found


def _texts(error: BaseException) -> list[str]:
    """Everything the error says: its message, its body, its HTTP response text."""
    texts = [str(error)]
    message = _attr(error, "message")
    if isinstance(message, str):
        texts.append(message)
    body = _body(error)
    if body is not None:
        texts.append(body if isinstance(body, str) else to_text(body))
    response = _attr(error, "response")
    if response is not None:
        text = _attr(response, "text")  # an unread streaming response raises: ignored
        if isinstance(text, str):
            texts.append(text)
    return texts


def _openai_code(error: BaseException) -> bool:
    """OpenAI (and compatible): ``code == "context_length_exceeded"`` on the exception
    or in its body."""
    if _status(error) == 429:
        return False
    codes = [_attr(error, "code")]
    codes += [inner.get("code") for inner in _inner_errors(_body(error))]
    return "context_length_exceeded" in codes


def _anthropic_error(error: BaseException) -> bool:
    """Anthropic: an ``invalid_request_error`` whose message says the prompt is too
    long or exceeds the context, or a ``request_too_large`` error."""
    if _status(error) not in (None, 400, 413):
        return False
    for inner in _inner_errors(_body(error)):
        kind, message = inner.get("type"), inner.get("message")
        if kind == "request_too_large":
            return True
        if (
            kind == "invalid_request_error"
            and isinstance(message, str)
            and any(pattern.search(message) for pattern in OVERFLOW_PATTERNS)
        ):
            return True
    return False


def _http_overflow(error: BaseException) -> bool:
    """An HTTP 400 or 413 (or an error without a status) whose text names the overflow."""
    status = _status(error)
    if status not in (None, 400, 413):
        return False
    texts = _texts(error)
    if any(pattern.search(text) for text in texts for pattern in OVERFLOW_PATTERNS):
        return True
    return status == 413 and any(_TOO_LARGE.search(text) for text in texts)


#: The checks :func:`is_context_length_error` runs; append your own predicate for a
#: provider whose overflow error none of them recognises.
CONTEXT_LENGTH_PREDICATES: list[OverflowPredicate] = [
    _openai_code,
    _anthropic_error,
    _http_overflow,
]


def is_context_length_error(error: BaseException) -> bool:
    """Whether ``error`` says the request exceeded the model's context window.

    Recognises OpenAI's ``context_length_exceeded`` code, Anthropic's ``prompt is too
    long`` / ``exceed context limit`` / ``request_too_large``, and HTTP 400/413 bodies
    with those markers, without importing any provider SDK; then any predicate added to
    :data:`CONTEXT_LENGTH_PREDICATES`. Follows ``raise ... from`` causes. A rate limit
    (429) is never an overflow. A predicate that raises counts as "no". Never raises.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 8:
        seen.add(id(current))
        for predicate in list(CONTEXT_LENGTH_PREDICATES):
            try:
                if predicate(current):
                    return True
            except Exception:
                continue
        current = current.__cause__
    return False


# --- trim and retry ------------------------------------------------------------------


@never_raises(None)
def _record_overflow(
    error: BaseException, attempt: int, model: str | None, result: TrimResult | None
) -> None:
    """The provider's overflow as an event on the current span (a no-op without one)."""
    attributes: dict[str, str | int | bool] = {
        semconv.ERROR_TYPE: type(error).__qualname__,
        semconv.ERROR_MESSAGE: str(error)[:_MAX_EVENT_MESSAGE_CHARS],
        semconv.EMERGENCY_TRIM_ATTEMPT: attempt,
    }
    status = _status(error)
    if status is not None:
        attributes[semconv.HTTP_RESPONSE_STATUS_CODE] = status
    if model:
        attributes[semconv.REQUEST_MODEL] = model
    if result is not None:
        attributes[semconv.EMERGENCY_TRIM_TRIMMED] = len(result.trimmed)
        attributes[semconv.EMERGENCY_TRIM_TOKENS_BEFORE] = result.tokens_before
        attributes[semconv.EMERGENCY_TRIM_TOKENS_AFTER] = result.tokens_after
        attributes[semconv.EMERGENCY_TRIM_NOTHING_LEFT] = result.nothing_left
    trace.get_current_span().add_event(EVENT_CONTEXT_LENGTH_EXCEEDED, attributes)


def _is_overflow(predicate: OverflowPredicate, error: BaseException) -> bool:
    try:
        return bool(predicate(error))
    except Exception:
        return False


class _Rounds:
    """The state shared by the sync and async retry loops."""

    def __init__(self, model: str | None, max_rounds: int, estimate: Estimator | None) -> None:
        self.model = model
        self.max_rounds = max_rounds
        self.estimate = estimate
        self.original: BaseException | None = None
        self.rounds = 0
        self.attempt = 0

    def after_overflow(self, error: BaseException, sent: Sequence[Any]) -> list[Any] | None:
        """The next request to send, or None to give the original error back."""
        if self.original is None:
            self.original = error
        self.attempt += 1
        if self.rounds >= self.max_rounds:
            _record_overflow(error, self.attempt, self.model, None)
            return None
        result = emergency_trim(sent, model=self.model, estimate=self.estimate)
        _record_overflow(error, self.attempt, self.model, result)
        if not result.changed:
            return None
        self.rounds += 1
        return result.messages

    def give_up(self) -> BaseException:
        assert self.original is not None
        return self.original


def call_with_emergency_trim(
    send: Callable[[list[Any]], T],
    messages: list[Any],
    *,
    model: str | None = None,
    max_rounds: int = 8,
    is_overflow: OverflowPredicate = is_context_length_error,
    estimate: Estimator | None = None,
) -> T:
    """``send(messages)``; on a context overflow, trim (to half the current estimate)
    and send again at once to the same provider, as often as it still overflows.

    When nothing is left to trim, or after ``max_rounds`` trims, the *first* overflow
    error is raised. Any other error propagates unchanged. ``messages`` is never
    modified: retries send new lists.
    """
    rounds = _Rounds(model, max_rounds, estimate)
    current = messages
    while True:
        try:
            return send(current)
        except Exception as error:
            if not _is_overflow(is_overflow, error):
                raise
            following = rounds.after_overflow(error, current)
        if following is None:
            raise rounds.give_up()
        current = following


async def acall_with_emergency_trim(
    send: Callable[[list[Any]], Awaitable[T]],
    messages: list[Any],
    *,
    model: str | None = None,
    max_rounds: int = 8,
    is_overflow: OverflowPredicate = is_context_length_error,
    estimate: Estimator | None = None,
) -> T:
    """The async twin of :func:`call_with_emergency_trim` (``send`` is awaited)."""
    rounds = _Rounds(model, max_rounds, estimate)
    current = messages
    while True:
        try:
            return await send(current)
        except Exception as error:
            if not _is_overflow(is_overflow, error):
                raise
            following = rounds.after_overflow(error, current)
        if following is None:
            raise rounds.give_up()
        current = following
