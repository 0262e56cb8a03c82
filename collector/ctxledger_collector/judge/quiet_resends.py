"""Leave quiet re-sends unwritten (:mod:`ctxledger.verdicts.resends`): the stages of a
derived request that carries a result exactly as the tool gave it, above the request that
followed the call, form no journey, so the store neither writes nor judges them. Every
request of a long conversation re-sends the results before it; this keeps what a request
costs to what it changed.

A stage is left out only when the evidence already shows the rule holds for good: the
call's stored original has the stage's digest, and the request stands above the first
request after the call in the same conversation (later evidence never moves that request
above it). Those facts are kept per call (:mod:`.followed_calls`), and per conversation
how its last request was judged (:mod:`.quiet_runs`), so a request's re-sends judged
quiet before are not judged again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.incremental import CallKey, JourneyKey, RequestKey
from ctxledger.verdicts.resends import quiet_stages, shows_whole
from ctxledger_collector.decoded.batch import DecodedManifest, DecodedMeasurement
from ctxledger_collector.judge.followed_calls import (
    ANY_DIGEST,
    Followed,
    FollowedCalls,
    read_followed,
)
from ctxledger_collector.judge.quiet_runs import CarriedSplit, QuietRuns
from ctxledger_collector.judge.trace_state import SqlTraceState

#: Per request, the calls whose stages in it are left unwritten.
Unwritten = dict[RequestKey, set[str]]


@dataclass(frozen=True)
class ResendMemory:
    """What a store keeps between batches to tell quiet re-sends: per call where its
    result first reached the model, per conversation how its last request was judged."""

    followed: FollowedCalls = field(default_factory=FollowedCalls)
    runs: QuietRuns = field(default_factory=QuietRuns)


def unwritten_resends(
    state: SqlTraceState,
    stages: Iterable[Measurement],
    manifests: Sequence[DecodedManifest],
    memory: ResendMemory,
) -> tuple[Unwritten, list[DecodedMeasurement]]:
    """Per request the calls whose stages are quiet re-sends, to leave unwritten;
    and the stages the manifests carry (:class:`DecodedManifest`) that are not, to write.
    ``stages`` are the batch's others."""
    requests = {(i.manifest.trace_id, i.manifest.request_id): i.manifest for i in manifests}
    requests = {key: m for key, m in requests.items() if m.position is not None}
    grouped: dict[JourneyKey, list[Measurement]] = defaultdict(list)
    for m in stages:
        if m.request_id is not None and (m.trace_id, m.request_id) in requests:
            grouped[(m.trace_id, m.tool_call_id, m.request_id)].append(m)
    alone, joined = _carried_alone(manifests, grouped, set(requests), memory.runs)
    calls = {(t, c) for t, c, _ in grouped}
    calls.update((s.item.manifest.trace_id, t.tool_call_id) for s in alone for t in s.rest)
    known = memory.followed.get_many(calls)
    # Calls not known yet are read once, where the stages could be quiet at all.
    missing = {
        (t, c)
        for (t, c, r), group in grouped.items()
        if (t, c) not in known and quiet_stages(group, ANY_DIGEST, requests[(t, r)])
    }
    missing.update(
        (s.item.manifest.trace_id, t.tool_call_id)
        for s in alone
        for t in s.rest
        if (s.item.manifest.trace_id, t.tool_call_id) not in known
        and quiet_stages((t,), ANY_DIGEST, s.item.manifest)
    )
    if missing:
        for call, read in read_followed(state, missing).items():
            memory.followed.put(call, read)
            known[call] = read
    unwritten: Unwritten = {}
    for (trace, call_id, request_id), group in grouped.items():
        f = known.get((trace, call_id))
        manifest = requests[(trace, request_id)]
        if f is not None and f.above(manifest) and quiet_stages(group, f.originals, manifest):
            unwritten.setdefault((trace, request_id), set()).add(call_id)
    loud = [
        i.stage_of(t)
        for i in joined
        for t in i.carried
        if t.tool_call_id not in unwritten.get((i.manifest.trace_id, i.manifest.request_id), ())
    ]
    for split in alone:
        loud += _judge_alone(split, known, unwritten, memory.runs)
    return unwritten, loud


