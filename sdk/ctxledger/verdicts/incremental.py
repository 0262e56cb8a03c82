"""Judge only what a batch can change. Pure; stdlib only.

A store that already holds a trace's measurements, manifests and reports, and has just
stored a batch, re-judges the journeys the batch can change instead of the whole trace,
so the cost of a batch follows the batch, not the length of the run. What it reads is
asked through :class:`TraceState`, one batched question per kind; the collector answers
from its database, :class:`~ctxledger.verdicts.memory_state.MemoryTraceState` from memory.

Which journeys a batch can change, by the rules of :mod:`~ctxledger.verdicts.journeys`:

* a stage measured in request R: the journey (call, R);
* a stage measured before any request: every journey of its call (its stages lead every
  one of them, and its step decides which request follows the call);
* a manifest of request R: the journey (call, R) of every call it lists and of every call
  already judged in R; and, when R's step is s, the calls issued at a step in
  [the step of the last manifest below s, s): R may now be the request that follows them;
* a manifest that replaced a different stored copy: everything the old copy bore on.

Reports already stored stand for what earlier batches decided: a call has a report in
every request it has a journey in, so they tell which journeys exist without reading
the manifests that list old results. The result equals :func:`judge_trace` over the
whole set; a property test holds the two together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ctxledger.verdicts.journeys import CallEvidence, CallJudgment, call_step, judge_call
from ctxledger.verdicts.model import Manifest, Measurement, Tolerances

#: (trace id, tool call id)
CallKey = tuple[str, str]
#: (trace id, request id)
RequestKey = tuple[str, str]
#: (trace id, tool call id, request id)
JourneyKey = tuple[str, str, str]
#: (trace id, step)
StepKey = tuple[str, int]


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

    def requests_after(self, steps: Collection[StepKey]) -> Mapping[StepKey, frozenset[str]]:
        """Per (trace, step): the requests of the first manifest step above it."""
        ...

    def step_below(self, steps: Collection[StepKey]) -> Mapping[StepKey, int | None]:
        """Per (trace, step): the greatest manifest step below it, None if there is none."""
        ...

    def calls_issued(self, ranges: Collection[tuple[str, int | None, int]]) -> set[CallKey]:
        """Calls whose call step (:func:`call_step`) lies in [low, high) of their trace's
        range; a low of None has no lower bound."""
        ...

    def judged_requests(self, calls: Collection[CallKey]) -> Mapping[CallKey, set[str | None]]:
        """The request ids of each call's stored reports (None: its journey without one)."""
        ...

    def judged_calls(self, requests: Collection[RequestKey]) -> Mapping[RequestKey, set[str]]:
        """The calls with a stored report in each request."""
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


def _bore_on(old: Manifest, new: Manifest) -> bool:
    """Whether a stored manifest was replaced by a copy that says something else."""
    said = (old.step, old.tool_call_ids, old.tool_calls)
    return said != (new.step, new.tool_call_ids, new.tool_calls)


def plan_rejudging(
    measurements: Iterable[Measurement],
    manifests: Iterable[Manifest],
    state: TraceState,
    replaced: Mapping[RequestKey, Manifest] | None = None,
) -> RejudgePlan:
    """The journeys a stored batch can change. ``replaced`` holds the manifests the
    store held for the batch's requests before the batch (read before storing it)."""
    plan = RejudgePlan()
    for m in measurements:
        if m.request_id is None:
            plan.whole.add((m.trace_id, m.tool_call_id))
        else:
            plan.add_journey(m.trace_id, m.tool_call_id, m.request_id)

    batch_manifests = list(manifests)
    requests = {(man.trace_id, man.request_id) for man in batch_manifests}
    judged_in = state.judged_calls(requests) if requests else {}
    steps: set[StepKey] = set()
    for man in batch_manifests:
        key = (man.trace_id, man.request_id)
        for call_id in (*man.tool_call_ids, *(man.tool_calls or ()), *judged_in.get(key, ())):
            plan.add_journey(man.trace_id, call_id, man.request_id)
        if man.step is not None:
            steps.add((man.trace_id, man.step))
        old = (replaced or {}).get(key)
        if old is not None and _bore_on(old, man):
            plan.whole.update((man.trace_id, c) for c in judged_in.get(key, ()))
            plan.whole.update((man.trace_id, c) for c in old.tool_call_ids)
            plan.whole.update((man.trace_id, c) for c in old.tool_calls or ())
            if old.step is not None:
                steps.add((man.trace_id, old.step))
    if steps:
        below = state.step_below(steps)
        plan.whole |= state.calls_issued([(t, below.get((t, s)), s) for t, s in steps])
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
    steps = {c: call_step(before.get(c, ())) for c in calls}
    after = state.requests_after({(c[0], s) for c, s in steps.items() if s is not None})
    following = {
        c: after.get((c[0], s), frozenset()) if s is not None else frozenset()
        for c, s in steps.items()
    }
    judged = state.judged_requests(plan.whole) if plan.whole else {}

    candidates: dict[CallKey, set[str]] = {}
    for call in calls:
        requests = set(plan.journeys.get(call, ()))
        if call in plan.whole:  # its stored journeys, and the request that should follow
            requests |= {r for r in judged.get(call, ()) if r is not None} | following[call]
        candidates[call] = requests
    journeys = {(t, c, r) for (t, c), rs in candidates.items() for r in rs}
    stages = state.request_stages(journeys)
    manifests = state.manifests({(t, r) for t, _, r in journeys})

    judgments: list[CallJudgment] = []
    for call in sorted(calls):
        trace_id, call_id = call
        requests = candidates[call]
        evidence = CallEvidence(
            call_id=call_id,
            before=before.get(call, ()),
            in_request={
                r: stages[(trace_id, call_id, r)]
                for r in requests
                if (trace_id, call_id, r) in stages
            },
            manifests={r: manifests[(trace_id, r)] for r in requests if (trace_id, r) in manifests},
            following=following[call],
        )
        judgments.append(
            judge_call(
                trace_id,
                evidence,
                requests,
                complete=call in plan.whole,
                tolerances=tolerances,
                now=now,
            )
        )
    return judgments
