"""The rules: which journeys a trace holds and what each one lost. Pure; stdlib only.

A *journey* is one tool result (trace, tool call) within one LLM request. Stages
measured before any request (``original``, ``serialized``) belong to every request
the result later travels in. The verdict depends only on the set of measurements and
manifests, never on their arrival order or on duplicates.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable

from ctxledger import semconv
from ctxledger.verdicts.duplicates import preferred_copy
from ctxledger.verdicts.model import (
    Manifest,
    Measurement,
    Report,
    Tolerances,
    Transition,
)
from ctxledger.verdicts.vocabulary import VERDICT_SEVERITY

_STAGE_KEY = tuple[str, str, str | None, str]


def worst(verdicts: Iterable[str]) -> str:
    """The most severe verdict, ``intact`` for none."""
    return max(verdicts, key=VERDICT_SEVERITY.__getitem__, default=semconv.VERDICT_INTACT)


def _dedupe_measurements(measurements: Iterable[Measurement]) -> list[Measurement]:
    groups: dict[_STAGE_KEY, list[Measurement]] = defaultdict(list)
    for m in measurements:
        groups[(m.trace_id, m.tool_call_id, m.request_id, m.stage)].append(m)
    return [preferred_copy(group) for group in groups.values()]


def _dedupe_manifests(manifests: Iterable[Manifest]) -> dict[str, Manifest]:
    groups: dict[str, list[Manifest]] = defaultdict(list)
    for manifest in manifests:
        groups[manifest.request_id].append(manifest)
    return {request_id: preferred_copy(group) for request_id, group in groups.items()}


def _size_fell(before: int | None, after: int | None, ratio: float, floor: int) -> int:
    """The amount lost when the fall exceeds the tolerance, else 0."""
    if before is None or after is None:
        return 0
    fall = before - after
    return fall if fall > max(floor, ratio * before) else 0


def compare(prev: Measurement, cur: Measurement, tolerances: Tolerances) -> Transition:
    """What ``cur`` lost relative to ``prev``: the rules for one stage transition."""
    same_content = (prev.canonical_sha256 and prev.canonical_sha256 == cur.canonical_sha256) or (
        prev.sha256 and prev.sha256 == cur.sha256
    )
    if same_content:
        return Transition(prev.stage, cur.stage, semconv.VERDICT_INTACT)

    reasons: list[str] = []
    lost_items = 0
    if prev.items is not None and cur.items is not None and cur.items < prev.items:
        lost_items = prev.items - cur.items
        reasons.append(f"items {prev.items} -> {cur.items}")

    lost_ids: tuple[str, ...] = ()
    if prev.item_ids is not None and cur.item_ids is not None and cur.ids_complete and cur.trusted:
        present = set(cur.item_ids)
        lost_ids = tuple(i for i in prev.item_ids if i not in present)
        if lost_ids:
            reasons.append(f"{len(lost_ids)} item ids missing")

    lost_fields: tuple[str, ...] = ()
    fields_comparable = cur.fields is not None and cur.fields_complete and cur.trusted
    if prev.fields and fields_comparable and cur.fields is not None and (cur.items or 0) > 0:
        present_fields = set(cur.fields)
        lost_fields = tuple(f for f in prev.fields if f not in present_fields)
        if lost_fields:
            reasons.append("fields dropped from every item: " + ", ".join(lost_fields))

    if prev.canonical_chars is not None and cur.canonical_chars is not None:
        # Canonical sizes are free of escaping and whitespace; raw sizes are not.
        lost_chars = _size_fell(
            prev.canonical_chars,
            cur.canonical_chars,
            tolerances.chars_ratio,
            tolerances.chars_floor,
        )
        lost_tokens = 0
    else:
        lost_chars = _size_fell(
            prev.chars, cur.chars, tolerances.chars_ratio, tolerances.chars_floor
        )
        same_tokenizer = prev.tokenizer == cur.tokenizer
        lost_tokens = (
            _size_fell(prev.tokens, cur.tokens, tolerances.tokens_ratio, tolerances.tokens_floor)
            if same_tokenizer
            else 0
        )
    if prev.json_valid and cur.json_valid is False:
        reasons.append("the JSON no longer parses")
    if lost_chars:
        reasons.append(f"chars fell by {lost_chars}")
    if lost_tokens:
        reasons.append(f"tokens fell by {lost_tokens}")

    lost_priority = 0
    if prev.priority_items is not None and cur.priority_items is not None:
        lost_priority = max(0, prev.priority_items - cur.priority_items)
        if lost_priority:
            reasons.append(f"{lost_priority} must-keep items lost")

    if not reasons:
        return Transition(prev.stage, cur.stage, semconv.VERDICT_INTACT)
    if lost_chars or lost_items or lost_ids:
        # Report the size of what went, even when it alone did not cross the line.
        canonical = prev.canonical_chars is not None and cur.canonical_chars is not None
        before, after = (prev.canonical_chars, cur.canonical_chars) if canonical else (None, None)
        lost_chars = max(lost_chars, (before or prev.chars) - (after or cur.chars), 0)
        if prev.tokens is not None and cur.tokens is not None and prev.tokenizer == cur.tokenizer:
            lost_tokens = max(lost_tokens, prev.tokens - cur.tokens, 0)
    return Transition(
        from_stage=prev.stage,
        to_stage=cur.stage,
        verdict=_loss_verdict(cur),
        lost_items=max(lost_items, len(lost_ids)),
        lost_item_ids=lost_ids,
        lost_fields=lost_fields,
        lost_chars=lost_chars,
        lost_tokens=lost_tokens,
        lost_priority_items=lost_priority,
        reasons=tuple(reasons),
    )


def _loss_verdict(stage: Measurement) -> str:
    if stage.sees_marker:
        return semconv.VERDICT_DECLARED
    if stage.declared:
        return semconv.VERDICT_UNMARKED
    return semconv.VERDICT_SILENT


def _removed(stage: Measurement) -> bool:
    """A stage that declares it removed the whole result (nothing left of it)."""
    return stage.declared and (stage.items == 0 or stage.chars == 0)


def _following_steps(call_step: int | None, manifests: dict[str, Manifest]) -> set[str]:
    """Requests of the first step after the one whose response issued the call."""
    if call_step is None:
        return set()
    later = [m.step for m in manifests.values() if m.step is not None and m.step > call_step]
    if not later:
        return set()
    first = min(later)
    return {m.request_id for m in manifests.values() if m.step == first}


def judge_trace(
    measurements: Iterable[Measurement],
    manifests: Iterable[Manifest] = (),
    *,
    tolerances: Tolerances | None = None,
    now: float | None = None,
    tool_call_ids: Iterable[str] | None = None,
) -> list[Report]:
    """Judge every journey of one trace (or only those of ``tool_call_ids``).

    ``now`` (unix seconds) enables the ``incomplete`` verdict: a journey whose later
    stages have not arrived ``tolerances.incomplete_after_s`` after its last stage is
    incomplete; before that it is reported with ``settled=False``.
    """
    tol = tolerances or Tolerances()
    stages = _dedupe_measurements(measurements)
    by_request = _dedupe_manifests(manifests)
    wanted = set(tool_call_ids) if tool_call_ids is not None else None

    calls: dict[str, list[Measurement]] = defaultdict(list)
    for m in stages:
        calls[m.tool_call_id].append(m)
    for manifest in by_request.values():
        for call_id in (*manifest.tool_call_ids, *(manifest.tool_calls or ())):
            calls.setdefault(call_id, [])

    reports: list[Report] = []
    for call_id in sorted(calls):
        if wanted is not None and call_id not in wanted:
            continue
        reports.extend(_judge_call(call_id, calls[call_id], by_request, tol, now))
    return reports


def _judge_call(
    call_id: str,
    stages: list[Measurement],
    manifests: dict[str, Manifest],
    tol: Tolerances,
    now: float | None,
) -> list[Report]:
    before_request = [m for m in stages if m.request_id is None]
    in_request: dict[str, list[Measurement]] = defaultdict(list)
    for m in stages:
        if m.request_id is not None:
            in_request[m.request_id].append(m)

    call_step = min((m.step for m in before_request if m.step is not None), default=None)
    following = _following_steps(call_step, manifests)
    mentioned = {
        rid
        for rid, man in manifests.items()
        if call_id in man.tool_call_ids or call_id in (man.tool_calls or ())
    }
    request_ids: list[str | None] = [*sorted(set(in_request) | mentioned | following)]
    if not request_ids:
        request_ids = [None]
    return [
        _judge_journey(
            call_id,
            request_id,
            sorted(
                before_request + in_request.get(request_id or "", []),
                key=lambda m: (m.order, m.stage),
            ),
            manifests.get(request_id) if request_id else None,
            request_id in following,
            tol,
            now,
        )
        for request_id in request_ids
    ]


def _judge_journey(
    call_id: str,
    request_id: str | None,
    stages: list[Measurement],
    manifest: Manifest | None,
    follows_call: bool,
    tol: Tolerances,
    now: float | None,
) -> Report:
    transitions = [compare(a, b, tol) for a, b in itertools.pairwise(stages)]
    findings = [t.verdict for t in transitions]
    notes: list[str] = []
    settled = True
    extra_lost_items = extra_lost_chars = extra_lost_tokens = 0
    last = stages[-1] if stages else None

    for m in stages:
        if not m.trusted:
            notes.append(
                f"stage {m.stage} lost {m.dropped_attributes} attributes in transit; "
                "its item ids were not trusted"
            )
        if m.tokens_estimated:
            notes.append(f"stage {m.stage}: tokens estimated from a prefix (very large text)")

    if manifest is not None:
        has_result = call_id in manifest.tool_call_ids
        has_call = manifest.tool_calls is not None and call_id in manifest.tool_calls
        if has_call and not has_result:
            findings.append(semconv.VERDICT_ORPHANED)
            notes.append(
                f"request {manifest.request_id} carries tool call {call_id} without its result"
            )
        elif has_result and manifest.tool_calls is not None and not has_call:
            findings.append(semconv.VERDICT_ORPHANED)
            notes.append(
                f"request {manifest.request_id} carries the result of {call_id} without its call"
            )
        elif not has_result and (follows_call or any(m.request_id == request_id for m in stages)):
            # Only a stage that declared removing the whole result excuses its absence.
            removal = next((m for m in stages if m.request_id == request_id and _removed(m)), None)
            findings.append(
                _loss_verdict(removal) if removal is not None else semconv.VERDICT_DROPPED
            )
            notes.append(f"the result is missing from request {manifest.request_id}")
            if last is not None:
                extra_lost_items, extra_lost_chars = last.items or 0, last.chars
                extra_lost_tokens = last.tokens or 0

    reached_model = any(m.order >= semconv.BUILTIN_STAGE_ORDER[semconv.STAGE_SENT] for m in stages)
    if manifest is not None and call_id in manifest.tool_call_ids:
        reached_model = True
    if not reached_model and manifest is None and stages:
        waited = None if now is None else now - max(m.observed_at for m in stages)
        if waited is not None and waited >= tol.incomplete_after_s:
            findings.append(semconv.VERDICT_INCOMPLETE)
            notes.append("later stages never arrived within the grace period")
        else:
            settled = False

    lost_ids: list[str] = []
    for t in transitions:
        lost_ids.extend(i for i in t.lost_item_ids if i not in lost_ids)
    named = next((m for m in stages if m.tool_name), None)
    agent = next((m for m in stages if m.agent_name), None)
    step = next((m.step for m in reversed(stages) if m.step is not None), None)
    if manifest is not None and manifest.step is not None:
        step = manifest.step
    return Report(
        trace_id=(stages[0].trace_id if stages else manifest.trace_id if manifest else ""),
        tool_call_id=call_id,
        request_id=request_id,
        verdict=worst(findings),
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
    )
