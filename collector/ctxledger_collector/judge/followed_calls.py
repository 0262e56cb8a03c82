"""What the stored evidence says, once, of where each call's result first reached the
model (:mod:`ctxledger.verdicts.resends`): the request that followed the call and the
digests of its originals. Those facts only ever become true, so each store keeps them per
call (bounded) and another process's writes never make them stale.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.call_origins import call_origin
from ctxledger.verdicts.incremental import CallKey
from ctxledger.verdicts.resends import original_digests
from ctxledger_collector.judge.trace_state import SqlTraceState
from ctxledger_collector.storage.column_values import digest_number


@dataclass(eq=False)
class Followed:
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
        self._calls: OrderedDict[CallKey, Followed] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, calls: Iterable[CallKey]) -> dict[CallKey, Followed]:
        with self._lock:
            found = {call: f for call in calls if (f := self._calls.get(call)) is not None}
            for call in found:
                self._calls.move_to_end(call)
            return found

    def put(self, call: CallKey, followed: Followed) -> None:
        with self._lock:
            self._calls[call] = followed
            self._calls.move_to_end(call)
            while len(self._calls) > self.max_calls:
                self._calls.popitem(last=False)


def read_followed(state: SqlTraceState, calls: set[CallKey]) -> dict[CallKey, Followed]:
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
    found: dict[CallKey, Followed] = {}
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
            found[call] = Followed(origin[0], compaction, position, _StoredDigests(originals))
    return found


class _AnyDigest:
    """Every digest: the test of a stage's own fields, before the originals are read."""

    def __contains__(self, item: object) -> bool:
        return True


ANY_DIGEST = _AnyDigest()


class _StoredDigests:
    """The originals' digests as read back (their 64-bit prefixes), holding a batch
    stage's whole digest when its prefix is among them."""

    def __init__(self, digests: Iterable[str]) -> None:
        self.numbers = frozenset(digest_number(d) for d in digests)

    def __contains__(self, item: object) -> bool:
        return isinstance(item, str) and digest_number(item) in self.numbers
