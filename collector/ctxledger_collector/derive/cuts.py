"""When the telemetry itself could not show a value whole. Such a value is never judged
as pipeline loss: derivation records why (``telemetry_cut``) and the journey is
``unauditable``, with the reason and the fix in its report.

The OpenTelemetry SDK slices attribute values at ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``
(``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT``) without a marker, and evicts the oldest
attributes past ``OTEL_ATTRIBUTE_COUNT_LIMIT`` (128 by default), counting them in the
span's ``dropped_attributes_count``; OpenLLMetry's tool decorator slices its JSON output
at the same limit. A cut shows as JSON that no longer parses where the convention asks
for JSON, or as a value exactly as long as such a cut one, or exactly at a limit people
commonly set.
"""

from __future__ import annotations

from collections.abc import Collection

#: Value length limits commonly configured (powers of two, their off-by-one forms, round
#: numbers). A tool result exactly this long is taken for a cut one.
COMMON_LIMITS = frozenset(
    {1024, 2047, 2048, 4095, 4096, 8191, 8192, 10_000, 16_383, 16_384, 32_767, 32_768,
     65_535, 65_536, 100_000, 131_072, 1_000_000, 1_048_576}
)  # fmt: skip

_FIX_LENGTH = (
    "raise OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT (or OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT), "
    "or add ctxledger's stage spans"
)
_FIX_COUNT = (
    "raise OTEL_ATTRIBUTE_COUNT_LIMIT (or OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT), "
    "or add ctxledger's stage spans"
)
_FIX_CONTENT = "capture message content on spans, or add ctxledger's stage spans"


def looks_cut(length: int, cut_lengths: Collection[int]) -> bool:
    """Whether a value of ``length`` chars was likely sliced by a length limit."""
    return length in COMMON_LIMITS or length in cut_lengths


def invalid_json(attribute: str, length: int) -> str:
    return (
        f"{attribute} is not valid JSON at {length} chars: cut by an attribute length limit "
        f"(no marker); {_FIX_LENGTH}"
    )


def at_limit(what: str, length: int) -> str:
    return (
        f"{what} is exactly {length} chars, the length of an attribute limit: cut by the "
        f"telemetry (no marker); {_FIX_LENGTH}"
    )


def evicted(count: int) -> str:
    return (
        f"the span lost {count} attributes to the attribute count limit, so messages may "
        f"be missing; {_FIX_COUNT}"
    )


def off_span(reference: str) -> str:
    return (
        f"the messages are stored off span ({reference}); ctxledger reads span content "
        f"only: {_FIX_CONTENT}"
    )


def redacted(attribute: str) -> str:
    return (
        f"{attribute} is redacted by OpenInference's OPENINFERENCE_HIDE_* settings: {_FIX_CONTENT}"
    )


def no_content(attribute: str) -> str:
    return f"the span carries no {attribute} (content capture is off): {_FIX_CONTENT}"


def ends_like_json(text: str) -> bool:
    """A cheap check that a JSON document is whole: it ends as one must."""
    return text.rstrip().endswith(("}", "]", '"'))
