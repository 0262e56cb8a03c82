"""The pairing checker: every tool call has its result, every result has its call.

A message list is not a log but a data structure with internal constraints (seed 001):
providers reject a request in which a tool call has no result, or a result answers no
call. Deleting a tool result to save space (the naive emergency trim) breaks exactly
this. :func:`check_pairing` lists the problems; :func:`assert_paired` fails a test on
any of them. Both read OpenAI chat, Anthropic and Responses lists through
:func:`ctxledger._messages.parse_messages`.

A result pairs with a call of the same id in an *earlier* message (or input item). A
call with no result anywhere after it is ``call_without_result``; a result with no
unpaired call before it is ``result_without_call``. Ids are matched as a multiset: two
calls with one id need two results. OpenAI chat is stricter still: the results must
follow the assistant message that issued the calls directly; this checker reports what
is missing, not what is out of place.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

from ctxledger._messages import parse_messages

__all__ = [
    "CALL_WITHOUT_RESULT",
    "RESULT_WITHOUT_CALL",
    "PairingProblem",
    "assert_paired",
    "check_pairing",
]

CALL_WITHOUT_RESULT: Final = "call_without_result"
RESULT_WITHOUT_CALL: Final = "result_without_call"

ProblemKind = Literal["call_without_result", "result_without_call"]


@dataclass(frozen=True)
class PairingProblem:
    """One broken pair in a message list."""

    kind: ProblemKind
    tool_call_id: str
    message_index: int
    """Index of the message (or input item) that carries the lone call or result."""
    tool_name: str | None = None

    def __str__(self) -> str:
        name = f" ({self.tool_name})" if self.tool_name else ""
        if self.kind == CALL_WITHOUT_RESULT:
            return (
                f"message {self.message_index}: tool call {self.tool_call_id}{name} "
                "has no result after it"
            )
        return (
            f"message {self.message_index}: tool result {self.tool_call_id}{name} "
            "answers no earlier tool call"
        )


def check_pairing(messages: Iterable[Any]) -> list[PairingProblem]:
    """Every unpaired tool call and tool result in ``messages``, in message order."""
    parsed = parse_messages(messages)
    calls_at: dict[int, list[tuple[str, str | None]]] = defaultdict(list)
    results_at: dict[int, list[tuple[str, str | None]]] = defaultdict(list)
    for call in parsed.calls:
        calls_at[call.message_index].append((call.tool_call_id, call.tool_name))
    for result in parsed.results:
        results_at[result.message_index].append((result.tool_call_id, result.tool_name))

    open_calls: dict[str, deque[tuple[int, str | None]]] = defaultdict(deque)
    problems: list[PairingProblem] = []
    for index in sorted(calls_at.keys() | results_at.keys()):
        # Results first: a result never answers a call in its own message.
        for call_id, name in results_at.get(index, ()):
            waiting = open_calls.get(call_id)
            if waiting:
                waiting.popleft()
            else:
                problems.append(PairingProblem(RESULT_WITHOUT_CALL, call_id, index, name))
        for call_id, name in calls_at.get(index, ()):
            open_calls[call_id].append((index, name))
    for call_id, waiting in open_calls.items():
        for index, name in waiting:
            problems.append(PairingProblem(CALL_WITHOUT_RESULT, call_id, index, name))
    problems.sort(key=lambda p: (p.message_index, p.kind, p.tool_call_id))
    return problems


def assert_paired(messages: Iterable[Any]) -> None:
    """Raise :class:`AssertionError` listing every unpaired tool call and result.

    Meant for tests: ``assert_paired(request["messages"])``.
    """
    __tracebackhide__ = True
    problems = check_pairing(messages)
    if problems:
        lines = "\n".join(f"  - {problem}" for problem in problems)
        raise AssertionError(f"{len(problems)} unpaired tool call(s)/result(s):\n{lines}")
