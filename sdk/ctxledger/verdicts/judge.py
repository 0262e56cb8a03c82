"""The rules over a whole trace: every journey it holds and what each one lost. Pure;
stdlib only.

The verdict depends only on the set of measurements and manifests, never on their
arrival order or on duplicates: copies of one key are reduced to the preferred one
(:mod:`~ctxledger.verdicts.duplicates`) before anything is judged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ctxledger.verdicts.call_evidence import CallEvidence
from ctxledger.verdicts.call_origins import (
    Origin,
    call_origin,
    issuer_origin,
    requests_following,
)
from ctxledger.verdicts.compaction import compaction_stages
from ctxledger.verdicts.duplicates import preferred_copy
from ctxledger.verdicts.evidence_gaps import first_unseen
from ctxledger.verdicts.journeys import judge_call
from ctxledger.verdicts.model import Manifest, Measurement, Report, Tolerances

_STAGE_KEY = tuple[str, str, str | None, str]


def dedupe_measurements(measurements: Iterable[Measurement]) -> list[Measurement]:
    groups: dict[_STAGE_KEY, list[Measurement]] = defaultdict(list)
    for m in measurements:
        groups[(m.trace_id, m.tool_call_id, m.request_id, m.stage)].append(m)
    return [preferred_copy(group) for group in groups.values()]


def dedupe_manifests(manifests: Iterable[Manifest]) -> dict[str, Manifest]:
    groups: dict[str, list[Manifest]] = defaultdict(list)
    for manifest in manifests:
        groups[manifest.request_id].append(manifest)
    return {request_id: preferred_copy(group) for request_id, group in groups.items()}


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
    by_request = dedupe_manifests(manifests)
    wanted = set(tool_call_ids) if tool_call_ids is not None else None

    before: dict[str, list[Measurement]] = defaultdict(list)
    in_request: dict[str, dict[str, list[Measurement]]] = defaultdict(lambda: defaultdict(list))
    trace_ids: dict[str, str] = {}
    compacted = compaction_stages(by_request.values())
    for m in dedupe_measurements([*measurements, *compacted]):
        trace_ids.setdefault(m.tool_call_id, m.trace_id)
        if m.request_id is None:
            before[m.tool_call_id].append(m)
        else:
            in_request[m.tool_call_id][m.request_id].append(m)
    mentioned: dict[str, set[str]] = defaultdict(set)
    issuers: dict[str, list[Origin]] = defaultdict(list)
    for manifest in by_request.values():
        for call_id in (*manifest.tool_call_ids, *(manifest.tool_calls or ())):
            mentioned[call_id].add(manifest.request_id)
            trace_ids.setdefault(call_id, manifest.trace_id)
        origin = issuer_origin(manifest)
        for call_id in manifest.issued_calls or ():
            trace_ids.setdefault(call_id, manifest.trace_id)
            if origin is not None:
                issuers[call_id].append(origin)

    by_trace: dict[str, list[Manifest]] = defaultdict(list)
    for manifest in by_request.values():
        by_trace[manifest.trace_id].append(manifest)
    unseen = {trace_id: first_unseen(found) for trace_id, found in by_trace.items()}

    reports: list[Report] = []
    for call_id in sorted(trace_ids):
        if wanted is not None and call_id not in wanted:
            continue
        origin = call_origin(before[call_id], issuers[call_id])
        following = requests_following(origin, by_request.values())
        requests = set(in_request[call_id]) | mentioned[call_id] | following
        evidence = CallEvidence(
            call_id=call_id,
            before=before[call_id],
            in_request=in_request[call_id],
            manifests={r: by_request[r] for r in requests if r in by_request},
            following=following,
            unseen=unseen.get(trace_ids[call_id]),
        )
        judgment = judge_call(
            trace_ids[call_id],
            evidence,
            requests,
            complete=True,
            tolerances=tol,
            now=now,
            origin=origin,
        )
        reports.extend(judgment.reports)
    return reports
