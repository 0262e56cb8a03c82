"""Quiet re-sends: a request that carries a tool result exactly as the tool gave it, after
the request that followed the call. Pure; stdlib only.

Every request of a conversation re-sends the results before it. Where a derived request
(one the collector read from an LLM span, §6 of the contract) carries a result
byte-identical to the tool's own output, nothing happened to it there: its journey in that
request would be ``intact`` with nothing to say. Such a request forms no journey of its
own; the result's journey is the one of the request that followed its call (which is
always judged), and any request that carries it changed (cut, trimmed, rewritten), loses it
on the server, or carries it without its call does form one. So a run of n steps has
about n journeys, not n²/2, and the collector stores and judges what each request changed.

The rule is monotone in the evidence, which lets a store leave such stages unwritten the
moment it can tell (:func:`quiet_stages`): an original that matches stays a match, and a
request above the first request after the call never becomes that request.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence

from ctxledger import semconv as sc
from ctxledger.verdicts.model import Manifest, Measurement
from ctxledger.verdicts.received import KEPT


def _plain(m: Measurement) -> bool:
    """Nothing to say of the stage itself: trusted, whole, counted, not inferred."""
    return (
        m.trusted
        and m.telemetry_cut is None
        and not m.tokens_estimated
        and m.note is None
        and not m.inferred
    )


def original_digests(before: Iterable[Measurement]) -> frozenset[str]:
    """The text digests of the call's plain ``original`` stages."""
    return frozenset(
        m.sha256 for m in before if m.stage == sc.STAGE_ORIGINAL and m.sha256 and _plain(m)
    )


def _quiet_stage(m: Measurement, originals: Container[str]) -> bool:
    if m.source == sc.SOURCE_CTXLEDGER or not _plain(m):
        return False
    if m.stage == sc.STAGE_RECEIVED:
        return m.received == KEPT and m.lost_chars == 0 and m.lost_tokens == 0
    return (
        m.stage == sc.STAGE_LLM_INPUT
        and m.sha256 in originals
        and not m.declared
        and not m.sees_marker
    )


def shows_whole(manifest: Manifest) -> bool:
    """A derived request whose telemetry shows all it carried and the calls it carried."""
    return (
        manifest.source != sc.SOURCE_CTXLEDGER
        and manifest.telemetry_cut is None
        and manifest.calls is not None
    )


def carries_whole(manifest: Manifest, call_id: str) -> bool:
    """A derived request that shows the call and its result."""
    return (
        shows_whole(manifest) and call_id in manifest.results and call_id in (manifest.calls or ())
    )


def quiet_stages(
    stages: Sequence[Measurement], originals: Container[str], manifest: Manifest
) -> bool:
    """Whether a request's stages of one call (non-empty) say only that it carried the
    result as the tool gave it. A server's ``kept`` alone qualifies too: the request's
    other stages came in another batch, and the store may have left them unwritten."""
    return carries_whole(manifest, stages[0].tool_call_id) and all(
        _quiet_stage(m, originals) for m in stages
    )


def quiet_resend(
    call_id: str,
    stages: Sequence[Measurement],
    before: Iterable[Measurement],
    manifest: Manifest | None,
    anchored: bool,
) -> bool:
    """Whether a request that does not follow the call forms no journey of it: where the
    call has a journey in an earlier request of the same conversation (``anchored``) and
    the request shows the call and its result, its stages are a quiet re-send, or it has
    none (a store left them unwritten)."""
    if not anchored or manifest is None or not carries_whole(manifest, call_id):
        return False
    return not stages or quiet_stages(stages, original_digests(before), manifest)
