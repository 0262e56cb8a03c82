"""Results a declared compaction replaced. Pure; stdlib only.

A request that declares a compaction (its manifest's ``compaction``) and whose previous
request in its conversation named another compaction or none is the first after it.
Each result the previous request carried and this one carries no more (neither the
result nor its call) was summarized away: it gets a ``compacted`` stage in this request,
0 chars and declared, so its journey there is ``declared`` (``unmarked`` where only a
span flag, nothing in the request, says so), never ``dropped``.

The previous request is the one at the greatest position below among those whose input
the telemetry showed (:func:`~ctxledger.verdicts.evidence_gaps.unseen` ones say nothing of
what they carried). A request the telemetry showed only in part names no removals.
:func:`compaction_stages` finds them in a whole set; the collector asks its database for
the same neighbours (:mod:`ctxledger_collector.judge.compaction`).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable

from ctxledger import semconv
from ctxledger.verdicts.evidence_gaps import unseen
from ctxledger.verdicts.model import Manifest, Measurement


def removed_by(before: Manifest, after: Manifest) -> list[str]:
    """The results ``before`` carried that ``after`` replaced by a compaction (none
    unless ``after`` is the first request after one and the telemetry showed it whole)."""
    if after.compaction is None or after.telemetry_cut or before.compaction == after.compaction:
        return []
    kept = after.results | (after.calls or frozenset())
    return [call_id for call_id in before.tool_call_ids if call_id not in kept]


#: How a compaction's kind reads in a report's note.
_DECLARED_BY = {
    "claude_code.summary": "Claude Code's summary opens it",
    semconv.GEN_AI_PART_COMPACTION: "a compaction part stands for the history",
    semconv.GEN_AI_CONVERSATION_COMPACTED: "its span says gen_ai.conversation.compacted",
}


def declared_by(compaction: str) -> str:
    """What declares the compaction, in words."""
    kind = compaction.partition(":")[0]
    return _DECLARED_BY.get(kind, kind)


def missing_note(manifest: Manifest, removal: Measurement | None) -> str:
    """Why a result is absent from a request: a compaction replaced it (its stage says
    so), or nothing known did."""
    if removal is not None and removal.strategy == semconv.STRATEGY_COMPACTION:
        return (
            f"request {manifest.request_id} is the first after a compaction "
            f"({declared_by(manifest.compaction or '')}): it no longer carries the result"
        )
    return f"the result is missing from request {manifest.request_id}"


def _seen_by_model(compaction: str) -> tuple[str, ...]:
    """What tells the model the history was compacted: the request's summary or compaction
    part (its kind), nothing where only the span's flag says so."""
    kind = compaction.partition(":")[0]
    return () if kind == semconv.GEN_AI_CONVERSATION_COMPACTED else (kind,)


def removal_stage(after: Manifest, call_id: str) -> Measurement:
    """The ``compacted`` stage of a result ``after`` replaced by its compaction."""
    return Measurement(
        trace_id=after.trace_id,
        tool_call_id=call_id,
        stage=semconv.STAGE_COMPACTED,
        order=semconv.STAGE_LLM_INPUT_ORDER,
        chars=0,
        request_id=after.request_id,
        step=after.step,
        declared=True,
        strategy=semconv.STRATEGY_COMPACTION,
        markers_found=_seen_by_model(after.compaction or ""),
        observed_at=after.observed_at,
        span_id=after.span_id,
        source=after.source,
    )


def compaction_stages(manifests: Iterable[Manifest]) -> list[Measurement]:
    """The ``compacted`` stages a whole set of (deduplicated) manifests calls for."""
    by_position: dict[tuple[str, str], dict[int, list[Manifest]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for m in manifests:
        if m.position is not None and not unseen(m):
            by_position[(m.trace_id, m.conversation_key)][m.position].append(m)
    stages: list[Measurement] = []
    for positions in by_position.values():
        ordered = sorted(positions)
        for below, position in itertools.pairwise(ordered):
            for after in positions[position]:
                for before in positions[below]:
                    stages += [removal_stage(after, c) for c in removed_by(before, after)]
    return stages
