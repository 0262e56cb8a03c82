"""Stage ``received`` derived from an inference span, pure: the span's input counted as
the SDK counts a request body, the server's policy read from the span, and the spans
that must give no stage (input cut, no usage, a failed request)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxledger import semconv as sc
from ctxledger.request_count import counter_for_model, segment_request
from ctxledger.verdicts.received import judge_received
from ctxledger_collector.derive import SourceSpan, derive_span
from ctxledger_collector.derive.received import server_policy

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
