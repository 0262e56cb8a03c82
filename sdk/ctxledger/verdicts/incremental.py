"""Judge only what a batch can change. Pure; stdlib only.

A store that already holds a trace's measurements, manifests and reports, and has just
stored a batch, re-judges the journeys the batch can change instead of the whole trace,
so the cost of a batch follows the batch, not the length of the run. What it reads is
asked through :class:`TraceState`, one batched question per kind; the collector answers
from its database, :class:`~ctxledger.verdicts.memory_state.MemoryTraceState` from memory.

Which journeys a batch can change, by the rules of :mod:`~ctxledger.verdicts.journeys` and
:mod:`~ctxledger.verdicts.call_origins`:

* a stage measured in request R: the journey (call, R);
* a stage measured before any request: every journey of its call (its stages lead every
  one of them, and its step may decide which request follows the call);
* a manifest of request R: the journey (call, R) of every call it lists and of every call
  already judged in R; every journey of each call its response issued (R may now be the
  call's origin); and, when R stands at position p of conversation k, the calls whose
  origin lies in k at a position in [the position of the last manifest of k below p, p):
  R may now be the request that follows them;
* a manifest whose input the telemetry did not show (``unseen``), or that replaced one:
  the journey without a request of every call of its trace that has one;
* a manifest that replaced a different stored copy: everything the old copy bore on.

Reports already stored stand for what earlier batches decided: a call has a report in
every request it has a journey in, so they tell which journeys exist without reading
the manifests that list old results. The result equals :func:`judge_trace` over the
whole set; a property test holds the two together.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Protocol

from ctxledger.verdicts.call_evidence import CallEvidence
from ctxledger.verdicts.call_origins import Origin, call_origin, issuer_origin
from ctxledger.verdicts.evidence_gaps import unseen, waits_for_unseen
from ctxledger.verdicts.journeys import CallJudgment, judge_call
from ctxledger.verdicts.model import Manifest, Measurement, Tolerances

#: (trace id, tool call id)
CallKey = tuple[str, str]
#: (trace id, request id)
RequestKey = tuple[str, str]
#: (trace id, tool call id, request id)
JourneyKey = tuple[str, str, str]
#: (trace id, conversation key, position)
PositionKey = tuple[str, str, int]
#: (trace id, conversation key, lowest position or None for no bound, position above)
PositionRange = tuple[str, str, int | None, int]
#: Per request, the calls whose stages in it a store left unwritten (quiet re-sends).
UnwrittenCalls = Mapping[RequestKey, AbstractSet[str]]


class TraceState(Protocol):
    """What the incremental judge reads of the stored traces, after the batch is stored.
    Every method answers for many keys at once; copies are already deduplicated."""

    def before_stages(self, calls: Collection[CallKey]) -> Mapping[CallKey, Sequence[Measurement]]:
        """Each call's stages measured before any request."""
        ...

    def request_stages(
        self, journeys: Collection[JourneyKey]
    ) -> Mapping[JourneyKey, Sequence[Measurement]]:
        """Each call's stages measured in a request."""
        ...

    def manifests(self, requests: Collection[RequestKey]) -> Mapping[RequestKey, Manifest]:
        """The stored manifest of each request that has one."""
        ...

    def issuers(self, calls: Collection[CallKey]) -> Mapping[CallKey, Sequence[Origin]]:
        """Per call: the origins of the stored manifests whose response issued it."""
        ...

    def requests_after(
        self, positions: Collection[PositionKey]
    ) -> Mapping[PositionKey, frozenset[str]]:
        """Per (trace, conversation, position): the requests of that conversation at the
        first position above it."""
        ...

    def position_below(
        self, positions: Collection[PositionKey]
    ) -> Mapping[PositionKey, int | None]:
        """Per (trace, conversation, position): the greatest position of a manifest of that
        conversation below it, None if there is none."""
        ...

    def calls_issued(self, ranges: Collection[PositionRange]) -> set[CallKey]:
        """Calls whose origin (:func:`~ctxledger.verdicts.call_origins.call_origin`) lies in the
        range's conversation at a position in [low, high); a low of None has no bound."""
        ...

    def judged_requests(self, calls: Collection[CallKey]) -> Mapping[CallKey, set[str | None]]:
        """The request ids of each call's stored reports (None: its journey without one)."""
        ...

    def judged_calls(self, requests: Collection[RequestKey]) -> Mapping[RequestKey, set[str]]:
        """The calls with a stored report in each request."""
        ...

    def calls_without_request(self, traces: Collection[str]) -> set[CallKey]:
        """The calls of these traces with a stored journey without a request."""
        ...

    def unseen_requests(self, traces: Collection[str]) -> Mapping[str, Manifest]:
        """Per trace: its unseen request of lowest id
        (:func:`~ctxledger.verdicts.evidence_gaps.first_unseen`), where it has one."""
        ...


