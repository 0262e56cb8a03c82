"""Parsing only what is new in a request's messages gives what parsing them whole gives:
random conversations, re-sent as they grow, re-serialized, with earlier messages
rewritten or dropped (what a trim does), cut anywhere, made invalid, arriving in any
order; the messages and every derived record compared with a derivation that keeps
nothing between spans."""

from __future__ import annotations

import json
import weakref
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxledger_collector.decoded.batch import DerivedStage, carried_stage
from ctxledger_collector.derive import Derived, SourceSpan, derive_span, records
from ctxledger_collector.derive.messages import Message, parse_json, parts_messages
from ctxledger_collector.derive.parsed_prefixes import ParsedPrefixes

TRACE = "cd" * 16
TEXTS = st.text(alphabet=st.sampled_from('ab 订单状态\n"\\{}[],:é😀'), max_size=40)


def whole(text: str) -> list[Message] | str:
    try:
        return parts_messages(parse_json(text))
    except ValueError:
        return "invalid"


def incremental(prefixes: ParsedPrefixes, text: str) -> list[Message] | str:
    try:
        return prefixes.parse("conversation", text, parts_messages)
    except ValueError:
        return "invalid"


def step_messages(step: int, result: str, captured: bool) -> list[dict[str, Any]]:
    call_id = f"call_{step}"
    response: dict[str, Any] = {"type": "tool_call_response", "id": call_id}
    if captured:
        response["response"] = result
    return [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": call_id, "name": "search"}]},
        {"role": "tool", "parts": [response]},
    ]


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "parts": [{"type": "text", "content": "You help."}]},
        {"role": "user", "parts": [{"type": "text", "content": draw(TEXTS)}]},
    ]
    for step in range(draw(st.integers(1, 8))):
        messages += step_messages(step, draw(TEXTS), draw(st.booleans()))
        if draw(st.integers(0, 9)) == 0:
            summary = {"type": "compaction", "content": draw(TEXTS)}
            messages.append({"role": "user", "parts": [summary]})
        if step and draw(st.integers(0, 5)) == 0:  # an earlier call's id named again
            again = {"type": "tool_call", "id": f"call_{draw(st.integers(0, step - 1))}"}
            messages.append({"role": "assistant", "parts": [{**again, "name": "again"}]})
    return messages


def serialized(messages: list[dict[str, Any]], style: int) -> str:
    if style == 0:
        return json.dumps(messages, ensure_ascii=False)
    if style == 1:
        return json.dumps(messages, separators=(",", ":"))
    return json.dumps(messages, ensure_ascii=False, indent=style - 1) + "\n"


@st.composite
def requests(draw: st.DrawFn) -> list[str]:
    """A conversation's requests as it grows, each possibly changed as real ones are or
    sent twice, in a random order."""
    messages = draw(conversations())
    texts: list[str] = []
    for length in range(2, len(messages) + 1):
        sent = [dict(m) for m in messages[:length]]
        change = draw(st.sampled_from(["none"] * 6 + ["rewrite", "drop", "cut", "invalid"]))
        if change == "rewrite":
            index = draw(st.integers(0, length - 1))
            sent[index] = {"role": "tool", "parts": [{"type": "text", "content": draw(TEXTS)}]}
        elif change == "drop":
            del sent[draw(st.integers(0, length - 1))]
        text = serialized(sent, draw(st.sampled_from([0, 0, 0, 1, 2, 3])))
        if draw(st.integers(0, 4)) == 0:
            texts.append(text)  # a retry re-sends it as it was
        if change == "cut":
            text = text[: draw(st.integers(0, len(text)))]
        elif change == "invalid":
            text = draw(st.sampled_from([text[:-1] + ",]", text + "x", text + " ]", "{}"]))
        texts.append(text)
    return draw(st.permutations(texts))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_messages_parsed_from_the_tail_are_those_parsed_whole(texts: list[str]) -> None:
    prefixes = ParsedPrefixes(min_chars=0)
    for text in texts:
        assert incremental(prefixes, text) == whole(text), text