def _carried_alone(
    manifests: Sequence[DecodedManifest],
    grouped: dict[JourneyKey, list[Measurement]],
    positioned: set[tuple[str, str]],
    runs: QuietRuns,
) -> tuple[list[CarriedSplit], list[DecodedManifest]]:
    """The manifests whose carried stages are their journeys' only stages in the batch
    (as a rule), apart from the rest, whose carried stages join ``grouped``. The rest:
    those with no place in their conversation, several copies of one request, or a
    carried call that has a stage carried twice or other stages in the batch."""
    copies: dict[tuple[str, str], int] = defaultdict(int)
    for i in manifests:
        copies[(i.manifest.trace_id, i.manifest.request_id)] += 1
    in_batch: dict[tuple[str, str], set[str]] = defaultdict(set)
    for t, c, r in grouped:
        in_batch[(t, r)].add(c)
    alone, joined = [], []
    for i in manifests:
        if not i.carried:
            continue
        request = (i.manifest.trace_id, i.manifest.request_id)
        if request not in positioned:
            joined.append(i)  # never quiet: written as they are
            continue
        split = runs.split(i) if copies[request] == 1 else None
        if (
            split is not None
            and split.stage_keys is not None
            and (request not in in_batch or in_batch[request].isdisjoint(split.calls))
        ):
            alone.append(split)
        else:
            joined.append(i)
            for template in i.carried:
                # The template's request fields are another request's; the rule reads none.
                grouped[(request[0], template.tool_call_id, request[1])].append(template)
    return alone, joined


def _judge_alone(
    split: CarriedSplit,
    known: dict[CallKey, Followed],
    unwritten: Unwritten,
    runs: QuietRuns,
) -> list[DecodedMeasurement]:
    """The journeys of the request's carried stages that are quiet (added to
    ``unwritten``) and the stages of the others (returned, to write): those quiet as in
    the request before it stay quiet, the rest are judged here. Inline: a long run's
    request carries hundreds."""
    item = split.item
    m = item.manifest
    trace, request, position = m.trace_id, m.request_id, m.position
    conversation, compaction = m.conversation_key, m.compaction
    results, calls = m.results, m.calls or frozenset()
    whole = shows_whole(m)
    quiet, loud_calls = set(), set()
    for template in split.rest:
        call = template.tool_call_id
        f = known.get((trace, call))
        if (
            whole
            and f is not None
            and position is not None
            and position > f.position
            and f.conversation == conversation
            and f.compaction == compaction
            and call in results
            and call in calls
            and (
                template is f.quiet_templates.get(template.stage)
                or _quiet_on_its_own(template, f, m)
            )
        ):
            quiet.add(call)
        else:
            loud_calls.add(call)
    # A journey is quiet only where every stage of it is.
    quiet_calls = frozenset(split.quiet.union(quiet).difference(loud_calls))
    if quiet_calls:
        unwritten.setdefault((trace, request), set()).update(quiet_calls)
    if split.quiet.isdisjoint(loud_calls):
        loud = tuple(t for t in split.rest if t.tool_call_id in loud_calls)
    else:  # a call quiet before has a stage that is not now: all its stages are written
        loud = tuple(t for t in item.carried if t.tool_call_id not in quiet_calls)
    runs.keep(split, quiet_calls, loud)
    return [item.stage_of(t) for t in loud]


def _quiet_on_its_own(template: Measurement, f: Followed, manifest: Manifest) -> bool:
    """The stage's own fields say it is quiet (then remembered: later requests carry the
    very same template)."""
    if quiet_stages((template,), f.originals, manifest):
        f.quiet_templates[template.stage] = template
        return True
    return False


def without_quiet_resends(
    state: SqlTraceState,
    decoded: list[DecodedMeasurement],
    manifests: Sequence[DecodedManifest],
    memory: ResendMemory,
) -> tuple[list[DecodedMeasurement], Unwritten]:
    """The batch's measurements to write (the stages manifests carry among them, where
    they are not quiet), and per request the calls left unwritten."""
    quiet, carried = unwritten_resends(state, (i.measurement for i in decoded), manifests, memory)
    if not quiet:
        return [*decoded, *carried], quiet
    kept = [
        i
        for i in decoded
        if i.measurement.request_id is None
        or i.measurement.tool_call_id
        not in quiet.get((i.measurement.trace_id, i.measurement.request_id), ())
    ]
    return [*kept, *carried], quiet
