"""A request's ``received`` stages, those of its re-sent results carried by its manifest,
are what building each anew gives: random conversations re-sent as they grow (rewritten,
cut, retried, in any order), each request's usage at, under or far under its count, so
that servers read all, part or little of it."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxledger import semconv as sc
from ctxledger.verdicts.received_stages import received_measurements
from ctxledger.wire_received import received_attributes, stored_attributes
from ctxledger_collector.decoded.batch import DecodedBatch
from ctxledger_collector.derive import Derived, SourceSpan, derive_span
from ctxledger_collector.derive.parsed_prefixes import ParsedPrefixes
from ctxledger_collector.ingest.derived_records import add_derived
from ctxledger_collector.ingest.received_runs import READ_REQUESTS
from tests.collector.test_parsed_prefixes import chat_span, requests, step_messages

Stages = Counter[tuple[object, ...]]


def _key(measurement: object, attributes: dict[str, Any]) -> tuple[object, ...]:
    return (measurement, tuple(sorted(attributes.items())))


def received_as_added(derived: Derived) -> Stages:
    """The received stages ``add_derived`` gives, the carried ones as their request's."""
    batch = DecodedBatch()
    add_derived(derived, batch, "svc")
    stages = [i for i in batch.measurements]
    for manifest in batch.manifests:
        stages += manifest.carried_stages()
    return Counter(
        _key(i.measurement, i.attributes)
        for i in stages
        if i.measurement.stage == sc.STAGE_RECEIVED
    )


def received_built_anew(derived: Derived) -> Stages:
    """One received stage per result, each built from the whole record."""
    record = derived.received
    if record is None:
        return Counter()
    sent = {m.tool_call_id: m for m in derived.carried}
    sent.update((s.measurement.tool_call_id, s.measurement) for s in derived.stages)
    summary = received_attributes(record)
    return Counter(
        _key(m, stored_attributes(m, summary)) for m in received_measurements(record, sent)
    )


def with_usage(span: SourceSpan, tokens: int) -> SourceSpan:
    span.attributes["gen_ai.usage.input_tokens"] = tokens
    return span


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=requests(),
    shortfalls=st.lists(st.sampled_from([0, 0, 0, 10, 40, 80, 400]), min_size=40, max_size=40),
    server=st.sampled_from([None, 11434]),
)
def test_received_stages_carried_are_those_built_anew(
    texts: list[str], shortfalls: list[int], server: int | None
) -> None:
    kept = ParsedPrefixes(min_chars=0)
    for index, text in enumerate(texts):
        span = chat_span(index, text, "conv-1")
        if server is not None:
            span.attributes["server.port"] = server
        # The request as counted, from a derivation that keeps nothing between spans.
        alone = derive_span(with_usage(span, 10**6), prefixes=ParsedPrefixes(max_chars=0))
        if alone is None or alone.received is None or alone.received.counted_tokens is None:
            continue
        span = with_usage(span, max(alone.received.counted_tokens - shortfalls[index % 40], 0))
        derived = derive_span(span, prefixes=kept)
        assert derived is not None
        assert received_as_added(derived) == received_built_anew(derived)


def counted_tokens(span: SourceSpan) -> int:
    alone = derive_span(with_usage(span, 10**6), prefixes=ParsedPrefixes(max_chars=0))
    assert alone is not None and alone.received is not None
    assert alone.received.counted_tokens is not None
    return alone.received.counted_tokens


@pytest.mark.parametrize("shortfall", [0, 2_000])
def test_a_growing_run_carries_the_received_stages_of_results_read_whole(shortfall: int) -> None:
    """Read whole, every result but the newest has its received stage carried (one
    template per result, the same object in every request); with part of the request
    discarded (ollama drops the oldest messages), each request's are its own."""
    kept = ParsedPrefixes(min_chars=0)
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": "go"}]}
    ]
    templates: dict[str, object] = {}
    previous: tuple[object, ...] = ()
    went_on: list[int] = []
    for index in range(8):
        messages += step_messages(index, "订单状态 " * 200, captured=True)
        span = chat_span(index, json.dumps(messages, ensure_ascii=False), "conv-1")
        span.attributes["server.port"] = 11434
        span = with_usage(span, max(counted_tokens(span) - shortfall, 0))
        derived = derive_span(span, prefixes=kept)
        assert derived is not None
        batch = DecodedBatch()
        before = READ_REQUESTS.went_on
        add_derived(derived, batch, "svc")
        went_on.append(READ_REQUESTS.went_on - before)
        (manifest,) = batch.manifests
        carried = [t for t in manifest.carried if t.stage == sc.STAGE_RECEIVED]
        own = [i for i in batch.measurements if i.measurement.stage == sc.STAGE_RECEIVED]
        assert len(carried) + len(own) == index + 1
        assert received_as_added(derived) == received_built_anew(derived)
        if shortfall:
            assert not carried
            assert any(i.measurement.received != "kept" for i in own)
            continue
        assert len(carried) == index
        for template in carried:
            assert templates.setdefault(template.tool_call_id, template) is template
        # Each result's received stage right after its llm_input stage: the request's
        # carried stages begin with the request's before it (judge/quiet_runs.py).
        assert [(t.tool_call_id, t.stage) for t in manifest.carried] == [
            (t.tool_call_id, stage)
            for t in carried
            for stage in (sc.STAGE_LLM_INPUT, sc.STAGE_RECEIVED)
        ]
        assert manifest.carried[: len(previous)] == previous
        previous = manifest.carried
    # Read whole, each request from the third on goes on from the one before
    # (ingest/received_runs.py); part discarded, none does.
    assert went_on == ([0] * 8 if shortfall else [0, 0, 1, 1, 1, 1, 1, 1])
