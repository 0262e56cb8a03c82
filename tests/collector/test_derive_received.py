"""Stage ``received`` derived from an inference span, pure: the span's input counted as
the SDK counts a request body, the server's policy read from the span, and the spans
that must give no stage (input cut, no usage, a failed request)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxledger import semconv as sc
from ctxledger.request_count import counter_for_model, segment_request
from ctxledger.verdicts.received import judge_received
from ctxledger_collector.derive import SourceSpan, derive_span
from ctxledger_collector.derive.messages import Exchange, Message, ToolCall, ToolResult
from ctxledger_collector.derive.received import server_policy
from ctxledger_collector.derive.request_segments import chat_body, request_segments

TRACE = "cd" * 16
OLD = json.dumps([{"id": f"ord-{i}", "note": f"订单 {i} 已发货"} for i in range(60)])
NEW = json.dumps([{"id": "inv-1", "total": 10}])
CHAT = [
    {"role": "system", "content": "Answer from the tools."},
    {"role": "user", "content": "Which orders shipped?"},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "call_old", "function": {"name": "orders", "arguments": "{}"}},
            {"id": "call_new", "function": {"name": "invoices", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_old", "content": OLD},
    {"role": "tool", "tool_call_id": "call_new", "content": NEW},
]


def _parts(message: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions message in the GenAI conventions' parts form."""
    if message["role"] == "tool":
        part = {"type": "tool_call_response", "id": message["tool_call_id"]}
        return {"role": "tool", "parts": [{**part, "response": message["content"]}]}
    parts: list[dict[str, Any]] = []
    if message.get("content"):
        parts.append({"type": "text", "content": message["content"]})
    for call in message.get("tool_calls", ()):
        function = call["function"]
        parts.append(
            {"type": "tool_call", "id": call["id"], "name": function["name"], "arguments": {}}
        )
    return {"role": message["role"], "parts": parts}


def chat_span(usage: int | None, failed: bool = False, **attributes: Any) -> SourceSpan:
    attrs: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.REQUEST_MODEL: "gpt-4o",
        sc.GEN_AI_PROVIDER_NAME: "openai",
        sc.GEN_AI_INPUT_MESSAGES: json.dumps([_parts(m) for m in CHAT], ensure_ascii=False),
        **attributes,
    }
    if usage is not None:
        attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] = usage
    return SourceSpan(
        trace_id=TRACE,
        span_id="a" * 16,
        name="chat gpt-4o",
        start_time_unix_nano=1_000_000,
        end_time_unix_nano=2_000_000,
        attributes=attrs,
        status_code=2 if failed else 0,
    )


def counted() -> int:
    count, tokenizer = counter_for_model("gpt-4o")
    return segment_request({"messages": CHAT}, count, tokenizer, "gpt-4o").counted_tokens


@pytest.mark.parametrize(
    ("attributes", "policy"),
    [
        ({sc.GEN_AI_PROVIDER_NAME: "ollama"}, sc.POLICY_FRONT_DISCARD),
        ({sc.SERVER_ADDRESS: "gpu-1", sc.SERVER_PORT: 11434}, sc.POLICY_FRONT_DISCARD),
        ({"openai.response.system_fingerprint": "fp_ollama"}, sc.POLICY_FRONT_DISCARD),
        ({"gen_ai.openai.system_fingerprint": "fp_ollama"}, sc.POLICY_FRONT_DISCARD),
        ({sc.GEN_AI_PROVIDER_NAME: "openai", sc.SERVER_ADDRESS: "api.openai.com"}, "refuse"),
        ({sc.GEN_AI_SYSTEM: "openai", sc.SERVER_ADDRESS: "x.openai.azure.com"}, "refuse"),
        ({sc.GEN_AI_PROVIDER_NAME: "anthropic", sc.SERVER_ADDRESS: "gw.example"}, "refuse"),
        ({sc.LLM_PROVIDER: "openai"}, "refuse"),  # OpenInference infers it from the host
        ({sc.GEN_AI_PROVIDER_NAME: "openai", sc.SERVER_ADDRESS: "127.0.0.1"}, None),
        ({sc.GEN_AI_PROVIDER_NAME: "openai"}, None),  # the client's API, not the server
        ({sc.GEN_AI_PROVIDER_NAME: "anthropic", sc.SERVER_ADDRESS: "localhost"}, None),
        ({}, None),
    ],
)
def test_the_servers_policy_is_read_from_the_span(
    attributes: dict[str, Any], policy: str | None
) -> None:
    assert server_policy(attributes) == policy


