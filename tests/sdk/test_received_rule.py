"""The model server's layer (issue 29): the pure rule of stage ``received``, its expansion
into measurements and what the journey rules make of them.

Each policy, declared and marked edits, the exact and the approximate tolerance at their
edges, and bad input (no usage, negative, absurd, unreported): no verdict and a note that
says why, never an exception.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement, Report, judge_trace
from ctxledger.verdicts.model import ReceivedRecord
from ctxledger.verdicts.received import (
    CLEARED,
    CUT,
    DEFAULT_TOLERANCE,
    DROPPED,
    KEPT,
    UNJUDGED,
    judge_received,
)
from ctxledger.verdicts.received_stages import received_measurements
from ctxledger.verdicts.vocabulary import LAYER_MODEL_SERVER
from ctxledger.wire import InvalidSpan
from ctxledger.wire_received import (
    outcome_fields,
    received_attributes,
    received_from_attributes,
    stored_attributes,
)

TRACE = "ab" * 16
REQUEST = "req_2"
TOKENIZER = "o200k_base"
#: system, user, assistant (two parallel calls), the two results, in order.
ROLES = (sc.ROLE_SYSTEM, sc.ROLE_USER, sc.ROLE_ASSISTANT, sc.ROLE_TOOL, sc.ROLE_TOOL)
CALL_IDS = ("", "", "", "call_a", "call_b")
TOKENS = (100, 50, 50, 800, 400)
CHARS = (400, 200, 200, 3200, 1600)
COUNTED = sum(TOKENS)


def record(input_tokens: int | None, **overrides: Any) -> ReceivedRecord:
    fields: dict[str, Any] = {
        "trace_id": TRACE,
        "request_id": REQUEST,
        "input_tokens": input_tokens,
        "counted_tokens": COUNTED,
        "tokenizer": TOKENIZER,
        "exact": True,
        "policy": sc.POLICY_FRONT_DISCARD,
        "segment_call_ids": CALL_IDS,
        "segment_tokens": TOKENS,
        "segment_chars": CHARS,
        "segment_roles": ROLES,
        "step": 2,
    }
    fields.update(overrides)
    return ReceivedRecord(**fields)


def outcomes(rec: ReceivedRecord) -> dict[str, str]:
    return {r.call_id: r.outcome for r in judge_received(rec).results}


def sent(call_id: str, tokens: int, chars: int) -> Measurement:
    return Measurement(
        TRACE, call_id, sc.STAGE_SENT, 40, chars=chars, tokens=tokens, tokenizer=TOKENIZER,
        request_id=REQUEST, step=2, tool_name="search",
    )  # fmt: skip


def judged(rec: ReceivedRecord) -> dict[str, Report]:
    """The journeys of both results: sent, then what the server's count made of them."""
    stages = [sent("call_a", 800, 3200), sent("call_b", 400, 1600)]
    stages += received_measurements(rec, {m.tool_call_id: m for m in stages})
    manifest = Manifest(TRACE, REQUEST, step=2, tool_call_ids=("call_a", "call_b"))
    return {r.tool_call_id: r for r in judge_trace(stages, [manifest])}


# --- tolerance -------------------------------------------------------------------------


def test_the_exact_tolerance_is_two_percent_or_32_tokens() -> None:
    assert DEFAULT_TOLERANCE.tokens(1_000, exact=True) == 32
    assert DEFAULT_TOLERANCE.tokens(10_000, exact=True) == 200
    assert DEFAULT_TOLERANCE.tokens(100, exact=False) == 64
    assert DEFAULT_TOLERANCE.tokens(10_000, exact=False) == 3_000


@pytest.mark.parametrize("exact", [True, False])
def test_a_shortfall_at_the_tolerance_is_intact_and_one_token_more_is_not(exact: bool) -> None:
    # The first result comes right after the system prompt: a discarded token is its.
    segments = {
        "segment_call_ids": ("", "call_a", "call_b"),
        "segment_tokens": (200, 800, 400),
        "segment_chars": (800, 3200, 1600),
        "segment_roles": (sc.ROLE_SYSTEM, sc.ROLE_TOOL, sc.ROLE_TOOL),
    }
    allowed = DEFAULT_TOLERANCE.tokens(COUNTED, exact)
    at_edge = record(COUNTED - allowed, exact=exact, **segments)
    assert set(outcomes(at_edge).values()) == {KEPT}
    beyond = record(COUNTED - allowed - 1, exact=exact, **segments)
    result = judge_received(beyond)
    assert result.discarded_tokens == 1
    assert outcomes(beyond) == {"call_a": DROPPED, "call_b": KEPT}


