"""The ``received`` span <-> its record, and the stored form of the measurements it
expands into. Pure; standard library only.

A ``received`` span is lenient where :mod:`ctxledger.wire` is strict: a count that is
negative, absurd or not a number is the server's bad report, not a broken span, so it is
kept (or marked ``invalid_count``) for the rule to explain in the report. Only what makes
the span unreadable (no request id, segment arrays of the wrong kind) rejects it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxledger import semconv as sc
from ctxledger.verdicts.model import Measurement, ReceivedRecord
from ctxledger.wire import InvalidSpan

#: The attributes a ``received`` span carries (the rest is outside the contract).
RECEIVED_ATTRIBUTES: frozenset[str] = frozenset(
    {
        sc.STAGE,
        sc.STAGE_ORDER,
        sc.REQUEST_ID,
        sc.STEP,
        sc.AGENT_NAME,
        sc.TOKENIZER,
        sc.TOKENIZER_EXACT,
        sc.RECEIVED_INPUT_TOKENS,
        sc.RECEIVED_COUNTED_TOKENS,
        sc.RECEIVED_POLICY,
        sc.RECEIVED_DECLARED,
        sc.RECEIVED_SEGMENT_CALL_IDS,
        sc.RECEIVED_SEGMENT_TOKENS,
        sc.RECEIVED_SEGMENT_CHARS,
        sc.RECEIVED_SEGMENT_ROLES,
        sc.RECEIVED_KEEP_TOKENS,
        sc.RECEIVED_CLEARED_CALL_IDS,
        sc.RECEIVED_MARKED,
        sc.RECEIVED_UNREPORTED,
        sc.SOURCE,
    }
)
#: What a stored ``received`` measurement keeps of its span (its extra attributes).
_SPAN_SUMMARY = (
    sc.RECEIVED_INPUT_TOKENS,
    sc.RECEIVED_COUNTED_TOKENS,
    sc.TOKENIZER_EXACT,
    sc.RECEIVED_POLICY,
    sc.RECEIVED_UNREPORTED,
)


def is_received(attributes: Mapping[str, Any]) -> bool:
    return attributes.get(sc.STAGE) == sc.STAGE_RECEIVED


def _count(value: Any) -> tuple[int | None, bool]:
    """A reported count as given (negative too), and whether it was not a number."""
    if value is None:
        return None, False
    if isinstance(value, bool) or not isinstance(value, int):
        return None, True
    return value, False


def _text(attrs: Mapping[str, Any], name: str) -> str | None:
    value = attrs.get(name)
    return value if isinstance(value, str) and value else None


def _flag(attrs: Mapping[str, Any], name: str) -> bool:
    return attrs.get(name) is True


def _array(attrs: Mapping[str, Any], name: str, kind: type) -> tuple[Any, ...]:
    value = attrs.get(name)
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidSpan(f"{name} must be an array")
    if kind is int:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise InvalidSpan(f"{name} must hold only ints")
    elif not all(isinstance(v, kind) for v in value):
        raise InvalidSpan(f"{name} must hold only {kind.__name__}s")
    return tuple(value)


def received_from_attributes(
    attrs: Mapping[str, Any],
    *,
    trace_id: str,
    span_id: str | None = None,
    observed_at: float = 0.0,
    default_agent: str | None = None,
) -> ReceivedRecord:
    """Read a ``received`` span. Raises :class:`InvalidSpan` only when it is unreadable."""
    request_id = _text(attrs, sc.REQUEST_ID)
    if request_id is None:
        raise InvalidSpan(f"stage {sc.STAGE_RECEIVED!r} needs {sc.REQUEST_ID}")
    inp, bad_input = _count(attrs.get(sc.RECEIVED_INPUT_TOKENS))
    counted, bad_counted = _count(attrs.get(sc.RECEIVED_COUNTED_TOKENS))
    keep, _ = _count(attrs.get(sc.RECEIVED_KEEP_TOKENS))
    step, _ = _count(attrs.get(sc.STEP))
    unreported = _text(attrs, sc.RECEIVED_UNREPORTED)
    if unreported is None and (bad_input or bad_counted):
        unreported = sc.UNREPORTED_INVALID_COUNT
    return ReceivedRecord(
        trace_id=trace_id,
        request_id=request_id,
        input_tokens=inp,
        counted_tokens=counted,
        tokenizer=_text(attrs, sc.TOKENIZER),
        exact=_flag(attrs, sc.TOKENIZER_EXACT),
        policy=_text(attrs, sc.RECEIVED_POLICY),
        declared=_flag(attrs, sc.RECEIVED_DECLARED),
        marked=_flag(attrs, sc.RECEIVED_MARKED),
        segment_call_ids=_array(attrs, sc.RECEIVED_SEGMENT_CALL_IDS, str),
        segment_tokens=_array(attrs, sc.RECEIVED_SEGMENT_TOKENS, int),
        segment_chars=_array(attrs, sc.RECEIVED_SEGMENT_CHARS, int),
        segment_roles=_array(attrs, sc.RECEIVED_SEGMENT_ROLES, str),
        keep_tokens=keep if keep is not None and keep >= 0 else None,
        cleared_call_ids=_array(attrs, sc.RECEIVED_CLEARED_CALL_IDS, str),
        unreported=unreported,
        step=step if step is not None and step >= 0 else None,
        agent_name=_text(attrs, sc.AGENT_NAME) or default_agent,
        observed_at=observed_at,
        span_id=span_id,
        source=_text(attrs, sc.SOURCE) or sc.SOURCE_CTXLEDGER,
    )


def received_attributes(record: ReceivedRecord) -> dict[str, Any]:
    """The span attributes of a record (what the SDK emits; absent values left out)."""
    attrs: dict[str, Any] = {
        sc.STAGE: sc.STAGE_RECEIVED,
        sc.REQUEST_ID: record.request_id,
        sc.TOKENIZER_EXACT: record.exact,
        sc.RECEIVED_DECLARED: record.declared,
        sc.RECEIVED_SEGMENT_CALL_IDS: list(record.segment_call_ids),
        sc.RECEIVED_SEGMENT_TOKENS: list(record.segment_tokens),
        sc.RECEIVED_SEGMENT_CHARS: list(record.segment_chars),
        sc.RECEIVED_SEGMENT_ROLES: list(record.segment_roles),
    }
    optional: dict[str, Any] = {
        sc.RECEIVED_INPUT_TOKENS: record.input_tokens,
        sc.RECEIVED_COUNTED_TOKENS: record.counted_tokens,
        sc.TOKENIZER: record.tokenizer,
        sc.RECEIVED_POLICY: record.policy,
        sc.RECEIVED_KEEP_TOKENS: record.keep_tokens,
        sc.RECEIVED_UNREPORTED: record.unreported,
        sc.STEP: record.step,
        sc.AGENT_NAME: record.agent_name,
    }
    attrs.update({k: v for k, v in optional.items() if v is not None})
    if record.cleared_call_ids:
        attrs[sc.RECEIVED_CLEARED_CALL_IDS] = list(record.cleared_call_ids)
    if record.marked:
        attrs[sc.RECEIVED_MARKED] = True
    if record.source != sc.SOURCE_CTXLEDGER:
        attrs[sc.SOURCE] = record.source
    return attrs


def stored_attributes(m: Measurement, span: Mapping[str, Any]) -> dict[str, Any]:
    """What a ``received`` measurement keeps beside its columns: the outcome the rule
    found (read back by :func:`outcome_fields`) and the span's counts, for the reports."""
    kept: dict[str, Any] = {k: span[k] for k in _SPAN_SUMMARY if span.get(k) is not None}
    kept[sc.RECEIVED_OUTCOME] = m.received
    if m.lost_tokens:
        kept[sc.RECEIVED_LOST_TOKENS] = m.lost_tokens
    if m.lost_chars:
        kept[sc.RECEIVED_LOST_CHARS] = m.lost_chars
    if m.note:
        kept[sc.RECEIVED_NOTE] = m.note
    return kept


def outcome_fields(extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """The :class:`Measurement` fields a stored ``received`` measurement's extra
    attributes give back (none when they hold no outcome)."""
    if not extra or not isinstance(extra.get(sc.RECEIVED_OUTCOME), str):
        return {}
    lost_tokens, _ = _count(extra.get(sc.RECEIVED_LOST_TOKENS))
    lost_chars, _ = _count(extra.get(sc.RECEIVED_LOST_CHARS))
    note = extra.get(sc.RECEIVED_NOTE)
    return {
        "received": extra[sc.RECEIVED_OUTCOME],
        "lost_tokens": lost_tokens or 0,
        "lost_chars": lost_chars or 0,
        "note": note if isinstance(note, str) else None,
    }
