"""What the collector process remembers of each recent Codex turn (:mod:`.codex_turn`)
until it can tell what the model read of a long tool output (:mod:`.codex_kept`).

Codex's telemetry spreads that evidence over spans and log records that arrive in any
order and in separate exports: each piece is added here as it comes. Once the whole turn
is here (:meth:`.codex_turn.Turn.complete`), a long output's ``llm_input`` stage is
written again with what the model read; until then (and for good, when the collector
restarts in between or forgets the turn), it stays not auditable.

Bounded: the most recent :data:`MAX_TURNS` turns and :data:`MAX_PREVIEWS` previews.
"""

from __future__ import annotations

import bisect
import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ctxledger.verdicts import Measurement
from ctxledger_collector.decoded.batch import DerivedStage
from ctxledger_collector.derive.codex_kept import SETTINGS, Evidence, Kept, kept_by_codex
from ctxledger_collector.derive.codex_turn import Output, Piece, Turn, insert_once

MAX_TURNS: Final = 2_000
MAX_PREVIEWS: Final = 20_000
HEAD_TAIL: Final = "head_tail"
#: How much later a stage written again is observed than the copy it replaces (whole
#: microseconds, as the store compares them, with room for float rounding).
OBSERVED_LATER: Final = 1e-3


@dataclass(frozen=True)
class Preview:
    """What a ``codex.tool_result`` log record tells of its output beyond its size."""

    bytes_per_token: float
    max_output_tokens: int | None = None


