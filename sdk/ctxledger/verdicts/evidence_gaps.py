"""Where a journey's evidence cannot say what it asks: requests whose input the telemetry
did not show, tokens counted with different encodings. Pure; stdlib only."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from ctxledger import semconv
from ctxledger.verdicts.model import Manifest, Measurement, Transition


def unseen(manifest: Manifest) -> bool:
    """The telemetry showed nothing of the request's input, and said why."""
    return manifest.telemetry_cut is not None and manifest.tool_calls is None


def first_unseen(manifests: Iterable[Manifest]) -> Manifest | None:
    """The unseen request with the lowest id: the one a report names, whatever arrived."""
    return min((m for m in manifests if unseen(m)), key=lambda m: m.request_id, default=None)


def waits_for_unseen(before: Iterable[Measurement]) -> bool:
    """Whether a call's result may sit in an unseen request: its stages were derived (the
    SDK's stages key requests by its own ids, never by an LLM span's)."""
    stages = list(before)
    return bool(stages) and all(m.source != semconv.SOURCE_CTXLEDGER for m in stages)


def tokens_not_comparable(
    stages: Sequence[Measurement], transitions: Sequence[Transition]
) -> str | None:
    """Why the tokens a journey lost are unknown: a transition that lost content between
    two stages whose tokens were counted with different encodings (None: all known)."""
    for (before, after), t in zip(itertools.pairwise(stages), transitions, strict=True):
        lost = t.verdict not in (semconv.VERDICT_INTACT, semconv.VERDICT_UNAUDITABLE)
        counted = before.tokens is not None and after.tokens is not None
        if lost and counted and before.tokenizer != after.tokenizer:
            return (
                f"stage {before.stage} counted tokens with {before.tokenizer}, stage "
                f"{after.stage} with {after.tokenizer}"
            )
    return None
