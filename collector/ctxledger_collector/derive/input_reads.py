"""What a request's input holds that its records need (the calls and results with ids,
the assistant messages, each result's stage), kept on the input's last message. A later
request of the run whose input extends the same parsed messages (:mod:`.parsed_prefixes`)
reads only its new messages: a long run's request carries hundreds of results, nearly
all of them carried exactly as the request before carried them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxledger.verdicts import Measurement
from ctxledger_collector.derive.messages import Message, ToolCall, ToolResult

_MEMO_KEY = __name__


@dataclass(frozen=True)
class InputRead:
    """The calls and results (with ids) of a request's first ``length`` input messages,
    the assistant messages among them, and each result's stage as that request had it,
    under ``setting`` (what else a stage is built from: model, trace, source, agent, the
    lengths the telemetry cut values at)."""

    length: int
    first: Message
    setting: tuple[object, ...]
    calls: list[ToolCall]
    results: list[ToolResult]
    assistants: int
    stages: list[Measurement]


def read_messages(messages: list[Message]) -> tuple[list[ToolCall], list[ToolResult], int]:
    """The calls and results with ids in ``messages``, and how many are the assistant's."""
    return (
        [c for m in messages for c in m.calls if c.id],
        [r for m in messages for r in m.results if r.id],
        sum(m.role == "assistant" for m in messages),
    )


def earlier_read(inputs: list[Message], setting: tuple[object, ...]) -> InputRead | None:
    """The read kept by an earlier request whose input ``inputs`` extends, under the same
    setting; None when there is none, or when a new message names a call whose result
    the earlier input holds (its tool name could change)."""
    for index in range(len(inputs) - 1, -1, -1):
        read: InputRead | None = inputs[index].memo.get(_MEMO_KEY)
        if read is None:
            continue
        # The same message object at the same place: the same parsed messages before it.
        if read.length != index + 1 or read.first is not inputs[0] or read.setting != setting:
            return None
        ids = {r.id for r in read.results}
        if any(c.id in ids for m in inputs[read.length :] for c in m.calls):
            return None
        return read
    return None


def keep_read(inputs: list[Message], read: InputRead, earlier: InputRead | None) -> None:
    """Keep ``read`` (of all of ``inputs``) on their last message, for the next request;
    the earlier one it extends is given up (one per run's latest input)."""
    if earlier is not None:
        inputs[earlier.length - 1].memo.pop(_MEMO_KEY, None)
    if inputs:
        inputs[-1].memo[_MEMO_KEY] = read
