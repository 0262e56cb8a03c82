"""One Codex turn as its telemetry shows it (:mod:`.codex_turns` keeps the recent ones):
when each request was sent, what each one's usage reports, the tool outputs, the calls
its answers issued, and the turn's own total; whether all of it is here; and which two
requests an output went between.

Codex sends a request, waits for every tool output its answer asked for, then sends the
next. So the request before an output is the last one sent before the output started,
the request after it the first one sent after it ended, and a request's usage the first
reported after it was sent, before the next was sent.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from ctxledger.verdicts import Measurement
from ctxledger_collector.decoded.batch import DerivedStage

#: One piece of a turn's evidence: a request sent ("sent", time), its usage ("usage",
#: time), a tool output's span or log record ("call", call id), or what the turn's own
#: spans say of all of it ("turn", trace id).
Piece = tuple[str, Any]


@dataclass
class Output:
    start_ns: int
    end_ns: int
    length: int  # the whole output's bytes
    handed: Measurement  # the stage written before the usage was known
    #: The stage written again once the turn showed what the model read, and the pieces
    #: of evidence that showed it.
    read: DerivedStage | None = None
    evidence: frozenset[Piece] = frozenset()
    #: When the requests before and after it were sent, once read.
    gap: tuple[int, int] | None = None

    def carried_with(self, other: Output) -> bool:
        """Whether ``other`` went to the model in the request that carried this one."""
        return self.gap is not None and self.gap[0] < other.start_ns and other.end_ns <= self.gap[1]


@dataclass
class Turn:
    sent: list[int] = field(default_factory=list)  # requests' send times, sorted
    usage: list[tuple[int, int, int, float]] = field(default_factory=list)  # start, in, out, at
    outputs: dict[str, Output] = field(default_factory=dict)
    #: The turn's input tokens, as its own span sums them once the turn is over.
    total_input: int | None = None
    #: The spans that saw a response issue a tool call.
    issued: set[str] = field(default_factory=set)

    def complete(self) -> bool:
        """Whether every span the reading needs is here: the usage reported sums to the
        turn's total, each request that reported usage was seen sent, and each call
        issued has its output. A span lost in transit, or sent to another collector,
        makes the turn give no reading rather than a wrong one."""
        if self.total_input is None or sum(u[1] for u in self.usage) != self.total_input:
            return False
        if len(self.issued) != len(self.outputs):
            return False
        previous = -1
        for start, *_ in self.usage:
            at = bisect.bisect_right(self.sent, start) - 1
            if at < 0 or self.sent[at] <= previous:
                return False  # no request sent since the previous usage
            previous = start
        return True

    def usage_after(
        self, sent_ns: int, next_sent: int | None
    ) -> tuple[int, int, int, float] | None:
        """The usage of the request sent at ``sent_ns``: the first reported after it, before
        the next request was sent (start, input tokens, output tokens, observed at)."""
        index = bisect.bisect_right(self.usage, (sent_ns, 1 << 62))
        if index == len(self.usage):
            return None
        found = self.usage[index]
        if next_sent is not None and found[0] >= next_sent:
            return None  # that request reported no usage (it failed, or it is still to come)
        return found


def insert_once(items: list[Any], item: Any) -> None:
    """Keep ``items`` sorted, each once (an export sent again repeats its spans)."""
    at = bisect.bisect_left(items, item)
    if at == len(items) or items[at] != item:
        items.insert(at, item)
