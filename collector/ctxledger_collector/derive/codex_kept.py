"""How much of a long tool output Codex handed the model, from the usage of the requests
around it: the request after the output reports more input tokens than the one before,
by the tokens of what was added between them (the response's own output items, then the
tool output as Codex kept it).

Codex keeps a cut output's head and tail to a budget in bytes and adds its own lines
(:data:`CUT_OVERHEAD`); the budget is one of a few values (:data:`DEFAULT_BUDGETS`),
never more than four bytes per token of the call's ``max_output_tokens``, unless
config.toml names a smaller one. The tokens added, at the bytes per token of the
output's telemetry preview, give an estimate of the bytes the model read; the budget (or
the whole output) that estimate is near, and no other, is what the model read. Anything
else, no verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

#: Codex's budgets, in bytes: 10,000 bytes (the truncation policy of a model Codex has
#: no metadata for), 10,000 tokens at 4 bytes each (its models' policy, and the
#: default ``max_output_tokens`` of a call).
DEFAULT_BUDGETS: Final = {
    10_000: "10,000 bytes, Codex's limit for a model it has no metadata for",
    40_000: "10,000 tokens (counted as 40,000 bytes), Codex's default limit",
}
#: Bytes Codex adds to a cut output: its ``Chunk ID``/``Wall time``/exit code/``Output:``
#: lines (~106), ``Warning: truncated output (original token count: N)`` and
#: ``Total output lines: L`` (~79), the ``…N chars truncated…`` marker (~28). Measured
#: with Codex 0.171.0; its digits vary by a few bytes, far under 1 % of any budget.
CUT_OVERHEAD: Final = 213
BYTES_PER_MAX_OUTPUT_TOKEN: Final = 4
#: A call's ``max_output_tokens`` when it asks for none.
DEFAULT_MAX_OUTPUT_TOKENS: Final = 10_000
#: How far the estimate may be from a budget's size and still be that budget: the
#: preview's bytes per token stand for the head and tail the model read.
TOLERANCE: Final = 1.35
CLEARLY_NEARER: Final = 3.0
SETTINGS: Final = "tool_output_token_limit in config.toml and the call's max_output_tokens"


@dataclass(frozen=True)
class Kept:
    """What the model read of an output: its bytes, and why (None: the whole output)."""

    bytes: int
    budget: str | None


@dataclass(frozen=True)
class Evidence:
    """What the telemetry shows of one output and the requests around it."""

    output_bytes: int
    #: Input tokens of the request after the output less the request before (and less
    #: that request's output tokens, the items its response added).
    added_tokens: int
    bytes_per_token: float
    #: Bytes of the other outputs the request after carried whole.
    other_bytes: int = 0
    max_output_tokens: int | None = None


def _candidates(evidence: Evidence) -> dict[int, str | None]:
    """The sizes the model can have read, each with the budget that cut it (None: whole).

    The call's ``max_output_tokens`` (10,000 unless it asks for more) caps any budget:
    no budget above it, and no whole output longer than it."""
    asked = evidence.max_output_tokens
    cap = (asked or DEFAULT_MAX_OUTPUT_TOKENS) * BYTES_PER_MAX_OUTPUT_TOKEN
    budgets: dict[int, str | None] = {b: label for b, label in DEFAULT_BUDGETS.items() if b <= cap}
    if asked:
        budgets.setdefault(cap, f"the call's max_output_tokens ({asked})")
    kept = {
        budget + CUT_OVERHEAD: label
        for budget, label in budgets.items()
        if budget + CUT_OVERHEAD < evidence.output_bytes
    }
    if evidence.output_bytes <= cap + CUT_OVERHEAD:
        kept[evidence.output_bytes] = None
    return kept


def kept_by_codex(evidence: Evidence) -> Kept | None:
    """The size the usage shows the model read, or None when it fits no budget, or fits
    more than one and the whole output is one of them.

    Of two budgets near the estimate, both cuts declared by Codex's marker, the nearer is
    taken where the other is at least :data:`CLEARLY_NEARER` times as far."""
    if min(evidence.added_tokens, evidence.bytes_per_token, evidence.output_bytes) <= 0:
        return None
    estimate = evidence.added_tokens * evidence.bytes_per_token - evidence.other_bytes
    if estimate <= 0:
        return None
    distances = sorted(
        (abs(math.log(estimate / size)), size, label)
        for size, label in _candidates(evidence).items()
    )
    near = [d for d in distances if d[0] <= math.log(TOLERANCE)]
    if not near:
        return None
    distance, size, label = near[0]
    if len(near) > 1:
        whole_among = any(found[2] is None for found in near)
        if whole_among or near[1][0] < CLEARLY_NEARER * distance:
            return None
    return Kept(size, label)
