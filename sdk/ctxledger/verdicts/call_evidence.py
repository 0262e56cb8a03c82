"""What one tool call's journeys are judged from, and which requests it has a journey in.
Pure; stdlib only.

A call has a journey in request R when it was measured in R, when R's manifest lists its
result or its call, or when R is the request that *follows* the call (the result should
be there), except where R only re-sends the result as the tool gave it
(:mod:`~ctxledger.verdicts.resends`). :mod:`~ctxledger.verdicts.journeys` judges them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from ctxledger.verdicts.call_origins import mentions
from ctxledger.verdicts.model import Manifest, Measurement
from ctxledger.verdicts.resends import quiet_resend


@dataclass(frozen=True)
class CallEvidence:
    """What one call's journeys are judged from (copies already deduplicated).

    ``manifests`` must hold the manifest of every request judged that has one;
    ``following`` is the set of requests that follow the call's origin
    (:func:`~ctxledger.verdicts.call_origins.requests_following`), whatever requests are judged.
    """

    call_id: str
    before: Sequence[Measurement] = ()
    in_request: Mapping[str, Sequence[Measurement]] = field(default_factory=dict)
    manifests: Mapping[str, Manifest] = field(default_factory=dict)
    following: frozenset[str] = frozenset()
    #: A request of the trace whose input the telemetry did not show (``first_unseen``).
    unseen: Manifest | None = None

    def stages(self, request_id: str | None) -> list[Measurement]:
        """The journey's stages in pipeline order: the call's own, then the request's."""
        own = self.in_request.get(request_id, ()) if request_id is not None else ()
        return sorted([*self.before, *own], key=lambda m: (m.order, m.stage))

    def journey_requests(self, candidates: Collection[str]) -> list[str]:
        """The candidates the call has a journey in, sorted. They are taken in their
        conversations' order: a request that re-sends the result quietly has none where an
        earlier request of its conversation (after the same compaction, if any) carries
        the result in a journey of the call (:mod:`.resends`), so ``candidates`` must
        hold every request the call has a journey in."""
        anchors: set[tuple[str, str | None, int]] = set()
        found: list[str] = []
        for request_id in sorted(set(candidates), key=self._place):
            manifest = self.manifests.get(request_id)
            place = None
            if manifest is not None and manifest.position is not None:
                # The requests after a compaction begin anew: the first of them shows
                # what the compaction kept.
                place = (manifest.conversation_key, manifest.compaction, manifest.position)
            anchored = place is not None and any(
                (conversation, compaction) == place[:2] and position < place[2]
                for conversation, compaction, position in anchors
            )
            if self.has_journey(request_id, anchored):
                found.append(request_id)
                if place is not None and self._carries(request_id):
                    anchors.add(place)
        return sorted(found)

    def _carries(self, request_id: str) -> bool:
        """Whether the request carries the result (a journey where it went missing does
        not: it lasts only while the request is the one after the call)."""
        manifest = self.manifests.get(request_id)
        return bool(self.in_request.get(request_id)) or (
            manifest is not None and self.call_id in manifest.results
        )

    def _place(self, request_id: str) -> tuple[int, int, str]:
        manifest = self.manifests.get(request_id)
        if manifest is None or manifest.position is None:
            return (1, 0, request_id)
        return (0, manifest.position, request_id)

    def has_journey(self, request_id: str, anchored: bool = False) -> bool:
        """Whether the call has a journey in the request; ``anchored``: it has one in an
        earlier request of the request's conversation."""
        manifest = self.manifests.get(request_id)
        if request_id not in self.following:
            own = self.in_request.get(request_id, ())
            if quiet_resend(self.call_id, own, self.before, manifest, anchored):
                return False
        if self.in_request.get(request_id):
            return True
        if manifest is not None and mentions(manifest, self.call_id):
            return True
        return self.expects(request_id)

    def expects(self, request_id: str) -> bool:
        """The request should carry the call's result: it follows the call's origin, and
        its own response did not issue the call. A request never carries the result of a
        call it issued, whatever its span's times say (a second copy of the issuing
        request, or an agent span listing every call of its run, may sit later)."""
        if request_id not in self.following:
            return False
        manifest = self.manifests.get(request_id)
        return manifest is None or self.call_id not in (manifest.issued_calls or ())
