"""What Codex handed the model of a long tool output, from the tokens the request after
it added (:mod:`ctxledger_collector.derive.codex_kept`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctxledger_collector.derive.codex_kept import (
    CUT_OVERHEAD,
    Evidence,
    Kept,
    kept_by_codex,
)

LONG = 260_107  # Codex's recorded output_length of 260,001 printed bytes
PER_TOKEN = 3.24  # this output's bytes per token (o200k)


def _tokens(size: int, per_token: float = PER_TOKEN) -> int:
    return round(size / per_token)


def test_a_cut_is_read_at_the_budget_its_tokens_fit() -> None:
    ten_kb = kept_by_codex(Evidence(LONG, _tokens(10_213), PER_TOKEN))
    assert ten_kb is not None and ten_kb.bytes == 10_000 + CUT_OVERHEAD
    assert ten_kb.budget is not None and "10,000 bytes" in ten_kb.budget
    forty_kb = kept_by_codex(Evidence(LONG, _tokens(40_213), PER_TOKEN))
    assert forty_kb is not None and forty_kb.bytes == 40_000 + CUT_OVERHEAD


def test_a_whole_output_needs_the_call_to_allow_it() -> None:
    """Without ``max_output_tokens`` in its arguments a call caps the output at 10,000
    tokens: a 260 KB output is never whole, whatever its usage says."""
    assert kept_by_codex(Evidence(LONG, _tokens(LONG), PER_TOKEN)) is None
    asked = Evidence(LONG, _tokens(LONG), PER_TOKEN, max_output_tokens=200_000)
    assert kept_by_codex(asked) == Kept(LONG, None)


def test_the_calls_own_max_output_tokens_is_a_budget_and_caps_the_others() -> None:
    asked = Evidence(LONG, _tokens(12_213), PER_TOKEN, max_output_tokens=3_000)
    kept = kept_by_codex(asked)
    assert kept is not None and kept.bytes == 12_000 + CUT_OVERHEAD
    assert kept.budget is not None and "max_output_tokens (3000)" in kept.budget
    # 40,000 bytes is above what the call allows: never a candidate.
    assert (
        kept_by_codex(Evidence(LONG, _tokens(40_213), PER_TOKEN, max_output_tokens=3_000)) is None
    )


def test_usage_that_fits_no_budget_or_both_a_cut_and_the_whole_gives_no_verdict() -> None:
    assert kept_by_codex(Evidence(LONG, _tokens(20_000), PER_TOKEN)) is None  # a custom limit
    # 12,000 bytes whole, or cut to 10,000: too near to tell apart.
    assert kept_by_codex(Evidence(12_000, _tokens(11_000), PER_TOKEN)) is None
    assert kept_by_codex(Evidence(LONG, 0, PER_TOKEN)) is None
    assert kept_by_codex(Evidence(LONG, -50, PER_TOKEN)) is None
    assert kept_by_codex(Evidence(LONG, 3_000, 0.0)) is None
    # Other outputs of the same request account for all of it.
    assert kept_by_codex(Evidence(LONG, _tokens(10_213), PER_TOKEN, other_bytes=20_000)) is None


def test_other_outputs_carried_whole_by_the_same_request_are_taken_off() -> None:
    both = Evidence(LONG, _tokens(10_213 + 30_000), PER_TOKEN, other_bytes=30_000)
    kept = kept_by_codex(both)
    assert kept is not None and kept.bytes == 10_000 + CUT_OVERHEAD


@given(
    output_bytes=st.integers(1, 2_000_000),
    added_tokens=st.integers(-10, 600_000),
    per_token=st.floats(0.5, 12.0),
    other=st.integers(0, 50_000),
    asked=st.none() | st.integers(1, 500_000),
)
def test_never_more_than_the_output_and_whole_only_when_so_named(
    output_bytes: int, added_tokens: int, per_token: float, other: int, asked: int | None
) -> None:
    kept = kept_by_codex(Evidence(output_bytes, added_tokens, per_token, other, asked))
    if kept is not None:
        assert 0 < kept.bytes <= output_bytes
        assert (kept.budget is None) == (kept.bytes == output_bytes)
