"""Span attributes <-> rule records. Pure; standard library only.

Both the SDK's local ledger and the collector's OTLP decoder read spans through these
functions, so a span means the same thing wherever it is judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from ctxledger import semconv as sc
from ctxledger.verdicts.model import Manifest, Measurement

#: Sizes, counts and steps are 32-bit signed integers on the wire's storage side.
_MAX_INT = 2**31 - 1
#: A request's sequence is a 64-bit signed integer (a time in microseconds, say).
_MAX_SEQUENCE = 2**63 - 1


#: The attributes a stage measurement record carries; anything else a span holds is
#: outside the contract (kept as received by the collector).
MEASUREMENT_ATTRIBUTES: frozenset[str] = frozenset(
    {
        sc.STAGE,
        sc.STAGE_ORDER,
        sc.TOOL_CALL_ID,
        sc.TOOL_NAME,
        sc.REQUEST_ID,
        sc.STEP,
        sc.AGENT_NAME,
        sc.SIZE_CHARS,
        sc.SIZE_BYTES,
        sc.SIZE_TOKENS,
        sc.TOKENIZER,
        sc.SIZE_TOKENS_ESTIMATED,
        sc.SIZE_CANONICAL_CHARS,
        sc.SIZE_ITEMS,
        sc.ITEMS_IDS,
        sc.ITEMS_IDS_COMPLETE,
        sc.ITEMS_FIELDS,
        sc.ITEMS_FIELDS_COMPLETE,
        sc.ITEMS_PRIORITY,
        sc.CONTENT_SHA256,
        sc.CONTENT_CANONICAL_SHA256,
        sc.JSON_VALID,
        sc.TRUNCATION_DECLARED,
        sc.TRUNCATION_STRATEGY,
        sc.TRUNCATION_MARKER,
        sc.TRUNCATION_MARKERS_FOUND,
        sc.TRUNCATION_REF,
        sc.SOURCE,
        sc.TELEMETRY_CUT,
        sc.MATCH_INFERRED,
    }
)
#: The attributes a request manifest record carries (the tokenizer of its token count
#: included).
MANIFEST_ATTRIBUTES: frozenset[str] = frozenset(
    {
        sc.REQUEST_ID,
        sc.STEP,
        sc.REQUEST_TOOL_CALL_IDS,
        sc.REQUEST_TOOL_CALLS,
        sc.REQUEST_TOKENS,
        sc.TOKENIZER,
        sc.REQUEST_CONTEXT_WINDOW,
        sc.REQUEST_MODEL,
        sc.AGENT_NAME,
        sc.SDK_DROPPED_SPANS,
        sc.SOURCE,
        sc.REQUEST_ISSUED_CALLS,
        sc.REQUEST_CONVERSATION,
        sc.REQUEST_SEQUENCE,
        sc.TELEMETRY_CUT,
    }
)


class InvalidSpan(ValueError):
    """A span that claims to be a measurement or manifest but breaks the contract."""


def is_measurement(attributes: Mapping[str, Any]) -> bool:
    return sc.STAGE in attributes


def is_manifest(attributes: Mapping[str, Any]) -> bool:
    return (
        sc.STAGE not in attributes
        and sc.REQUEST_ID in attributes
        and sc.REQUEST_TOOL_CALL_IDS in attributes
    )


# Each reader returns at once for the common well-typed value (an exact type check) and
# leaves everything else to the careful path that explains what is wrong.


def _int(attrs: Mapping[str, Any], name: str, *, required: bool = False) -> int | None:
    value = attrs.get(name)
    if type(value) is int and 0 <= value <= _MAX_INT:
        return value
    return _checked_int(value, name, required)


def _sequence(attrs: Mapping[str, Any], name: str) -> int | None:
    value = attrs.get(name)
    if type(value) is int and 0 <= value <= _MAX_SEQUENCE:
        return value
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSpan(f"{name} must be a non-negative int, got {value!r}")
    raise InvalidSpan(f"{name} is too large ({value} > {_MAX_SEQUENCE:,})")


def _checked_int(value: Any, name: str, required: bool) -> int | None:
    if value is None:
        if required:
            raise InvalidSpan(f"{name} is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSpan(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 0:
        raise InvalidSpan(f"{name} must not be negative, got {value}")
    if value > _MAX_INT:
        raise InvalidSpan(f"{name} is too large ({value} > {_MAX_INT:,})")
    return value


def _str(attrs: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = attrs.get(name)
    if type(value) is str and value:
        return value
    if value is None or value == "":
        if required:
            raise InvalidSpan(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise InvalidSpan(f"{name} must be a string, got {type(value).__name__}")
    return value


def _bool(attrs: Mapping[str, Any], name: str, default: bool | None) -> bool | None:
    value = attrs.get(name)
    if type(value) is bool:
        return value
    if value is None:
        return default
    raise InvalidSpan(f"{name} must be a bool, got {type(value).__name__}")


def _strs(attrs: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    value = attrs.get(name)
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidSpan(f"{name} must be an array of strings")
    if not all(map(isinstance, value, repeat(str))):
        raise InvalidSpan(f"{name} must hold only strings")
    return tuple(value)


def measurement_from_attributes(
    attrs: Mapping[str, Any],
    *,
    trace_id: str,
    span_id: str | None = None,
    observed_at: float = 0.0,
    dropped_attributes: int = 0,
    default_agent: str | None = None,
) -> Measurement:
    """Read a stage measurement span. Raises :class:`InvalidSpan` saying what is wrong.
    ``default_agent`` names the agent when the span does not (the resource's service)."""
    stage = _str(attrs, sc.STAGE, required=True)
    assert stage is not None
    order = _int(attrs, sc.STAGE_ORDER)
    if order is None:
        if stage not in sc.BUILTIN_STAGE_ORDER:
            raise InvalidSpan(f"custom stage {stage!r} needs {sc.STAGE_ORDER}")
        order = sc.BUILTIN_STAGE_ORDER[stage]
    request_id = _str(attrs, sc.REQUEST_ID)
    if request_id is None and stage in (sc.STAGE_ASSEMBLED, sc.STAGE_SENT):
        raise InvalidSpan(f"stage {stage!r} needs {sc.REQUEST_ID}")
    tokens = _int(attrs, sc.SIZE_TOKENS)
    tokenizer = _str(attrs, sc.TOKENIZER)
    ids_complete = _bool(attrs, sc.ITEMS_IDS_COMPLETE, True)
    fields_complete = _bool(attrs, sc.ITEMS_FIELDS_COMPLETE, True)
    return Measurement(
        trace_id=trace_id,
        tool_call_id=_str(attrs, sc.TOOL_CALL_ID, required=True) or "",
        stage=stage,
        order=order,
        chars=_int(attrs, sc.SIZE_CHARS, required=True) or 0,
        request_id=request_id,
        tool_name=_str(attrs, sc.TOOL_NAME),
        agent_name=_str(attrs, sc.AGENT_NAME) or default_agent,
        step=_int(attrs, sc.STEP),
        bytes=_int(attrs, sc.SIZE_BYTES),
        tokens=tokens,
        tokenizer=tokenizer if tokens is not None else None,
        tokens_estimated=bool(_bool(attrs, sc.SIZE_TOKENS_ESTIMATED, False)),
        canonical_chars=_int(attrs, sc.SIZE_CANONICAL_CHARS),
        items=_int(attrs, sc.SIZE_ITEMS),
        item_ids=_strs(attrs, sc.ITEMS_IDS),
        ids_complete=bool(ids_complete),
        fields=_strs(attrs, sc.ITEMS_FIELDS),
        fields_complete=bool(fields_complete),
        priority_items=_int(attrs, sc.ITEMS_PRIORITY),
        sha256=_str(attrs, sc.CONTENT_SHA256),
        canonical_sha256=_str(attrs, sc.CONTENT_CANONICAL_SHA256),
        json_valid=_bool(attrs, sc.JSON_VALID, None),
        declared=bool(_bool(attrs, sc.TRUNCATION_DECLARED, False)),
        strategy=_str(attrs, sc.TRUNCATION_STRATEGY),
        marker=bool(_bool(attrs, sc.TRUNCATION_MARKER, False)),
        markers_found=_strs(attrs, sc.TRUNCATION_MARKERS_FOUND) or (),
        ref=_str(attrs, sc.TRUNCATION_REF),
        dropped_attributes=dropped_attributes,
        observed_at=observed_at,
        span_id=span_id,
        source=_str(attrs, sc.SOURCE) or sc.SOURCE_CTXLEDGER,
        telemetry_cut=_str(attrs, sc.TELEMETRY_CUT),
        inferred=bool(_bool(attrs, sc.MATCH_INFERRED, False)),
    )


def manifest_from_attributes(
    attrs: Mapping[str, Any],
    *,
    trace_id: str,
    span_id: str | None = None,
    observed_at: float = 0.0,
    default_agent: str | None = None,
) -> Manifest:
    """Read a request manifest span. Raises :class:`InvalidSpan` saying what is wrong."""
    return Manifest(
        trace_id=trace_id,
        request_id=_str(attrs, sc.REQUEST_ID, required=True) or "",
        step=_int(attrs, sc.STEP),
        tool_call_ids=_strs(attrs, sc.REQUEST_TOOL_CALL_IDS) or (),
        tool_calls=_strs(attrs, sc.REQUEST_TOOL_CALLS),
        tokens=_int(attrs, sc.REQUEST_TOKENS),
        tokenizer=_str(attrs, sc.TOKENIZER),
        context_window=_int(attrs, sc.REQUEST_CONTEXT_WINDOW),
        model=_str(attrs, sc.REQUEST_MODEL),
        agent_name=_str(attrs, sc.AGENT_NAME) or default_agent,
        sdk_dropped_spans=_int(attrs, sc.SDK_DROPPED_SPANS),
        observed_at=observed_at,
        span_id=span_id,
        source=_str(attrs, sc.SOURCE) or sc.SOURCE_CTXLEDGER,
        conversation=_str(attrs, sc.REQUEST_CONVERSATION),
        sequence=_sequence(attrs, sc.REQUEST_SEQUENCE),
        issued_calls=_strs(attrs, sc.REQUEST_ISSUED_CALLS),
        telemetry_cut=_str(attrs, sc.TELEMETRY_CUT),
    )
