"""A :class:`~ctxledger.verdicts.incremental.TraceState` held in memory: measurements,
manifests and reports of any number of traces, judged incrementally batch by batch.
Pure; stdlib only. The property tests compare it with :func:`judge_trace`; the SDK's
local ledger can use it for long runs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

from ctxledger import semconv
from ctxledger.verdicts.call_origins import Origin, call_origin, issuer_origin
from ctxledger.verdicts.compaction import compaction_stages
from ctxledger.verdicts.duplicates import preferred_copy_key
from ctxledger.verdicts.evidence_gaps import first_unseen
from ctxledger.verdicts.incremental import (
    CallKey,
    JourneyKey,
    PositionKey,
    PositionRange,
    RequestKey,
    plan_rejudging,
    plan_sweep,
    rejudge,
)
from ctxledger.verdicts.journeys import CallJudgment
from ctxledger.verdicts.model import Manifest, Measurement, Report, Tolerances

_StageKey = tuple[str, str, str | None, str]
_ReportKey = tuple[str, str, str | None]


class MemoryTraceState:
    """Traces in memory; :meth:`ingest` stores a batch and re-judges what it changed."""

    def __init__(self, tolerances: Tolerances | None = None) -> None:
        self.tolerances = tolerances or Tolerances()
        self._stages: dict[_StageKey, Measurement] = {}
        self._calls: dict[CallKey, set[_StageKey]] = defaultdict(set)
        self._manifests: dict[RequestKey, Manifest] = {}
        self._by_trace: dict[str, set[str]] = defaultdict(set)
        self.reports: dict[_ReportKey, Report] = {}

    # --- storing ------------------------------------------------------------------------

    def _keep(self, m: Measurement) -> None:
        key = (m.trace_id, m.tool_call_id, m.request_id, m.stage)
        held = self._stages.get(key)
        if held is None or preferred_copy_key(m) > preferred_copy_key(held):
            self._stages[key] = m
            self._calls[(m.trace_id, m.tool_call_id)].add(key)

    def _keep_manifest(self, man: Manifest) -> None:
        key = (man.trace_id, man.request_id)
        held = self._manifests.get(key)
        if held is None or preferred_copy_key(man) > preferred_copy_key(held):
            self._manifests[key] = man
            self._by_trace[man.trace_id].add(man.request_id)

    def apply(self, judgments: Iterable[CallJudgment]) -> list[Report]:
        """Replace the stored reports each judgment considered; the reports written."""
        written: list[Report] = []
        for judgment in judgments:
            for request_id in judgment.considered:
                self.reports.pop((judgment.trace_id, judgment.call_id, request_id), None)
            for report in judgment.reports:
                self.reports[report.key] = report
                written.append(report)
        return written

    def ingest(
        self,
        measurements: Sequence[Measurement] = (),
        manifests: Sequence[Manifest] = (),
        now: float | None = None,
    ) -> list[Report]:
        """Store a batch and re-judge the journeys it can change; the reports written."""
        replaced = {
            (m.trace_id, m.request_id): self._manifests[(m.trace_id, m.request_id)]
            for m in manifests
            if (m.trace_id, m.request_id) in self._manifests
        }
        for m in measurements:
            self._keep(m)
        for man in manifests:
            self._keep_manifest(man)
        written, deleted = self._recompact({man.trace_id for man in manifests})
        plan = plan_rejudging([*measurements, *written], manifests, self, replaced)
        for trace_id, call_id, request_id in deleted:
            plan.add_journey(trace_id, call_id, request_id)
        return self.apply(rejudge(plan, self, tolerances=self.tolerances, now=now))

    def _recompact(self, traces: set[str]) -> tuple[list[Measurement], list[JourneyKey]]:
        """Bring the traces' ``compacted`` stages in line with their manifests: the stages
        written, and the journeys whose stage was deleted."""
        wanted = {
            (m.trace_id, m.tool_call_id, m.request_id, m.stage): m
            for t in traces
            for m in compaction_stages(self._trace_manifests(t))
        }
        held = [k for k in self._stages if k[0] in traces and k[3] == semconv.STAGE_COMPACTED]
        deleted: list[JourneyKey] = []
        for key in held:
            if key not in wanted and key[2] is not None:
                del self._stages[key]
                self._calls[(key[0], key[1])].discard(key)
                deleted.append((key[0], key[1], key[2]))
        written = [m for key, m in wanted.items() if self._stages.get(key) != m]
        for m in written:
            key = (m.trace_id, m.tool_call_id, m.request_id, m.stage)
            self._stages[key] = m
            self._calls[(m.trace_id, m.tool_call_id)].add(key)
        return written, deleted

    def sweep(self, now: float) -> list[Report]:
        """Re-judge the journeys still waiting for later stages; the reports written."""
        plan = plan_sweep(key for key, report in self.reports.items() if not report.settled)
        return self.apply(rejudge(plan, self, tolerances=self.tolerances, now=now))

    # --- TraceState ----------------------------------------------------------------------

    def before_stages(self, calls: Collection[CallKey]) -> Mapping[CallKey, Sequence[Measurement]]:
        return {
            call: [self._stages[k] for k in self._calls.get(call, ()) if k[2] is None]
            for call in calls
        }

    def request_stages(
        self, journeys: Collection[JourneyKey]
    ) -> Mapping[JourneyKey, Sequence[Measurement]]:
        found: dict[JourneyKey, list[Measurement]] = {}
        for trace_id, call_id, request_id in journeys:
            stages = [
                self._stages[k]
                for k in self._calls.get((trace_id, call_id), ())
                if k[2] == request_id
            ]
            if stages:
                found[(trace_id, call_id, request_id)] = stages
        return found

    def manifests(self, requests: Collection[RequestKey]) -> Mapping[RequestKey, Manifest]:
        return {key: self._manifests[key] for key in requests if key in self._manifests}

    def _trace_manifests(self, trace_id: str) -> list[Manifest]:
        return [self._manifests[(trace_id, r)] for r in self._by_trace.get(trace_id, ())]

    def _positions(self, trace_id: str, conversation: str) -> list[tuple[int, str]]:
        return [
            (m.position, m.request_id)
            for m in self._trace_manifests(trace_id)
            if m.position is not None and m.conversation_key == conversation
        ]

    def issuers(self, calls: Collection[CallKey]) -> Mapping[CallKey, Sequence[Origin]]:
        found: dict[CallKey, list[Origin]] = defaultdict(list)
        for trace_id, call_id in calls:
            for man in self._trace_manifests(trace_id):
                origin = issuer_origin(man)
                if origin is not None and call_id in (man.issued_calls or ()):
                    found[(trace_id, call_id)].append(origin)
        return found

    def requests_after(
        self, positions: Collection[PositionKey]
    ) -> Mapping[PositionKey, frozenset[str]]:
        found: dict[PositionKey, frozenset[str]] = {}
        for trace_id, conversation, position in positions:
            later = [(p, r) for p, r in self._positions(trace_id, conversation) if p > position]
            first = min((p for p, _ in later), default=None)
            found[(trace_id, conversation, position)] = frozenset(r for p, r in later if p == first)
        return found

    def position_below(
        self, positions: Collection[PositionKey]
    ) -> Mapping[PositionKey, int | None]:
        return {
            (trace_id, conversation, position): max(
                (p for p, _ in self._positions(trace_id, conversation) if p < position),
                default=None,
            )
            for trace_id, conversation, position in positions
        }

    def calls_issued(self, ranges: Collection[PositionRange]) -> set[CallKey]:
        found: set[CallKey] = set()
        for trace_id, conversation, low, high in ranges:
            known = {c for c in self._calls if c[0] == trace_id} | {
                (trace_id, c)
                for man in self._trace_manifests(trace_id)
                for c in man.issued_calls or ()
            }
            for call in known:
                origin = call_origin(self.before_stages([call])[call], self.issuers([call])[call])
                if origin is None or origin[0] != conversation:
                    continue
                if (low is None or origin[1] >= low) and origin[1] < high:
                    found.add(call)
        return found

    def judged_requests(self, calls: Collection[CallKey]) -> Mapping[CallKey, set[str | None]]:
        wanted = set(calls)
        found: dict[CallKey, set[str | None]] = defaultdict(set)
        for trace_id, call_id, request_id in self.reports:
            if (trace_id, call_id) in wanted:
                found[(trace_id, call_id)].add(request_id)
        return found

    def judged_calls(self, requests: Collection[RequestKey]) -> Mapping[RequestKey, set[str]]:
        wanted = set(requests)
        found: dict[RequestKey, set[str]] = defaultdict(set)
        for trace_id, call_id, request_id in self.reports:
            if request_id is not None and (trace_id, request_id) in wanted:
                found[(trace_id, request_id)].add(call_id)
        return found

    def calls_without_request(self, traces: Collection[str]) -> set[CallKey]:
        wanted = set(traces)
        return {(t, c) for t, c, r in self.reports if r is None and t in wanted}

    def unseen_requests(self, traces: Collection[str]) -> Mapping[str, Manifest]:
        found = {t: first_unseen(self._trace_manifests(t)) for t in traces}
        return {t: m for t, m in found.items() if m is not None}
