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
from dataclasses import dataclass

from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.call_origins import call_origin
from ctxledger.verdicts.incremental import CallKey, JourneyKey
from ctxledger.verdicts.resends import original_digests, quiet_stages
from ctxledger_collector.decoded.batch import DecodedManifest, DecodedMeasurement
from ctxledger_collector.judge.trace_state import SqlTraceState
from ctxledger_collector.storage.column_values import digest_number


@dataclass(frozen=True)
class _Followed:
    """Where a call's result first reached the model, and the digests of its originals."""

    conversation: str
    #: The compaction that request follows: the requests after another begin anew.
    compaction: str | None
    position: int
    originals: Container[str]


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
    manifests: Sequence[Manifest],
    followed: FollowedCalls,
) -> set[JourneyKey]:
    """The journeys of the batch whose stages are quiet re-sends, to leave unwritten."""
    requests = {(m.trace_id, m.request_id): m for m in manifests if m.position is not None}
    grouped: dict[JourneyKey, list[Measurement]] = defaultdict(list)
    for m in stages:
        if m.request_id is not None and (m.trace_id, m.request_id) in requests:
            grouped[(m.trace_id, m.tool_call_id, m.request_id)].append(m)
    if not grouped:
        return set()
    known = followed.get_many({(t, c) for t, c, _ in grouped})
    # Calls not known yet are read once, where the stages could be quiet at all.
    missing = {
        (t, c)
        for (t, c, r), group in grouped.items()
        if (t, c) not in known and quiet_stages(group, _ANY_DIGEST, requests[(t, r)])
    }
    if missing:
        for call, read in _read_followed(state, missing).items():
            followed.put(call, read)
            known[call] = read
    unwritten: set[JourneyKey] = set()
    for key, group in grouped.items():
        f = known.get((key[0], key[1]))
        if f is None:
            continue
        manifest = requests[(key[0], key[2])]
        if (
            manifest.conversation_key == f.conversation
            and manifest.compaction == f.compaction
            and manifest.position is not None
            and manifest.position > f.position
            and quiet_stages(group, f.originals, manifest)
        ):
            unwritten.add(key)
    return unwritten


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
    """The batch's measurements to write, and the journeys left unwritten."""
    quiet = unwritten_resends(
        state, (i.measurement for i in decoded), [i.manifest for i in manifests], followed
    )
    if not quiet:
        return decoded, quiet
    kept = [
        i
        for i in decoded
        if i.measurement.request_id is None
        or (i.measurement.trace_id, i.measurement.tool_call_id, i.measurement.request_id)
        not in quiet
    ]
    return kept, quiet