def test_a_whole_input_with_usage_gives_the_sdks_count_and_segments() -> None:
    derived = derive_span(chat_span(counted(), **{sc.SERVER_ADDRESS: "api.openai.com"}))
    assert derived is not None and derived.received is not None
    record = derived.received
    assert record.counted_tokens == counted()
    assert record.segment_call_ids == ("", "", "", "call_old", "call_new")
    assert record.segment_roles[0] == sc.ROLE_SYSTEM
    assert record.exact is True  # gpt-4o counted with o200k_base, served by OpenAI
    assert record.policy == sc.POLICY_REFUSE
    assert record.request_id == derived.manifest.request_id if derived.manifest else False
    assert record.source == sc.SOURCE_GENAI


def test_a_front_discard_drops_the_older_parallel_result() -> None:
    derived = derive_span(chat_span(120, **{sc.GEN_AI_PROVIDER_NAME: "ollama"}))
    assert derived is not None and derived.received is not None
    outcome = {r.call_id: r.outcome for r in judge_received(derived.received).results}
    assert outcome == {"call_old": "dropped", "call_new": "kept"}


def test_a_hosted_api_never_loses_whatever_its_usage_says() -> None:
    # Anthropic's input_tokens leaves cache reads out: a low count is no discard there.
    low = chat_span(10, **{sc.GEN_AI_PROVIDER_NAME: "anthropic"})
    derived = derive_span(low)
    assert derived is not None and derived.received is not None
    assert {r.outcome for r in judge_received(derived.received).results} == {"kept"}


@pytest.mark.parametrize(
    "span",
    [
        chat_span(None),  # no usage
        chat_span(120, failed=True),
        chat_span(120, **{sc.GEN_AI_INPUT_MESSAGES: json.dumps([_parts(CHAT[0])])[:-5]}),
    ],
    ids=["no usage", "failed", "input cut"],
)
def test_spans_that_cannot_be_counted_give_no_received_stage(span: SourceSpan) -> None:
    derived = derive_span(span)
    assert derived is None or derived.received is None


_TEXTS = st.text(alphabet=st.sampled_from('ab 订单\n"{}é😀'), max_size=30)
_IDS = st.sampled_from(["call_1", "call_2", "call_3", None])


@st.composite
def _messages(draw: st.DrawFn) -> Message:
    calls = draw(st.lists(st.builds(ToolCall, _IDS, st.sampled_from(["orders", "again", None]),
                                    st.one_of(st.none(), _TEXTS, st.just({"q": 1}))),
                          max_size=2))  # fmt: skip
    results = draw(st.lists(st.builds(ToolResult, _IDS, _TEXTS), max_size=2))
    role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
    return Message(role, draw(st.lists(_TEXTS, max_size=2)), calls, results)


@settings(max_examples=200, deadline=None)
@given(
    system=st.lists(_TEXTS, max_size=2),
    earlier=st.lists(_messages(), max_size=6),
    later=st.lists(_messages(), max_size=4),
    model=st.sampled_from(["gpt-4o", "claude-sonnet-4", None]),
)
def test_segments_counted_per_message_are_those_of_the_whole_body(
    system: list[str], earlier: list[Message], later: list[Message], model: str | None
) -> None:
    """Each message's segments are counted once and kept with it: a later request that
    carries the same parsed messages and more counts as counting its whole body does,
    and so does one that carries some of them in other places."""
    count, tokenizer = counter_for_model(model)
    requests = (
        earlier,
        [*earlier, *later],
        [*earlier, *later],
        earlier[:2],
        [*later[:1], *earlier[1:]],
        [*later, *earlier],
        [*earlier[:1], *later],
    )
    for messages in requests:
        exchange = Exchange(input=messages, system=system)
        whole = segment_request(chat_body(exchange), count, tokenizer, model)
        assert request_segments(exchange, count, tokenizer, model) == whole
