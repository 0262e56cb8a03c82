"""Judge a request's re-sent results by what is new in it.

A long run's request k+1 carries request k's results as request k carried them (the very
same stages, :class:`~ctxledger_collector.decoded.batch.DecodedManifest`) and a few new
ones. Where request k's re-sends were found quiet, request k+1's are too, provided it
stands later in the same conversation, on the same side of its compactions, shows all it
carried and lists those results and their calls: each fact that made them quiet held for
a request below it, and the rule (:func:`~ctxledger.verdicts.resends.quiet_stages`) reads
nothing else of the request. So per conversation the last request judged is kept, and the
next one judges only the stages past that request's, and those that were not quiet.
Anything else (a result cut or rewritten, a trim, requests out of order) is judged stage
by stage, as it always is.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from operator import attrgetter

from ctxledger.verdicts import Measurement
from ctxledger.verdicts.resends import shows_whole
from ctxledger_collector.decoded.batch import DecodedManifest

#: (trace id, conversation key, compaction)
RunKey = tuple[str, str, str | None]

_STAGE_KEY = attrgetter("tool_call_id", "stage")
_CALL = attrgetter("tool_call_id")
_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Judged:
    """The last request of a conversation whose re-sends were judged."""

    position: int
    carried: tuple[Measurement, ...]
    #: The calls whose journeys in it were quiet.
    quiet: frozenset[str]
    #: The carried stages of the other calls.
    loud: tuple[Measurement, ...]
    #: (call, stage) of every carried stage: each once.
    stage_keys: frozenset[tuple[str, str]]
    #: The calls of the carried stages.
    calls: frozenset[str]


@dataclass(frozen=True)
class CarriedSplit:
    """A request's carried stages: the calls quiet as in the request judged before it of
    its conversation (``quiet``), and the stages still to judge (``rest``)."""

    item: DecodedManifest
    quiet: frozenset[str]
    rest: tuple[Measurement, ...]
    #: (call, stage) of every carried stage; None when one is carried twice.
    stage_keys: frozenset[tuple[str, str]] | None
    #: The calls of the carried stages.
    calls: frozenset[str]


def _run_key(item: DecodedManifest) -> RunKey:
    m = item.manifest
    return (m.trace_id, m.conversation_key, m.compaction)


def _stage_keys(stages: tuple[Measurement, ...]) -> frozenset[tuple[str, str]] | None:
    keys = frozenset(map(_STAGE_KEY, stages))
    return keys if len(keys) == len(stages) else None


class QuietRuns:
    """Per conversation, the last request judged. Thread-safe; the least recently used
    conversations are given up past ``max_runs``."""

    def __init__(self, max_runs: int = 20_000) -> None:
        self.max_runs = max_runs
        self._runs: OrderedDict[RunKey, _Judged] = OrderedDict()
        self._lock = threading.Lock()
        #: Requests whose carried stages went on from the request before / were all judged.
        self.went_on = 0
        self.judged_anew = 0

    def split(self, item: DecodedManifest) -> CarriedSplit:
        """``item``'s carried stages, those quiet as before apart."""
        carried, m = item.carried, item.manifest
        position = m.position
        last = None
        if position is not None and shows_whole(m):
            with self._lock:
                last = self._runs.get(_run_key(item))
        if (
            last is None
            or position is None
            or position <= last.position
            or len(carried) < len(last.carried)
            or carried[: len(last.carried)] != last.carried
            or not last.quiet <= m.results
            or not last.quiet <= (m.calls or _NONE)
        ):
            self.judged_anew += 1
            calls = frozenset(map(_CALL, carried))
            return CarriedSplit(item, _NONE, carried, _stage_keys(carried), calls)
        tail = carried[len(last.carried) :]
        tail_keys = _stage_keys(tail)
        keys = None
        if tail_keys is not None and tail_keys.isdisjoint(last.stage_keys):
            keys = last.stage_keys | tail_keys
        self.went_on += 1
        calls = last.calls.union(map(_CALL, tail))
        return CarriedSplit(item, last.quiet, last.loud + tail, keys, calls)

    def keep(
        self, split: CarriedSplit, quiet: frozenset[str], loud: tuple[Measurement, ...]
    ) -> None:
        """Remember how ``split``'s request was judged, for the next of its conversation."""
        m = split.item.manifest
        position = m.position
        if position is None or split.stage_keys is None or not shows_whole(m):
            return
        key = _run_key(split.item)
        judged = _Judged(position, split.item.carried, quiet, loud, split.stage_keys, split.calls)
        with self._lock:
            last = self._runs.get(key)
            if last is not None and last.position >= position:
                return  # a request that arrived late: the next one follows the later
            self._runs[key] = judged
            self._runs.move_to_end(key)
            while len(self._runs) > self.max_runs:
                self._runs.popitem(last=False)
