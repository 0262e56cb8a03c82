"""One tool call's journeys, judged from explicit evidence. Pure; stdlib only.

A *journey* is one tool result (trace, tool call) within one LLM request. Stages
measured before any request (``original``, ``serialized``) belong to every request the
result later travels in. A call has a journey in request R when it was measured in R,
when R's manifest lists its result or its call, or when R is the request that *follows*
the call (the result should be there). A call with none of these has one journey without
a request.

Which requests follow a call, and where it was issued, is worked out in
:mod:`~ctxledger.verdicts.call_origins`; which requests the call has a journey in, in
:mod:`~ctxledger.verdicts.call_evidence`; this module judges the journeys from that.

A request whose input the telemetry did not show at all (content capture off, content
hidden or stored elsewhere: :func:`~ctxledger.verdicts.evidence_gaps.unseen`) may carry
any call's result: a derived call with no journey in a request is then ``unauditable`` at
once, not waited for.

:func:`judge_call` is what both :func:`~ctxledger.verdicts.judge_trace` (everything at
once) and :mod:`~ctxledger.verdicts.incremental` (only what a batch can change) call, so
the two agree by construction.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ctxledger import semconv
from ctxledger.verdicts.call_evidence import CallEvidence
from ctxledger.verdicts.call_origins import Origin
from ctxledger.verdicts.compaction import missing_note
from ctxledger.verdicts.evidence_gaps import tokens_not_comparable, waits_for_unseen
from ctxledger.verdicts.model import Manifest, Measurement, Report, Tolerances, Transition
from ctxledger.verdicts.transitions import compare, loss_verdict, told_after_cut
from ctxledger.verdicts.vocabulary import (
    LAYER_REQUEST,
    LAYER_TELEMETRY,
    VERDICT_SEVERITY,
    loss_layer,
)


def worst(verdicts: Iterable[str]) -> str:
    """The most severe verdict, ``intact`` for none."""
    return max(verdicts, key=VERDICT_SEVERITY.__getitem__, default=semconv.VERDICT_INTACT)


@dataclass(frozen=True)
class CallJudgment:
    """The reports of one call's judged journeys. ``considered`` are the request keys
    (``None``: the journey without a request) whose stored reports these replace: a
    stored report under a considered key that is not among ``reports`` no longer exists.
    """

    trace_id: str
    call_id: str
    reports: tuple[Report, ...]
    considered: frozenset[str | None]
    origin: Origin | None = None


def judge_call(
    trace_id: str,
    evidence: CallEvidence,
    candidates: Collection[str],
    *,
    complete: bool,
    tolerances: Tolerances,
    now: float | None,
    origin: Origin | None = None,
) -> CallJudgment:
    """Judge the call's journeys in ``candidates`` (request ids) that exist.

    ``complete`` says the candidates hold every request the call can have a journey in;
    only then is the journey without a request judged, when the call has no journey in
    a request but has stages of its own.
    """
    requests = evidence.journey_requests(candidates)
    considered: set[str | None] = set(candidates)
    keys: list[str | None] = list(requests)
    if requests or complete:
        considered.add(None)
    if complete and not requests and evidence.before:
        keys = [None]
    reports = tuple(
        _judge_journey(
            trace_id,
            evidence.call_id,
            request_id,
            sorted(
                [
                    *evidence.before,
                    *(evidence.in_request.get(request_id, ()) if request_id else ()),
                ],
                key=lambda m: (m.order, m.stage),
            ),
            evidence.manifests.get(request_id) if request_id else None,
            evidence.expects(request_id) if request_id else False,
            tolerances,
            now,
            evidence.unseen if request_id is None and waits_for_unseen(evidence.before) else None,
        )
        for request_id in keys
    )
    return CallJudgment(trace_id, evidence.call_id, reports, frozenset(considered), origin)


def _removed(stage: Measurement) -> bool:
    """A stage that declares it removed the whole result (nothing left of it)."""
    return stage.declared and (stage.items == 0 or stage.chars == 0)


def _judge_journey(
    trace_id: str,
    call_id: str,
    request_id: str | None,
    stages: list[Measurement],
    manifest: Manifest | None,
    follows_call: bool,
    tol: Tolerances,
    now: float | None,
    unseen_request: Manifest | None = None,
) -> Report:
    transitions = [compare(a, b, tol) for a, b in itertools.pairwise(stages)]
    # (verdict, layer) of each finding; the worst gives the report its verdict and layer.
    findings: list[tuple[str, str | None]] = [
        (t.verdict, _transition_layer(t)) for t in transitions
    ]
    notes: list[str] = []
    settled = True
    extra_lost_items = extra_lost_chars = extra_lost_tokens = 0
    last = stages[-1] if stages else None

    for index, m in enumerate(stages):
        following = stages[index + 1] if index + 1 < len(stages) else None
        if not m.trusted:
            notes.append(
                f"stage {m.stage} lost {m.dropped_attributes} attributes in transit; "
                "its item ids were not trusted"
            )
        if m.tokens_estimated:
            notes.append(f"stage {m.stage}: tokens estimated from a prefix (very large text)")
        if following is not None and told_after_cut(m, following):
            notes.append(f"stage {m.stage} was cut by the telemetry: {m.telemetry_cut}")
        elif m.telemetry_cut:
            findings.append((semconv.VERDICT_UNAUDITABLE, LAYER_TELEMETRY))
            notes.append(f"stage {m.stage} is not auditable: {m.telemetry_cut}")
        if m.note:
            notes.append(f"stage {m.stage}: {m.note}")
        if m.inferred:
            notes.append(
                f"stage {m.stage}: the tool span carried no call id; it was matched to "
                f"{call_id} by tool name, arguments and order within the trace (inferred)"
            )

    if unseen_request is not None:
        findings.append((semconv.VERDICT_UNAUDITABLE, LAYER_TELEMETRY))
        notes.append(
            f"request {unseen_request.request_id} is not auditable, and may have carried this "
            f"result: {unseen_request.telemetry_cut}"
        )
    if manifest is not None and manifest.telemetry_cut and call_id not in manifest.results:
        # A request the telemetry showed only in part still proves the results it shows.
        findings.append((semconv.VERDICT_UNAUDITABLE, LAYER_TELEMETRY))
        notes.append(f"request {manifest.request_id} is not auditable: {manifest.telemetry_cut}")
    elif manifest is not None:
        has_result = call_id in manifest.results
        has_call = manifest.calls is not None and call_id in manifest.calls
        if has_call and not has_result:
            findings.append((semconv.VERDICT_ORPHANED, LAYER_REQUEST))
            notes.append(
                f"request {manifest.request_id} carries tool call {call_id} without its result"
            )
            if last is not None:  # the result vanished: all of it is lost, as when dropped
                extra_lost_items, extra_lost_chars = last.items or 0, last.chars
                extra_lost_tokens = last.tokens or 0
        elif has_result and manifest.tool_calls is not None and not has_call:
            findings.append((semconv.VERDICT_ORPHANED, LAYER_REQUEST))
            notes.append(
                f"request {manifest.request_id} carries the result of {call_id} without its call"
            )
        elif not has_result and (follows_call or any(m.request_id == request_id for m in stages)):
            # Only a stage that declared removing the whole result excuses its absence.
            removal = next((m for m in stages if m.request_id == request_id and _removed(m)), None)
            findings.append(
                (
                    loss_verdict(removal) if removal is not None else semconv.VERDICT_DROPPED,
                    LAYER_REQUEST,
                )
            )
            notes.append(missing_note(manifest, removal))
            if last is not None:
                extra_lost_items, extra_lost_chars = last.items or 0, last.chars
                extra_lost_tokens = last.tokens or 0

    reached_model = any(m.order >= semconv.BUILTIN_STAGE_ORDER[semconv.STAGE_SENT] for m in stages)
    if manifest is not None and call_id in manifest.results:
        reached_model = True
    # A hidden tool run (its call unknown) has no later stages to wait for.
    hidden_run = call_id.startswith(semconv.HIDDEN_TOOL_RUN_PREFIX)
    if (
        not reached_model
        and manifest is None
        and stages
        and unseen_request is None
        and not hidden_run
    ):
        waited = None if now is None else now - max(m.observed_at for m in stages)
        if waited is not None and waited >= tol.incomplete_after_s:
            findings.append((semconv.VERDICT_INCOMPLETE, None))
            notes.append("later stages never arrived within the grace period")
        else:
            settled = False

    unknown = tokens_not_comparable(stages, transitions)
    if unknown is not None:
        notes.append(f"lost tokens unknown: {unknown}")

    lost_ids: list[str] = []
    for t in transitions:
        lost_ids.extend(i for i in t.lost_item_ids if i not in lost_ids)
    named = next((m for m in stages if m.tool_name), None)
    agent = next((m for m in stages if m.agent_name), None)
    step = next((m.step for m in reversed(stages) if m.step is not None), None)
    if manifest is not None and manifest.step is not None:
        step = manifest.step
    verdict, layer = max(
        findings,
        key=lambda f: VERDICT_SEVERITY[f[0]],
        default=(semconv.VERDICT_INTACT, None),
    )
    sources = {m.source for m in stages} | ({manifest.source} if manifest is not None else set())
    return Report(
        trace_id=trace_id,
        tool_call_id=call_id,
        request_id=request_id,
        verdict=verdict,
        tool_name=named.tool_name if named else None,
        agent_name=agent.agent_name if agent else (manifest.agent_name if manifest else None),
        step=step,
        stages=tuple(stages),
        transitions=tuple(transitions),
        lost_items=sum(t.lost_items for t in transitions) + extra_lost_items,
        lost_item_ids=tuple(lost_ids),
        lost_fields=tuple(sorted({f for t in transitions for f in t.lost_fields})),
        lost_chars=sum(t.lost_chars for t in transitions) + extra_lost_chars,
        lost_tokens=sum(t.lost_tokens for t in transitions) + extra_lost_tokens,
        lost_priority_items=sum(t.lost_priority_items for t in transitions),
        settled=settled,
        notes=tuple(notes),
        source="+".join(sorted(sources)) or semconv.SOURCE_CTXLEDGER,
        layer=layer if verdict != semconv.VERDICT_INTACT else None,
        lost_tokens_unknown=unknown,
    )


def _transition_layer(transition: Transition) -> str | None:
    if transition.verdict == semconv.VERDICT_INTACT:
        return None
    if transition.verdict == semconv.VERDICT_UNAUDITABLE:
        return LAYER_TELEMETRY
    return loss_layer(transition.from_stage, transition.to_stage)
