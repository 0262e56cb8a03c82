"""Leave quiet re-sends unwritten (:mod:`ctxledger.verdicts.resends`): the stages of a
derived request that carries a result exactly as the tool gave it, above the request that
followed the call, form no journey, so the store neither writes nor judges them. Every
request of a long conversation re-sends the results before it; this keeps what a request
costs to what it changed.

A stage is left out only when the evidence already shows the rule holds for good: the
call's stored original has the stage's digest, and the request stands above the first
request after the call in the same conversation (later evidence never moves that request
above it). Those two facts are kept per call by each store (bounded): they only ever become true, so
another process's writes never make them stale.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field

from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.call_origins import call_origin
from ctxledger.verdicts.incremental import CallKey, JourneyKey
from ctxledger.verdicts.resends import original_digests, quiet_stages, shows_whole
from ctxledger_collector.decoded.batch import DecodedManifest, DecodedMeasurement
from ctxledger_collector.judge.trace_state import SqlTraceState
from ctxledger_collector.storage.column_values import digest_number


@dataclass(eq=False)
class _Followed:
    """Where a call's result first reached the model, and the digests of its originals."""

    conversation: str
    #: The compaction that request follows: the requests after another begin anew.
    compaction: str | None
    position: int
    originals: Container[str]
    #: Per stage, the carried stage last found quiet on its own: later requests carry
    #: the very same one.
    quiet_templates: dict[str, Measurement] = field(default_factory=dict)

    def above(self, manifest: Manifest) -> bool:
        """``manifest``'s request comes after this one, on the same side of compactions."""
        position = manifest.position
        return (
            position is not None
            and position > self.position
            and manifest.conversation_key == self.conversation
            and manifest.compaction == self.compaction
        )


class FollowedCalls:
    """Per (trace, call), once known: the position of the request that followed it.
    Thread-safe; the least recently used are given up past ``max_calls``."""

    def __init__(self, max_calls: int = 200_000) -> None:
        self.max_calls = max_calls
        self._calls: OrderedDict[CallKey, _Followed] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, calls: Iterable[CallKey]) -> dict[CallKey, _Followed]:
        with self._lock:
            found = {call: f for call in calls if (f := self._calls.get(call)) is not None}
            for call in found:
                self._calls.move_to_end(call)
            return found

    def put(self, call: CallKey, followed: _Followed) -> None:
        with self._lock:
            self._calls[call] = followed
            self._calls.move_to_end(call)
            while len(self._calls) > self.max_calls:
                self._calls.popitem(last=False)


def _read_followed(state: SqlTraceState, calls: set[CallKey]) -> dict[CallKey, _Followed]:
    """What the stored evidence says of each call, where it says enough."""
    before = state.before_stages(calls)
    issued = state.issuers(calls)
    origins = {c: call_origin(before.get(c, ()), issued.get(c, ())) for c in calls}
    positions = {(c[0], *o) for c, o in origins.items() if o is not None}
    after = state.requests_after(positions) if positions else {}
    requests = {(p[0], r) for p, found in after.items() for r in found}
    manifests = state.manifests(requests) if requests else {}
    followers = {
        (call[0], call[1], r)
        for call, origin in origins.items()
        if origin is not None
        for r in after.get((call[0], *origin), ())
    }
    staged = state.request_stages(followers) if followers else {}
    found: dict[CallKey, _Followed] = {}
    for call, origin in origins.items():
        originals = original_digests(before.get(call, ()))
        # An origin its own stages gave (no issuer stored yet) may still move anywhere.
        if origin is None or not originals or not issued.get(call):
            continue
        # The call's first journey: a request that follows it, did not issue it, and has a
        # stage of it stored, so that a journey of the call stays there or earlier in its
        # conversation, whatever arrives later.
        carriers = [
            manifests.get((call[0], r))
            for r in after.get((call[0], *origin), frozenset())
            if staged.get((call[0], call[1], r))
        ]
        known = [
            (m.position, m.compaction)
            for m in carriers
            if m is not None and m.position is not None and call[1] not in (m.issued_calls or ())
        ]
        if known:
            position, compaction = max(known, key=lambda k: k[0])
            found[call] = _Followed(origin[0], compaction, position, _StoredDigests(originals))
    return found


