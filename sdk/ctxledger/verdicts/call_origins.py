"""Where a tool call was issued and which requests follow it. Pure; stdlib only.

A call's *origin* is the conversation and position of the request whose response issued
it (manifests that list it in ``issued_calls``), else the lowest step of its own stages
in the run's default conversation. The requests that follow a call are those of the
origin's conversation at the first position after it; a request's position is its
``sequence``, else its step. Those requests should carry the call's result, so the
call has a journey in each (:mod:`~ctxledger.verdicts.journeys`).
"""

from __future__ import annotations

from collections.abc import Iterable

from ctxledger.verdicts.model import Manifest, Measurement

#: A call's origin: (conversation key, position) of where it was issued.
Origin = tuple[str, int]


def mentions(manifest: Manifest, call_id: str) -> bool:
    return call_id in manifest.results or call_id in (manifest.calls or ())


def call_step(before: Iterable[Measurement]) -> int | None:
    """The step whose response issued the call, as its own stages say: the lowest step of
    its stages measured before any request."""
    return min((m.step for m in before if m.step is not None), default=None)


def issuer_origin(manifest: Manifest) -> Origin | None:
    """Where a request that issued calls stands (None when it has no position)."""
    position = manifest.position
    return None if position is None else (manifest.conversation_key, position)


def call_origin(before: Iterable[Measurement], issuers: Iterable[Origin]) -> Origin | None:
    """Where the call was issued: the earliest request whose response issued it, else the
    lowest step of its own stages (in the default conversation)."""
    earliest = min(issuers, key=lambda o: (o[1], o[0]), default=None)
    if earliest is not None:
        return earliest
    step = call_step(before)
    return None if step is None else ("", step)


def requests_following(origin: Origin | None, manifests: Iterable[Manifest]) -> frozenset[str]:
    """The requests of the origin's conversation at the first position after it."""
    if origin is None:
        return frozenset()
    conversation, position = origin
    later = [
        (m.position, m.request_id)
        for m in manifests
        if m.conversation_key == conversation and m.position is not None and m.position > position
    ]
    first = min((p for p, _ in later), default=None)
    return frozenset(r for p, r in later if p == first)
