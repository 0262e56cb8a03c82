"""A long run's ``received`` stages from the request before (``ingest/received_runs.py``)
are exactly, in order, those the whole way gives: growing conversations whose requests
the server reads whole or in part, with results rewritten, named again, retried and
sent out of order."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxledger.verdicts import Measurement
from ctxledger_collector.derive import Derived, derive_span
from ctxledger_collector.derive.parsed_prefixes import ParsedPrefixes
from ctxledger_collector.ingest.carried_received import received_stages
from ctxledger_collector.ingest.received_runs import ReadRequests
from tests.collector.test_carried_received import counted_tokens, with_usage
from tests.collector.test_parsed_prefixes import TEXTS, chat_span, step_messages

RESULT_TEXTS = st.text(alphabet=st.sampled_from("ab 订单状态é😀\n"), min_size=1, max_size=60)


@st.composite
def growing_requests(draw: st.DrawFn) -> list[tuple[str, int]]:
    """Each request's messages and how many tokens short of our count the server read."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "parts": [{"type": "text", "content": "You help."}]},
        {"role": "user", "parts": [{"type": "text", "content": draw(TEXTS)}]},
    ]
    requests: list[tuple[str, int]] = []
    for step in range(draw(st.integers(2, 9))):
        messages += step_messages(step, draw(RESULT_TEXTS), captured=True)
        change = draw(st.sampled_from(["none"] * 5 + ["rewrite", "again"]))
        if change == "rewrite":  # an earlier result's text changes from here on
            index = draw(st.integers(0, step))
            messages[3 + 2 * index] = step_messages(index, draw(RESULT_TEXTS), True)[1]
        elif change == "again":  # an earlier call's result sent once more
            messages += step_messages(draw(st.integers(0, step)), draw(RESULT_TEXTS), True)[1:]
        shortfall = draw(st.sampled_from([0, 0, 0, 0, 400]))
        requests.append((json.dumps(messages, ensure_ascii=False), shortfall))
        if draw(st.integers(0, 6)) == 0:
            requests.append(requests[-1])  # a retry
    if len(requests) > 2 and draw(st.integers(0, 4)) == 0:
        index = draw(st.integers(0, len(requests) - 2))
        requests[index], requests[index + 1] = requests[index + 1], requests[index]
    return requests


def _received(derived: Derived, runs: ReadRequests) -> tuple[list[Measurement], ...]:
    assert derived.received is not None
    own_stages = {s.measurement.tool_call_id: s.measurement for s in derived.stages}

    def sent_stages() -> Mapping[str, Measurement]:
        return {**{m.tool_call_id: m for m in derived.carried}, **own_stages}

    carried = tuple(derived.carried)
    return received_stages(
        derived.received, sent_stages, derived.manifest, carried, own_stages, runs
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(growing_requests())
def test_received_stages_from_the_request_before_are_those_of_the_whole_way(
    requests: list[tuple[str, int]],
) -> None:
    kept, runs = ParsedPrefixes(min_chars=0), ReadRequests()
    for index, (text, shortfall) in enumerate(requests):
        span = chat_span(index, text, "conv-1")
        span.attributes["server.port"] = 11434  # ollama: drops the oldest messages
        span = with_usage(span, max(counted_tokens(span) - shortfall, 0))
        derived = derive_span(span, prefixes=kept)
        if derived is None or derived.received is None:
            continue
        whole_way = _received(derived, ReadRequests(max_runs=0))
        assert _received(derived, runs) == whole_way


def test_a_run_read_whole_goes_on_from_the_request_before() -> None:
    """The property above is not vacuous: an unchanged run goes on every time it can."""
    kept, runs = ParsedPrefixes(min_chars=0), ReadRequests()
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": "go"}]}
    ]
    for index in range(10):
        messages += step_messages(index, f"结果 {index} " * 40, captured=True)
        span = chat_span(index, json.dumps(messages, ensure_ascii=False), "conv-2")
        derived = derive_span(with_usage(span, counted_tokens(span)), prefixes=kept)
        assert derived is not None and derived.received is not None
        assert _received(derived, runs) == _received(derived, ReadRequests(max_runs=0))
    assert runs.went_on == 8
