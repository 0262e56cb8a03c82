"""What a request's input holds that its records need (the calls and results with ids,
the assistant messages, each result's stage), kept on the input's last message. A later
request of the run whose input extends the same parsed messages (:mod:`.parsed_prefixes`)
reads only its new messages: a long run's request carries hundreds of results, nearly
all of them carried exactly as the request before carried them.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

from ctxledger.verdicts import Measurement
from ctxledger_collector.derive.messages import Message, ToolCall, ToolResult

_MEMO_KEY = __name__


@dataclass(frozen=True)
class InputFacts:
    """What input messages hold that a request's records need: the calls and results with
    ids, the assistant messages, the tool name of each call, the ids of the results and
    of the calls (each once, in order), and the first compaction a message stands for."""

    calls: list[ToolCall]
    results: list[ToolResult]
    assistants: int
    names: dict[str, str | None]
    result_ids: tuple[str, ...]
    result_id_set: frozenset[str]
    call_ids: tuple[str, ...]
    call_id_set: frozenset[str]
    compaction: str | None


@dataclass(frozen=True)
class InputRead:
    """The facts of a request's first ``length`` input messages, and each result's stage
    as that request had it, under ``setting`` (what else a stage is built from: model,
    trace, source, agent, the lengths the telemetry cut values at)."""

    length: int
    first: Message
    setting: tuple[object, ...]
    facts: InputFacts
    stages: list[Measurement]


_ID = attrgetter("id")


def _new_ids(items: list[ToolCall] | list[ToolResult], known: frozenset[str]) -> tuple[str, ...]:
    return tuple(i for i in dict.fromkeys(map(_ID, items)) if i not in known)


def input_facts(messages: list[Message], earlier: InputFacts | None) -> InputFacts:
    """The facts of ``messages``, or of ``earlier``'s messages followed by them: the cost
    of what is new."""
    calls = [c for m in messages for c in m.calls if c.id]
    results = [r for m in messages for r in m.results if r.id]
    assistants = sum(m.role == "assistant" for m in messages)
    names = {c.id: c.name for c in calls if c.id}
    compaction = next((m.compaction for m in messages if m.compaction is not None), None)
    if earlier is None:
        result_ids, call_ids = _new_ids(results, frozenset()), _new_ids(calls, frozenset())
        return InputFacts(
            calls, results, assistants, names, result_ids, frozenset(result_ids),
            call_ids, frozenset(call_ids), compaction,
        )  # fmt: skip
    new_results = _new_ids(results, earlier.result_id_set)
    new_calls = _new_ids(calls, earlier.call_id_set)
    return InputFacts(
        earlier.calls + calls,
        earlier.results + results,
        earlier.assistants + assistants,
        {**earlier.names, **names},
        earlier.result_ids + new_results,
        earlier.result_id_set.union(new_results),
        earlier.call_ids + new_calls,
        earlier.call_id_set.union(new_calls),
        earlier.compaction if earlier.compaction is not None else compaction,
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
        ids = read.facts.result_id_set
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