def unwritten_resends(
    state: SqlTraceState,
    stages: Iterable[Measurement],
    manifests: Sequence[DecodedManifest],
    followed: FollowedCalls,
) -> tuple[set[JourneyKey], list[DecodedMeasurement]]:
    """The journeys of the batch whose stages are quiet re-sends, to leave unwritten;
    and the stages the manifests carry (:class:`DecodedManifest`) that are not, to write.
    ``stages`` are the batch's others."""
    requests = {(i.manifest.trace_id, i.manifest.request_id): i.manifest for i in manifests}
    requests = {key: m for key, m in requests.items() if m.position is not None}
    grouped: dict[JourneyKey, list[Measurement]] = defaultdict(list)
    for m in stages:
        if m.request_id is not None and (m.trace_id, m.request_id) in requests:
            grouped[(m.trace_id, m.tool_call_id, m.request_id)].append(m)
    alone, joined = _carried_alone(manifests, grouped, set(requests))
    calls = {(t, c) for t, c, _ in grouped}
    calls.update((i.manifest.trace_id, t.tool_call_id) for i in alone for t in i.carried)
    known = followed.get_many(calls)
    # Calls not known yet are read once, where the stages could be quiet at all.
    missing = {
        (t, c)
        for (t, c, r), group in grouped.items()
        if (t, c) not in known and quiet_stages(group, _ANY_DIGEST, requests[(t, r)])
    }
    missing.update(
        (i.manifest.trace_id, t.tool_call_id)
        for i in alone
        for t in i.carried
        if (i.manifest.trace_id, t.tool_call_id) not in known
        and quiet_stages((t,), _ANY_DIGEST, i.manifest)
    )
    if missing:
        for call, read in _read_followed(state, missing).items():
            followed.put(call, read)
            known[call] = read
    unwritten: set[JourneyKey] = set()
    for key, group in grouped.items():
        f = known.get((key[0], key[1]))
        manifest = requests[(key[0], key[2])]
        if f is not None and f.above(manifest) and quiet_stages(group, f.originals, manifest):
            unwritten.add(key)
    loud = [
        i.stage_of(t)
        for i in joined
        for t in i.carried
        if (i.manifest.trace_id, t.tool_call_id, i.manifest.request_id) not in unwritten
    ]
    for item in alone:
        loud += _judge_alone(item, known, unwritten)
    return unwritten, loud


def _carried_alone(
    manifests: Sequence[DecodedManifest],
    grouped: dict[JourneyKey, list[Measurement]],
    positioned: set[tuple[str, str]],
) -> tuple[list[DecodedManifest], list[DecodedManifest]]:
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
        stages = {(t.tool_call_id, t.stage) for t in i.carried}
        if request not in positioned:
            joined.append(i)  # never quiet: written as they are
        elif (
            copies[request] == 1
            and len(stages) == len(i.carried)
            and not (in_batch.get(request, set()).intersection(c for c, _ in stages))
        ):
            alone.append(i)
        else:
            joined.append(i)
            for template in i.carried:
                # The template's request fields are another request's; the rule reads none.
                grouped[(request[0], template.tool_call_id, request[1])].append(template)
    return alone, joined


def _judge_alone(
    item: DecodedManifest, known: dict[CallKey, _Followed], unwritten: set[JourneyKey]
) -> list[DecodedMeasurement]:
    """The journeys of ``item``'s carried stages that are quiet (added to ``unwritten``)
    and the stages of the others (returned, to write). Inline: a long run's request
    carries hundreds."""
    m = item.manifest
    trace, request, position = m.trace_id, m.request_id, m.position
    conversation, compaction = m.conversation_key, m.compaction
    results, calls = m.results, m.calls or frozenset()
    whole = shows_whole(m)
    quiet, loud_calls = set(), set()
    for template in item.carried:
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
    unwritten.update((trace, call, request) for call in quiet - loud_calls)
    if not loud_calls:
        return []
    return [item.stage_of(t) for t in item.carried if t.tool_call_id in loud_calls]


def _quiet_on_its_own(template: Measurement, f: _Followed, manifest: Manifest) -> bool:
    """The stage's own fields say it is quiet (then remembered: later requests carry the
    very same template)."""
    if quiet_stages((template,), f.originals, manifest):
        f.quiet_templates[template.stage] = template
        return True
    return False


class _AnyDigest:
    """Every digest: the test of a stage's own fields, before the originals are read."""

    def __contains__(self, item: object) -> bool:
        return True


_ANY_DIGEST = _AnyDigest()


class _StoredDigests:
    """The originals' digests as read back (their 64-bit prefixes), holding a batch
    stage's whole digest when its prefix is among them."""

    def __init__(self, digests: Iterable[str]) -> None:
        self.numbers = frozenset(digest_number(d) for d in digests)

    def __contains__(self, item: object) -> bool:
        return isinstance(item, str) and digest_number(item) in self.numbers


def without_quiet_resends(
    state: SqlTraceState,
    decoded: list[DecodedMeasurement],
    manifests: Sequence[DecodedManifest],
    followed: FollowedCalls,
) -> tuple[list[DecodedMeasurement], set[JourneyKey]]:
    """The batch's measurements to write (the stages manifests carry among them, where
    they are not quiet), and the journeys left unwritten."""
    quiet, carried = unwritten_resends(state, (i.measurement for i in decoded), manifests, followed)
    if not quiet:
        return [*decoded, *carried], quiet
    kept = [
        i
        for i in decoded
        if i.measurement.request_id is None
        or (i.measurement.trace_id, i.measurement.tool_call_id, i.measurement.request_id)
        not in quiet
    ]
    return [*kept, *carried], quiet
