"""The ``received`` stages of a judged request: one measurement per tool result, stating
what the server's count says became of it (:func:`~ctxledger.verdicts.received.
judge_received`), which the ordinary journey rules then judge against ``sent``. Pure;
stdlib only.
"""

from __future__ import annotations

from collections.abc import Container, Mapping

from ctxledger import semconv as sc
from ctxledger.verdicts.model import Measurement, ReceivedRecord
from ctxledger.verdicts.received import (
    DEFAULT_TOLERANCE,
    KEPT,
    UNJUDGED,
    WHOLLY_LOST,
    CallOutcome,
    ReceivedOutcome,
    ReceivedTolerance,
    judge_received,
)


def _why_lost(record: ReceivedRecord, outcome: ReceivedOutcome, result: CallOutcome) -> str:
    policy = record.policy or "unknown, taken as front_discard"
    what = "all of this result" if result.outcome in WHOLLY_LOST else "part of this result"
    if record.policy == sc.POLICY_PROVIDER_EDIT:
        return f"the model server cleared this result (context editing, {policy})"
    return (
        f"the model server read {record.input_tokens:,} of the {record.counted_tokens:,} "
        f"tokens sent (tolerance {outcome.tolerance:,}); under its policy ({policy}) "
        f"{what} fell in the {outcome.discarded_tokens:,} tokens it certainly discarded"
    )


def received_measurements(
    record: ReceivedRecord,
    sent: Mapping[str, Measurement] | None = None,
    tolerance: ReceivedTolerance = DEFAULT_TOLERANCE,
) -> list[Measurement]:
    """One ``received`` measurement per tool result of the request, stating what the
    server's count says it lost; ``sent`` (by call id) lends each its tool name."""
    return outcome_measurements(record, judge_received(record, tolerance), sent)


def result_sizes(record: ReceivedRecord) -> dict[str, tuple[int, int]]:
    """Per tool result of the request, its (tokens, chars) as counted."""
    sizes: dict[str, tuple[int, int]] = {}
    for call_id, size, chars in zip(
        record.segment_call_ids, record.segment_tokens, record.segment_chars, strict=False
    ):
        if call_id:
            tokens, counted = sizes.get(call_id, (0, 0))
            sizes[call_id] = (tokens + size, counted + chars)
    return sizes


def quiet_outcome(outcome: ReceivedOutcome) -> bool:
    """The server read every result whole and the rule has nothing to say of any: each
    result's measurement is its sizes, ``kept``, and no note."""
    return outcome.reason is None and not outcome.notes and not outcome.lost


def outcome_measurements(
    record: ReceivedRecord,
    outcome: ReceivedOutcome,
    sent: Mapping[str, Measurement] | None = None,
    leave_out: Container[str] = (),
    sizes: Mapping[str, tuple[int, int]] | None = None,
) -> list[Measurement]:
    """:func:`received_measurements` of ``record`` judged as ``outcome``, but for the
    results whose call id is in ``leave_out``; ``sizes`` are :func:`result_sizes`."""
    if sizes is None:
        sizes = result_sizes(record)
    order = sc.BUILTIN_STAGE_ORDER[sc.STAGE_RECEIVED]
    notes = "; ".join(outcome.notes) or None
    measurements = []
    for result in outcome.results:
        if result.call_id in leave_out:
            continue
        tokens, chars = sizes.get(result.call_id, (0, 0))
        if result.outcome in (KEPT, UNJUDGED):
            note = outcome.reason or notes
        else:
            note = _why_lost(record, outcome, result) + (f"; {notes}" if notes else "")
        before = sent.get(result.call_id) if sent is not None else None
        measurements.append(
            Measurement(
                trace_id=record.trace_id,
                tool_call_id=result.call_id,
                stage=sc.STAGE_RECEIVED,
                order=order,
                chars=max(chars - result.lost_chars, 0),
                request_id=record.request_id,
                tool_name=before.tool_name if before is not None else None,
                agent_name=record.agent_name,
                step=record.step,
                tokens=max(tokens - result.lost_tokens, 0),
                tokenizer=record.tokenizer,
                declared=record.declared,
                marker=record.marked,
                observed_at=record.observed_at,
                span_id=record.span_id,
                source=record.source,
                received=result.outcome,
                lost_chars=result.lost_chars,
                lost_tokens=result.lost_tokens,
                note=note,
            )
        )
    return measurements
