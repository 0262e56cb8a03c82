"""LM Studio's ``stopAtLimit`` context overflow policy, on chat completions
(``stop_at_limit``, ``--stop-at-limit``).

LM Studio lets a loaded model choose what happens when its context fills: a rolling
window (the front discard of ``--silent-front-discard``), ``truncateMiddle``, or
``stopAtLimit``: the prompt is kept whole and generation stops where the window is full,
the prediction's ``stats.stopReason`` saying ``contextLengthReached`` (the ``lmstudio``
SDKs' ``LLMPredictionStopReason``). Nothing the model was sent is lost; what is lost is
the end of the answer, which an OpenAI client sees only as ``finish_reason: "length"``.

So a chat completion whose prompt plus requested output (``max_completion_tokens``, else
``max_tokens``, else the scripted answer's own tokens: the script is the start of what
the model would go on to write) exceeds the window is answered with a 200 whose
``finish_reason`` is ``"length"``, whose answer is cut to the tokens left (``window -
prompt``; tool calls dropped unless the whole answer fits, since a call cut inside its
arguments is no call) and with an extra top-level ``"stats": {"stopReason":
"contextLengthReached"}``. The mode's other answers carry ``stats`` too, ``eosFound`` or
``toolCalls``, as LM Studio reports a stop reason for every prediction. A prompt over the
window on its own is refused as without the mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxledger_cli.provider.counting import Counting

CONTEXT_LENGTH_REACHED = "contextLengthReached"


@dataclass(frozen=True)
class Stopped:
    """The answer as LM Studio ends it (counts in reported units)."""

    text: str | None
    calls: list[dict[str, Any]]
    completion_tokens: int
    finish_reason: str
    stats: dict[str, Any]


def requested_output(payload: Mapping[str, Any]) -> int | None:
    """The output tokens the request asks for, if it says (the newer name first)."""
    for key in ("max_completion_tokens", "max_tokens"):
        value = payload.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _pairs(calls: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return [(c["function"]["name"], c["function"]["arguments"]) for c in calls]


def _prefix_within(text: str, room: int, counting: Counting, model: str) -> str:
    """The longest start of ``text`` whose tokens fit ``room`` (a count grows with the
    text, so a binary search over characters finds it)."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if counting.text(text[:middle], model) <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def stop_at_limit(
    payload: Mapping[str, Any],
    counting: Counting,
    model: str,
    prompt_tokens: int,
    window: int,
    text: str | None,
    calls: list[dict[str, Any]],
) -> Stopped:
    """The scripted answer (``text`` and ``calls``, in chat completions' shape) as LM
    Studio's ``stopAtLimit`` ends it for a prompt of ``prompt_tokens`` in ``window``."""
    completion = counting.answer(text, _pairs(calls), model)
    requested = requested_output(payload) or completion
    if prompt_tokens + requested <= window:
        finish, reason = ("tool_calls", "toolCalls") if calls else ("stop", "eosFound")
        return Stopped(text, calls, completion, finish, {"stopReason": reason})
    room = max(0, window - prompt_tokens)
    if completion > room:
        calls = []
        text = _prefix_within(text or "", room, counting, model)
        completion = counting.text(text, model)
    return Stopped(text, calls, completion, "length", {"stopReason": CONTEXT_LENGTH_REACHED})