def test_a_growing_conversation_is_parsed_from_its_tail_and_the_kept_text_is_bounded() -> None:
    messages = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    prefixes = ParsedPrefixes(max_chars=2_000, min_chars=0)
    for step in range(30):
        messages += step_messages(step, "订单" * 10, captured=True)
        text = json.dumps(messages, ensure_ascii=False)
        assert incremental(prefixes, text) == whole(text)
    assert prefixes.tail_parses > 0
    assert prefixes.whole_parses > 1  # past 2,000 chars a conversation is no longer kept
    assert prefixes._chars <= 2_000


def test_texts_under_the_threshold_are_not_kept() -> None:
    prefixes = ParsedPrefixes(min_chars=1_000)
    text = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "go"}]}])
    for _ in range(3):
        assert incremental(prefixes, text) == whole(text)
    assert (prefixes.tail_parses, prefixes.whole_parses) == (0, 3)


def chat_span(index: int, text: str, conversation: str | None) -> SourceSpan:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": text,
        "gen_ai.output.messages": "[]",
    }
    if conversation is not None:
        attributes["gen_ai.conversation.id"] = conversation
    return SourceSpan(
        trace_id=TRACE,
        span_id=f"{index + 1:016x}",
        name="chat gpt-4o",
        start_time_unix_nano=(index + 1) * 1_000_000,
        end_time_unix_nano=(index + 1) * 1_000_000 + 500,
        attributes=attributes,
        scope_name="opentelemetry.instrumentation.openai_v2",
    )


@pytest.mark.parametrize("conversation", [None, "conv-1"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=st.lists(requests(), min_size=1, max_size=3))
def test_records_derived_from_the_tail_are_those_derived_from_scratch(
    conversation: str | None, runs: list[list[str]]
) -> None:
    kept, nothing_kept = ParsedPrefixes(min_chars=0), ParsedPrefixes(max_chars=0)
    interleaved = [text for texts in zip(*runs, strict=False) for text in texts]
    interleaved += [t for texts in runs for t in texts[min(map(len, runs)) :]]
    for index, text in enumerate(interleaved):
        span = chat_span(index, text, conversation)
        assert as_stages(derive_span(span, prefixes=kept)) == as_stages(
            derive_span(span, prefixes=nothing_kept)
        )


def as_stages(derived: Derived | None) -> tuple[object, ...] | None:
    """The records, each stage a request carried as an earlier one did as its own (in no
    particular order)."""
    if derived is None:
        return None
    own = []
    if derived.manifest is not None:
        own = [DerivedStage(carried_stage(t, derived.manifest)) for t in derived.carried]
    return (Counter([*derived.stages, *own]), replace(derived, stages=[], carried=[]))


def _records_built_anew(span: SourceSpan) -> object:
    """The span's records with no stage kept to copy (those kept stay for the next)."""
    kept = records._KNOWN
    records._KNOWN = weakref.WeakKeyDictionary()
    try:
        return as_stages(derive_span(span, prefixes=ParsedPrefixes(max_chars=0)))
    finally:
        records._KNOWN = kept


@pytest.mark.parametrize("agent_changes", [False, True])
def test_a_carried_results_stage_copied_for_a_later_request_equals_one_built_anew(
    agent_changes: bool,
) -> None:
    """Each later request takes a copy of a carried result's stage with its own request
    fields; the copy must be what building the stage again gives, field for field, even
    where the agent named by the span changes between requests."""
    kept = ParsedPrefixes(min_chars=0)
    opening = {"role": "user", "parts": [{"type": "text", "content": "go"}]}
    messages: list[dict[str, Any]] = [opening]
    for index in range(6):
        call = f"call_{index}"
        messages.append(
            {"role": "assistant", "parts": [{"type": "tool_call", "id": call, "name": "search"}]}
        )
        messages.append(
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": call, "response": "订单" * 40}],
            }
        )
        span = chat_span(index, json.dumps(messages, ensure_ascii=False), "conv-1")
        if agent_changes:
            span.attributes["gen_ai.agent.name"] = f"agent-{index}"
        copied = derive_span(span, prefixes=kept)
        assert as_stages(copied) == _records_built_anew(span)
        # The newest result is a stage of its own; those before, carried as they were,
        # unless the agent the stages name changed.
        carried = 0 if agent_changes else index
        assert copied is not None and len(copied.carried) == carried
        assert len(copied.stages) == index + 1 - carried