def test_a_server_that_reports_more_than_counted_never_flags() -> None:
    assert set(outcomes(record(COUNTED * 3)).values()) == {KEPT}


@pytest.mark.parametrize("scale", [0.8, 0.9, 1.1, 1.2])
def test_a_twenty_percent_tokenizer_difference_is_never_a_loss(scale: float) -> None:
    """Our count is off by up to 20 % either way; the server read every token."""
    ours = [round(t * scale) for t in TOKENS]
    rec = record(COUNTED, exact=False, segment_tokens=tuple(ours), counted_tokens=sum(ours))
    assert set(outcomes(rec).values()) == {KEPT}


@pytest.mark.parametrize("scale", [0.8, 1.0, 1.2])
def test_a_server_that_keeps_forty_percent_always_loses_something(scale: float) -> None:
    ours = [round(t * scale) for t in TOKENS]
    server_read = round(0.4 * COUNTED)  # in the server's own tokens
    rec = record(server_read, exact=False, segment_tokens=tuple(ours), counted_tokens=sum(ours))
    assert judge_received(rec).lost, scale


# --- policies --------------------------------------------------------------------------


def test_front_discard_of_the_first_of_two_parallel_results_drops_it_alone() -> None:
    # The server dropped user, assistant and the first result: 900 tokens.
    rec = record(COUNTED - 900)
    assert outcomes(rec) == {"call_a": DROPPED, "call_b": KEPT}
    reports = judged(rec)
    lost = reports["call_a"]
    assert lost.verdict == sc.VERDICT_DROPPED
    assert [(t.from_stage, t.to_stage, t.verdict) for t in lost.transitions] == [
        (sc.STAGE_SENT, sc.STAGE_RECEIVED, sc.VERDICT_DROPPED)
    ]
    assert lost.layer == LAYER_MODEL_SERVER
    assert (lost.lost_tokens, lost.lost_chars) == (800, 3200)
    assert "read 500 of the 1,400 tokens sent" in lost.notes[0]
    assert reports["call_b"].verdict == sc.VERDICT_INTACT
    assert reports["call_b"].lost_tokens == 0


def test_front_discard_drops_a_result_it_reached_into_whole() -> None:
    """ollama drops whole messages: a result the certain discard reaches into is gone."""
    rec = record(COUNTED - 300)  # user, assistant and 200 tokens' worth beyond tolerance
    result = judge_received(rec)
    assert outcomes(rec) == {"call_a": DROPPED, "call_b": KEPT}
    assert result.lost[0].lost_tokens == 800


def test_an_unknown_policy_is_taken_as_front_discard_and_says_so() -> None:
    rec = record(COUNTED - 300, policy=None)
    result = judge_received(rec)
    # Not known to discard whole messages: only the part certainly discarded is lost.
    assert outcomes(rec) == {"call_a": CUT, "call_b": KEPT}
    assert result.lost[0].lost_tokens == 300 - 32 - 100
    assert "policy is unknown: assumed it discards the oldest" in result.notes[0]
    assert judged(rec)["call_a"].verdict == sc.VERDICT_SILENT


def test_token_truncation_cuts_after_the_kept_tokens() -> None:
    # llama.cpp kept the first 200 tokens (system, user, assistant), then cut 432.
    rec = record(COUNTED - 432, policy=sc.POLICY_TOKEN_TRUNCATE, keep_tokens=200)
    result = judge_received(rec)
    assert outcomes(rec) == {"call_a": CUT, "call_b": KEPT}
    cut = result.lost[0]
    assert cut.lost_tokens == 400
    assert cut.lost_chars == 1600  # chars x overlap / tokens
    report = judged(rec)["call_a"]
    assert report.verdict == sc.VERDICT_SILENT
    assert (report.lost_tokens, report.lost_chars) == (400, 1600)


def test_middle_discard_takes_the_middle_of_the_non_system_segments() -> None:
    rec = record(COUNTED - 332, policy=sc.POLICY_MIDDLE_DISCARD)  # 300 certainly gone
    # Non-system tokens: 50 + 50 + 800 + 400 = 1,300; the middle 300 is [500, 800).
    assert outcomes(rec) == {"call_a": CUT, "call_b": KEPT}
    assert judge_received(rec).lost[0].lost_tokens == 300


def test_provider_edit_clears_exactly_the_named_results() -> None:
    rec = record(
        COUNTED - 10,
        policy=sc.POLICY_PROVIDER_EDIT,
        cleared_call_ids=("call_a", "call_elsewhere"),
        declared=True,
        marked=True,
    )
    result = judge_received(rec)
    assert outcomes(rec) == {"call_a": CLEARED, "call_b": KEPT}
    assert "not in the request: call_elsewhere" in result.notes[0]
    reports = judged(rec)
    assert reports["call_a"].verdict == sc.VERDICT_DECLARED  # the model sees a placeholder
    assert reports["call_a"].layer == LAYER_MODEL_SERVER
    assert reports["call_b"].verdict == sc.VERDICT_INTACT