@dataclass
class RejudgePlan:
    """What to re-judge: every journey of the ``whole`` calls, and for the others the
    journeys in ``journeys`` (request ids per call)."""

    whole: set[CallKey] = field(default_factory=set)
    journeys: dict[CallKey, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add_journey(self, trace_id: str, call_id: str, request_id: str) -> None:
        self.journeys[(trace_id, call_id)].add(request_id)

    @property
    def calls(self) -> set[CallKey]:
        return self.whole | set(self.journeys)


_NO_CALLS: frozenset[str] = frozenset()


def _bears_on_others(m: Manifest) -> tuple[object, ...]:
    """What a manifest says that other requests' journeys depend on."""
    return (m.position, m.conversation_key, m.tool_call_ids, m.tool_calls, m.issued_calls)


def _bore_on(old: Manifest, new: Manifest) -> bool:
    """Whether a stored manifest was replaced by a copy that says something else."""
    return _bears_on_others(old) != _bears_on_others(new)


def plan_rejudging(
    measurements: Iterable[Measurement],
    manifests: Iterable[Manifest],
    state: TraceState,
    replaced: Mapping[RequestKey, Manifest] | None = None,
    unwritten: UnwrittenCalls | None = None,
) -> RejudgePlan:
    """The journeys a stored batch can change. ``replaced`` holds the manifests the
    store held for the batch's requests before the batch (read before storing it);
    ``unwritten`` per request the calls whose quiet re-sends it left unwritten
    (:mod:`.resends`), which have no journey, now or later: a long run's request lists
    every result before it, and only what it changed is judged."""
    plan = RejudgePlan()
    for m in measurements:
        if m.request_id is None:
            plan.whole.add((m.trace_id, m.tool_call_id))
        else:
            plan.add_journey(m.trace_id, m.tool_call_id, m.request_id)

    batch_manifests = list(manifests)
    requests = {(man.trace_id, man.request_id) for man in batch_manifests}
    judged_in = state.judged_calls(requests) if requests else {}
    positions: set[PositionKey] = set()
    blind_traces: set[str] = set()
    for man in batch_manifests:
        key = (man.trace_id, man.request_id)
        listed = dict.fromkeys((*man.tool_call_ids, *(man.tool_calls or ()))).keys()
        for call_id in listed - (unwritten or {}).get(key, _NO_CALLS):
            plan.add_journey(man.trace_id, call_id, man.request_id)
        for call_id in judged_in.get(key, ()):
            plan.add_journey(man.trace_id, call_id, man.request_id)
        plan.whole.update((man.trace_id, c) for c in man.issued_calls or ())
        origin = issuer_origin(man)
        if origin is not None:
            positions.add((man.trace_id, *origin))
        old = (replaced or {}).get(key)
        if unseen(man) or (old is not None and unseen(old)):
            blind_traces.add(man.trace_id)
        if old is not None and _bore_on(old, man):
            plan.whole.update((man.trace_id, c) for c in judged_in.get(key, ()))
            for call_id in (*old.tool_call_ids, *(old.tool_calls or ()), *(old.issued_calls or ())):
                plan.whole.add((man.trace_id, call_id))
            old_origin = issuer_origin(old)
            if old_origin is not None:
                positions.add((man.trace_id, *old_origin))
    if positions:
        below = state.position_below(positions)
        plan.whole |= state.calls_issued([(t, k, below.get((t, k, p)), p) for t, k, p in positions])
    if blind_traces:
        plan.whole |= state.calls_without_request(blind_traces)
    return plan


def plan_sweep(unsettled: Iterable[tuple[str, str, str | None]]) -> RejudgePlan:
    """Re-judge journeys still waiting for later stages (reports with ``settled`` false)
    once their grace period may have passed: each journey alone, not its whole trace."""
    plan = RejudgePlan()
    for trace_id, call_id, request_id in unsettled:
        if request_id is None:
            plan.whole.add((trace_id, call_id))
        else:
            plan.add_journey(trace_id, call_id, request_id)
    return plan


def rejudge(
    plan: RejudgePlan,
    state: TraceState,
    *,
    tolerances: Tolerances,
    now: float | None,
) -> list[CallJudgment]:
    """Judge what ``plan`` names, reading only the evidence it needs."""
    calls = plan.calls
    if not calls:
        return []
    before = state.before_stages(calls)
    issued = state.issuers(calls)
    origins = {c: call_origin(before.get(c, ()), issued.get(c, ())) for c in calls}
    after = state.requests_after({(c[0], *o) for c, o in origins.items() if o is not None})
    following = {
        c: after.get((c[0], *o), frozenset()) if o is not None else frozenset()
        for c, o in origins.items()
    }
    # Every call's stored journeys are judged again with it: a journey in one request
    # decides whether later requests of its conversation re-send the result quietly
    # (:mod:`.resends`), and a quiet re-send has none, so a call has few.
    judged = state.judged_requests(calls)

    candidates: dict[CallKey, set[str]] = {}
    for call in calls:
        requests = set(plan.journeys.get(call, ()))
        requests |= {r for r in judged.get(call, ()) if r is not None}
        if call in plan.whole:  # and the request that should follow
            requests |= following[call]
        candidates[call] = requests
    journeys = {(t, c, r) for (t, c), rs in candidates.items() for r in rs}
    stages = state.request_stages(journeys)
    # The requests that follow each call too: whether they should carry its result tells
    # whether its other requests' re-sends are quiet (:mod:`.resends`).
    followers = {(c[0], r) for c, rs in following.items() for r in rs}
    manifests = state.manifests({(t, r) for t, _, r in journeys} | followers)

    evidences: dict[CallKey, CallEvidence] = {}
    for call in sorted(calls):
        trace_id, call_id = call
        requests = candidates[call]
        evidences[call] = CallEvidence(
            call_id=call_id,
            before=before.get(call, ()),
            in_request={
                r: stages[(trace_id, call_id, r)]
                for r in requests
                if (trace_id, call_id, r) in stages
            },
            manifests={
                r: manifests[(trace_id, r)]
                for r in requests | following[call]
                if (trace_id, r) in manifests
            },
            following=following[call],
        )
    # Only a call judged whole without any journey in a request may wait on an unseen one.
    waiting = {
        call
        for call, evidence in evidences.items()
        if call in plan.whole
        and waits_for_unseen(evidence.before)
        and not evidence.journey_requests(candidates[call])
    }
    blind = state.unseen_requests({t for t, _ in waiting}) if waiting else {}
    judgments: list[CallJudgment] = []
    for call, evidence in evidences.items():
        trace_id = call[0]
        if call in waiting and trace_id in blind:
            evidence = dataclasses.replace(evidence, unseen=blind[trace_id])
        judgments.append(
            judge_call(
                trace_id,
                evidence,
                candidates[call],
                complete=call in plan.whole,
                tolerances=tolerances,
                now=now,
                origin=origins[call],
            )
        )
    return judgments