class CodexTurns:
    """The evidence of recent Codex turns, by trace; thread-safe.

    Each method takes one piece of evidence and returns the ``llm_input`` stages it
    completes, and again those it was part of: a piece that comes again (an export
    retried, or replayed from the spool) brings its stages again, to be stored again."""

    def __init__(
        self,
        max_turns: int = MAX_TURNS,
        max_previews: int = MAX_PREVIEWS,
        infer: Callable[[Evidence], Kept | None] = kept_by_codex,
    ) -> None:
        self._infer = infer
        self._turns: OrderedDict[str, Turn] = OrderedDict()
        self._previews: OrderedDict[tuple[str, str], Preview] = OrderedDict()
        self._max_turns, self._max_previews = max_turns, max_previews
        self._lock = threading.Lock()

    def _turn(self, trace_id: str) -> Turn:
        turn = self._turns.get(trace_id)
        if turn is None:
            turn = self._turns[trace_id] = Turn()
            while len(self._turns) > self._max_turns:
                self._turns.popitem(last=False)
        self._turns.move_to_end(trace_id)
        return turn

    def request_sent(self, trace_id: str, start_ns: int) -> list[DerivedStage]:
        with self._lock:
            insert_once(self._turn(trace_id).sent, start_ns)
            return self._decide(trace_id, ("sent", start_ns))

    def usage(
        self, trace_id: str, start_ns: int, tokens_in: int, tokens_out: int, observed_at: float
    ) -> list[DerivedStage]:
        with self._lock:
            reported = (start_ns, tokens_in, tokens_out, observed_at)
            insert_once(self._turn(trace_id).usage, reported)
            return self._decide(trace_id, ("usage", start_ns))

    def turn_over(self, trace_id: str, total_input: int) -> list[DerivedStage]:
        with self._lock:
            self._turn(trace_id).total_input = total_input
            return self._decide(trace_id, ("turn", trace_id))

    def call_issued(self, trace_id: str, span_id: str) -> list[DerivedStage]:
        with self._lock:
            self._turn(trace_id).issued.add(span_id)
            return self._decide(trace_id, ("turn", trace_id))

    def output(
        self, start_ns: int, end_ns: int, length: int, handed: Measurement
    ) -> list[DerivedStage]:
        with self._lock:
            turn = self._turn(handed.trace_id)
            found = Output(start_ns, end_ns, length, handed)
            stored = turn.outputs.setdefault(handed.tool_call_id, found)
            withdrawn = self._withdraw(turn, stored) if stored is found else []
            return withdrawn + self._decide(handed.trace_id, ("call", handed.tool_call_id))

    def preview(self, trace_id: str, call_id: str, preview: Preview) -> list[DerivedStage]:
        """A call's preview, keyed by its trace too: a call id is the model's to choose,
        and may come again in another turn."""
        with self._lock:
            key = (trace_id, call_id)
            self._previews[key] = preview
            self._previews.move_to_end(key)
            while len(self._previews) > self._max_previews:
                self._previews.popitem(last=False)
            return self._decide(trace_id, ("call", call_id))

    @staticmethod
    def _withdraw(turn: Turn, late: Output) -> list[DerivedStage]:
        """A long output that arrives after another output carried by the same request
        was read from its usage: that usage held both, so what was read of the other is
        withdrawn (written again as not auditable, observed later, to be preferred)."""
        if late.handed.telemetry_cut is None:
            return []
        withdrawn: list[DerivedStage] = []
        for output in turn.outputs.values():
            if output is late or output.read is None or not output.carried_with(late):
                continue
            if output.read.measurement.telemetry_cut is None:
                after = output.read.measurement.observed_at + OBSERVED_LATER
                again = dataclasses.replace(output.handed, observed_at=after)
                output.read = DerivedStage(again)
                withdrawn.append(output.read)
        return withdrawn

    def _decide(self, trace_id: str, piece: Piece) -> list[DerivedStage]:
        turn = self._turns.get(trace_id)
        if turn is None:
            return []
        stages: list[DerivedStage] = []
        if not turn.complete():
            return stages
        for call_id, output in turn.outputs.items():
            if output.handed.telemetry_cut is None:
                continue  # known whole from its size alone
            if output.read is None:
                output.read, output.evidence = self._read(turn, call_id, output)
                if output.read is not None:
                    stages.append(output.read)
            elif piece in output.evidence or piece[0] == "turn":
                stages.append(output.read)
        return stages

    def _read(
        self, turn: Turn, call_id: str, output: Output
    ) -> tuple[DerivedStage | None, frozenset[Piece]]:
        """What the model read of an output, once the turn shows it, and the pieces of
        evidence that showed it."""
        preview = self._previews.get((output.handed.trace_id, call_id))
        before_at = bisect.bisect_left(turn.sent, output.start_ns) - 1
        after_at = bisect.bisect_left(turn.sent, output.end_ns)
        if preview is None or before_at < 0 or after_at >= len(turn.sent):
            return None, frozenset()
        before_sent, after_sent = turn.sent[before_at], turn.sent[after_at]
        following = turn.sent[after_at + 1] if after_at + 1 < len(turn.sent) else None
        before = turn.usage_after(before_sent, turn.sent[before_at + 1])
        after = turn.usage_after(after_sent, following)
        if before is None or after is None:
            return None, frozenset()
        between = [
            o
            for c, o in turn.outputs.items()
            if c != call_id and o.start_ns > before_sent and o.end_ns <= after_sent
        ]
        if any(o.handed.telemetry_cut is not None for o in between):
            return None, frozenset()  # two long outputs in one request: no telling apart
        evidence = Evidence(
            output_bytes=output.length,
            added_tokens=after[1] - before[1] - before[2],
            bytes_per_token=preview.bytes_per_token,
            other_bytes=sum(o.length for o in between),
            max_output_tokens=preview.max_output_tokens,
        )
        kept = self._infer(evidence)
        if kept is None:
            return None, frozenset()
        pieces: frozenset[Piece] = frozenset(
            {
                ("call", call_id),
                ("sent", before_sent),
                ("sent", after_sent),
                ("usage", before[0]),
                ("usage", after[0]),
            }
        )
        output.gap = (before_sent, after_sent)
        return DerivedStage(_as_read(output.handed, kept, after[3])), pieces


def _as_read(handed: Measurement, kept: Kept, observed_at: float) -> Measurement:
    """The ``llm_input`` stage as the usage shows it; observed when the request after the
    output completed, so that this copy is preferred to the one written before."""
    common = dataclasses.replace(
        handed,
        telemetry_cut=None,
        observed_at=max(observed_at, handed.observed_at + OBSERVED_LATER),
    )
    if kept.budget is None:
        return dataclasses.replace(common, chars=kept.bytes, bytes=kept.bytes)
    note = (
        f"Codex cut this output to its head and tail at {kept.budget} (from the usage of "
        f"the request that carried it); to keep more, raise {SETTINGS}"
    )
    return dataclasses.replace(
        common,
        chars=kept.bytes,
        bytes=kept.bytes,
        declared=True,
        marker=True,
        strategy=HEAD_TAIL,
        note=note,
    )


SHARED = CodexTurns()