def test_a_reduction_declared_only_in_the_response_is_unmarked() -> None:
    rec = record(COUNTED - 900, declared=True)
    assert judged(rec)["call_a"].verdict == sc.VERDICT_UNMARKED
    edited = record(
        COUNTED, policy=sc.POLICY_PROVIDER_EDIT, cleared_call_ids=("call_b",), declared=True
    )
    assert judged(edited)["call_b"].verdict == sc.VERDICT_UNMARKED


def test_a_cleared_result_the_server_did_not_declare_is_dropped() -> None:
    rec = record(COUNTED, policy=sc.POLICY_PROVIDER_EDIT, cleared_call_ids=("call_b",))
    assert judged(rec)["call_b"].verdict == sc.VERDICT_DROPPED


def test_tokens_counted_outside_the_segments_are_never_taken_as_discarded() -> None:
    """Overhead (reply priming, tool definitions) may be what the server left out."""
    rec = record(COUNTED - 300, counted_tokens=COUNTED + 200, policy=None)
    result = judge_received(rec)
    assert result.discarded_tokens == 500 - 32 - 200
    assert result.lost[0].lost_tokens == 500 - 32 - 200 - 100


def test_a_server_that_refuses_loses_nothing() -> None:
    rec = record(10, policy=sc.POLICY_REFUSE)
    assert set(outcomes(rec).values()) == {KEPT}


# --- bad input ------------------------------------------------------------------------


BAD = {
    "no usage": ({"input_tokens": None}, "the response reported no usage"),
    "negative": ({"input_tokens": -5}, "a negative count (-5)"),
    "absurd": ({"input_tokens": COUNTED * 4 + 1}, "not a count of this request"),
    "not counted": ({"counted_tokens": None}, "the request as sent was not counted"),
    "unreported stream": (
        {"input_tokens": None, "unreported": sc.UNREPORTED_STREAM_WITHOUT_USAGE},
        "stream_options.include_usage",
    ),
    "stream cut": ({"unreported": sc.UNREPORTED_STREAM_CUT}, "cut off before its usage"),
    "invalid": ({"unreported": sc.UNREPORTED_INVALID_COUNT}, "not a valid count"),
    "segments": ({"segment_tokens": (1, 2)}, "segments do not line up"),
    "negative segment": ({"segment_tokens": (100, -50, 50, 800, 400)}, "negative size"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_gives_no_verdict_and_says_why(case: str) -> None:
    overrides, why = BAD[case]
    rec = record(**{"input_tokens": 10, **overrides})
    result = judge_received(rec)
    assert result.reason is not None and why in result.reason
    assert {r.outcome for r in result.results} == {UNJUDGED}
    for report in judged(rec).values():
        assert report.verdict == sc.VERDICT_INTACT
        assert any(why in note for note in report.notes), report.notes


def test_a_span_with_bad_counts_is_read_not_rejected() -> None:
    attrs = received_attributes(record(100))
    attrs[sc.RECEIVED_INPUT_TOKENS] = "a lot"
    rec = received_from_attributes(attrs, trace_id=TRACE)
    assert rec.unreported == sc.UNREPORTED_INVALID_COUNT
    assert judge_received(rec).reason is not None
    del attrs[sc.REQUEST_ID]
    with pytest.raises(InvalidSpan, match=r"needs ctxledger\.request\.id"):
        received_from_attributes(attrs, trace_id=TRACE)


# --- the wire and the stored form ------------------------------------------------------


def test_the_span_round_trips_through_its_attributes() -> None:
    rec = record(
        COUNTED - 900,
        policy=sc.POLICY_PROVIDER_EDIT,
        cleared_call_ids=("call_a",),
        marked=True,
        declared=True,
        keep_tokens=7,
        agent_name="agent",
    )
    back = received_from_attributes(received_attributes(rec), trace_id=TRACE)
    assert back == rec


def test_a_stored_received_measurement_judges_as_the_decoded_one() -> None:
    rec = record(COUNTED - 300, policy=None)
    attrs = received_attributes(rec)
    for m in received_measurements(rec):
        stored = stored_attributes(m, attrs)
        assert stored[sc.RECEIVED_COUNTED_TOKENS] == COUNTED
        fields = outcome_fields(stored)
        assert replace(m, received=None, lost_chars=0, lost_tokens=0, note=None) != m
        assert replace(m, **fields) == m
