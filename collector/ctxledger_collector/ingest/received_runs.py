"""The ``received`` stages of a long run's request, from the request before it.

Where the server read the whole request (:func:`~ctxledger.verdicts.received.
reads_everything`), a result carried exactly as the request before carried it gets the
template that request gave it (:mod:`.carried_received`), provided the request's counted
segments begin with the request before's (the same sizes, so the same template) and the
new segments name none of those results. Only what is new in the request is looked at:
the rule's outcome for the rest is known without building it. A request that does not go
on from the last one read of its conversation goes the whole way
(:func:`~.carried_received.received_stages`), which then keeps it for the next.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.model import ReceivedRecord
from ctxledger.verdicts.received import KEPT, CallOutcome, ReceivedOutcome
from ctxledger.verdicts.received_stages import outcome_measurements

#: (trace id, conversation key, the template setting)
RunKey = tuple[str, str, tuple[object, ...]]
#: Builds a carried result's template: (call id, sent stages, sizes by call) -> template.
TemplateOf = Callable[[str, Mapping[str, Measurement], Mapping[str, tuple[int, int]]], Measurement]

_CALL = attrgetter("tool_call_id")


@dataclass(frozen=True)
class ReadRequest:
    """A request whose results the server read whole, as its received stages went."""

    #: Its carried ``llm_input`` stages, and their calls.
    carried: tuple[Measurement, ...]
    carried_calls: frozenset[str]
    #: The received templates of those with a segment, in the rule's order.
    templates: tuple[Measurement, ...]
    #: The index of the last first segment among the carried calls (-1: none).
    last_carried_segment: int
    #: The calls with a segment that it did not carry, in order.
    own_calls: tuple[str, ...]
    segment_calls: frozenset[str]
    segment_call_ids: tuple[str, ...]
    segment_tokens: tuple[int, ...]
    segment_chars: tuple[int, ...]


def read_request(
    record: ReceivedRecord,
    carried: tuple[Measurement, ...],
    templates: Sequence[Measurement],
    own_stages: Mapping[str, Measurement],
) -> ReadRequest | None:
    """What the next request of the conversation goes on from (None: carried stages
    other than ``llm_input`` ones, or a result both carried and the request's own, which
    go the whole way)."""
    carried_calls = frozenset(map(_CALL, carried))
    if any(t.stage != sc.STAGE_LLM_INPUT for t in carried) or not carried_calls.isdisjoint(
        own_stages
    ):
        return None
    first: dict[str, int] = {}
    for index, call_id in enumerate(record.segment_call_ids):
        if call_id:
            first.setdefault(call_id, index)
    return ReadRequest(
        carried=carried,
        carried_calls=carried_calls,
        templates=tuple(templates),
        last_carried_segment=max((i for c, i in first.items() if c in carried_calls), default=-1),
        own_calls=tuple(c for c in first if c not in carried_calls),
        segment_calls=frozenset(first),
        segment_call_ids=record.segment_call_ids,
        segment_tokens=record.segment_tokens,
        segment_chars=record.segment_chars,
    )


class ReadRequests:
    """Per conversation and setting, the last request read whole. Thread-safe; the least
    recently used are given up past ``max_runs``."""

    def __init__(self, max_runs: int = 20_000) -> None:
        self.max_runs = max_runs
        self._runs: OrderedDict[RunKey, ReadRequest] = OrderedDict()
        self._lock = threading.Lock()
        #: Requests whose received stages went on from the request before.
        self.went_on = 0

    def get(self, key: RunKey) -> ReadRequest | None:
        with self._lock:
            return self._runs.get(key)

    def put(self, key: RunKey, read: ReadRequest | None) -> None:
        with self._lock:
            if read is None:
                self._runs.pop(key, None)
                return
            self._runs[key] = read
            self._runs.move_to_end(key)
            while len(self._runs) > self.max_runs:
                self._runs.popitem(last=False)


#: The collector process's: derivation of every span shares it.
READ_REQUESTS = ReadRequests()


def run_key(record: ReceivedRecord, manifest: Manifest, setting: tuple[object, ...]) -> RunKey:
    return (record.trace_id, manifest.conversation_key, setting)


def _sizes(record: ReceivedRecord, call_id: str) -> tuple[int, int]:
    """The call's (tokens, chars) over its segments, as ``result_sizes`` sums them."""
    hits = list(map(call_id.__eq__, record.segment_call_ids))
    return sum(compress(record.segment_tokens, hits)), sum(compress(record.segment_chars, hits))


def received_from_before(
    record: ReceivedRecord,
    own_stages: Mapping[str, Measurement],
    carried: tuple[Measurement, ...],
    last: ReadRequest,
    template_of: TemplateOf,
) -> tuple[list[Measurement], list[Measurement], ReadRequest] | None:
    """The request's own received measurements, the templates of its carried ones and
    what the next request goes on from, where it goes on from ``last`` (None: it does
    not). The server read the whole request (the caller asked)."""
    k, n = len(last.carried), len(last.segment_call_ids)
    ids = record.segment_call_ids
    if (
        len(carried) < k
        or len(ids) < n
        or carried[:k] != last.carried
        or ids[:n] != last.segment_call_ids
        or record.segment_tokens[:n] != last.segment_tokens
        or record.segment_chars[:n] != last.segment_chars
        or not last.carried_calls.isdisjoint(ids[n:])
        or not last.carried_calls.isdisjoint(own_stages)
    ):
        return None
    tail = carried[k:]
    tail_by_call = {t.tool_call_id: t for t in tail}
    if (
        any(t.stage != sc.STAGE_LLM_INPUT for t in tail)
        or not last.carried_calls.isdisjoint(tail_by_call)
        or not own_stages.keys().isdisjoint(tail_by_call)
    ):
        return None
    new_ids = tuple(dict.fromkeys(c for c in ids[n:] if c and c not in last.segment_calls))
    # The tail's calls with a segment, by their first one: they follow the earlier ones.
    firsts = sorted((ids.index(c), c) for c in tail_by_call if c in last.segment_calls)
    firsts += [(n + ids[n:].index(c), c) for c in new_ids if c in tail_by_call]
    if firsts and firsts[0][0] <= last.last_carried_segment:
        return None
    own_calls = tuple(c for c in (*last.own_calls, *new_ids) if c not in tail_by_call)
    needed = [c for _, c in firsts] + list(own_calls)
    sizes = {c: _sizes(record, c) for c in needed}
    sent = {c: s for c in needed if (s := own_stages.get(c) or tail_by_call.get(c)) is not None}
    templates = (*last.templates, *(template_of(c, sent, sizes) for _, c in firsts))
    kept = ReceivedOutcome(tuple(CallOutcome(c, KEPT) for c in own_calls))
    own = outcome_measurements(record, kept, sent, sizes=sizes)
    read = ReadRequest(
        carried=carried,
        carried_calls=last.carried_calls.union(tail_by_call),
        templates=templates,
        last_carried_segment=firsts[-1][0] if firsts else last.last_carried_segment,
        own_calls=own_calls,
        segment_calls=last.segment_calls.union(new_ids),
        segment_call_ids=ids,
        segment_tokens=record.segment_tokens,
        segment_chars=record.segment_chars,
    )
    return own, list(templates), read
