"""The provider stand-in (``ctxledger provider``) through the real ``openai`` and
``anthropic`` clients: scripted tool loops (plain and streaming), the providers' own
error bodies as the clients surface them, truthful usage, and the silent front discard.

Token counts are recomputed here with tiktoken itself (tests/tiktoken_reference.py), by
the rule the stand-in documents (ctxledger_cli/provider/tokens.py): 3 tokens per
message, 3 for the reply, plus every text the model reads."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from ctxledger_cli.provider import ProviderStandIn, Step, ToolCall
from tests.tiktoken_reference import reference_count

from .helpers import provider_process

pytest_plugins = ["ctxledger_cli.provider.pytest_fixture"]

GPT = "gpt-4o"
GPT_ENCODING = "o200k_base" if importlib.util.find_spec("bpe_openai") else "cl100k_base"
CLAUDE = "claude-sonnet-4-5"
ORDERS = json.dumps(
    [{"order_id": f"O-{i}", "status": "已退款" if i % 3 == 0 else "已发货"} for i in range(40)],
    ensure_ascii=False,
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "query_orders",
            "description": "Orders of a customer.",
            "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}},
        },
    }
]


def tokens(texts: Iterable[str], encoding: str) -> int:
    return sum(reference_count(text, encoding) for text in texts if text)


def chat_prompt_tokens(messages: list[dict[str, Any]], tools: Any = None) -> int:
    total = 3
    for message in messages:
        texts = [message["role"], message.get("content") or "", message.get("tool_call_id", "")]
        for call in message.get("tool_calls") or ():
            texts += [call["id"], call["function"]["name"], call["function"]["arguments"]]
        total += 3 + tokens(texts, GPT_ENCODING)
    if tools:
        compact = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
        total += reference_count(compact, GPT_ENCODING)
    return total


def anthropic_prompt_tokens(messages: list[dict[str, Any]], system: str | None = None) -> int:
    total = 3 + (3 + reference_count(system, "cl100k_base") if system else 0)
    for message in messages:
        texts = [message["role"]]
        content = message["content"]
        for block in [{"text": content}] if isinstance(content, str) else content:
            texts += [block.get("text", ""), block.get("id", ""), block.get("name", "")]
            texts += [block.get("tool_use_id", ""), block.get("content", "")]
            if "input" in block:
                texts.append(json.dumps(block["input"], ensure_ascii=False, separators=(",", ":")))
        total += 3 + tokens(texts, "cl100k_base")
    return total


def order_calls(*customers: str) -> list[ToolCall]:
    return [ToolCall("query_orders", {"customer": customer}) for customer in customers]


def run_chat_loop(client: openai.OpenAI, stream: bool) -> tuple[list[dict[str, Any]], list[Any]]:
    """A real tool loop: ask, run every tool the answer calls, ask again, until text."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer from the order system."},
        {"role": "user", "content": "客户 C-1 和 C-2 的退款订单?"},
    ]
    usages = []
    for _ in range(5):
        if stream:
            with client.chat.completions.stream(
                model=GPT, messages=messages, tools=TOOLS, stream_options={"include_usage": True}
            ) as events:
                for _event in events:
                    pass
                completion = events.get_final_completion()
        else:
            completion = client.chat.completions.create(model=GPT, messages=messages, tools=TOOLS)
        usages.append((completion.usage, chat_prompt_tokens(messages, TOOLS)))
        message = completion.choices[0].message
        messages.append(
            message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"})
        )
        if not message.tool_calls:
            return messages, usages
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": ORDERS})
    raise AssertionError("the loop did not end")


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_openai_chat_tool_loop_runs_the_script_with_truthful_usage(
    provider: ProviderStandIn, stream: bool
) -> None:
    provider.script(order_calls("C-1", "C-2"), order_calls("C-3"), "C-1 有 14 笔退款。")
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="x", max_retries=0)
    messages, usages = run_chat_loop(client, stream)
    assert messages[-1]["content"] == "C-1 有 14 笔退款。"
    assert [len(m.get("tool_calls") or ()) for m in messages if m["role"] == "assistant"] == [
        2,
        1,
        0,
    ]
    assert len(provider.requests) == 3
    for usage, expected in usages:
        assert usage is not None and usage.prompt_tokens == expected
    last_usage = usages[-1][0]
    assert last_usage.completion_tokens == reference_count("C-1 有 14 笔退款。", GPT_ENCODING)
    # the recorded bytes are the request the client sent
    sent = provider.requests[-1].json()
    assert sent["messages"][-1] == {
        "role": "tool",
        "tool_call_id": messages[-2]["tool_call_id"],
        "content": ORDERS,
    }
    assert provider.requests[-1].body.decode("utf-8").count("query_orders") >= 3


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_openai_responses_tool_loop(provider: ProviderStandIn, stream: bool) -> None:
    provider.script(order_calls("C-1"), "done")
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="x", max_retries=0)
    items: list[Any] = [{"role": "user", "content": "refunds of C-1?"}]
    texts = []
    for _ in range(3):
        if stream:
            with client.responses.stream(
                model=GPT, input=items, instructions="Be brief."
            ) as events:
                kinds = [event.type for event in events]
                response = events.get_final_response()
            assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        else:
            response = client.responses.create(model=GPT, input=items, instructions="Be brief.")
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            texts.append(response.output_text)
            break
        for call in calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": call.arguments,
                }
            )
            items.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": ORDERS}
            )
    assert texts == ["done"]
    assert response.usage is not None
    expected = 3 + 3 + reference_count("Be brief.", GPT_ENCODING)
    expected += 3 + tokens(["user", "refunds of C-1?"], GPT_ENCODING)
    call_item, output_item = items[1], items[2]
    expected += 3 + tokens(
        [call_item["call_id"], call_item["name"], call_item["arguments"]], GPT_ENCODING
    )
    expected += 3 + tokens([output_item["call_id"], ORDERS], GPT_ENCODING)
    assert response.usage.input_tokens == expected
    assert response.usage.output_tokens == reference_count("done", GPT_ENCODING)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_anthropic_tool_loop(provider: ProviderStandIn, stream: bool) -> None:
    provider.script(order_calls("C-1", "C-2"), "两位客户共 28 笔退款。")
    client = anthropic.Anthropic(base_url=provider.anthropic_base_url, api_key="x", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "退款订单?"}]
    for _ in range(3):
        if stream:
            with client.messages.stream(
                model=CLAUDE, max_tokens=512, system="Orders.", messages=messages
            ) as events:
                for _event in events:
                    pass
                reply = events.get_final_message()
        else:
            reply = client.messages.create(
                model=CLAUDE, max_tokens=512, system="Orders.", messages=messages
            )
        assert reply.usage.input_tokens == anthropic_prompt_tokens(messages, "Orders.")
        blocks = [
            block.model_dump(include={"type", "id", "name", "input", "text"})
            for block in reply.content
        ]
        messages.append({"role": "assistant", "content": blocks})
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            break
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": ORDERS}
                    for use in uses
                ],
            }
        )
    assert reply.stop_reason == "end_turn"
    assert reply.content[0].type == "text" and reply.content[0].text == "两位客户共 28 笔退款。"
    assert reply.usage.output_tokens == reference_count("两位客户共 28 笔退款。", "cl100k_base")
    counted = client.messages.count_tokens(model=CLAUDE, system="Orders.", messages=messages)
    assert counted.input_tokens == anthropic_prompt_tokens(messages, "Orders.")


def test_over_long_prompts_are_refused_with_each_providers_own_error(
    provider_factory: Any,
) -> None:
    provider = provider_factory(context_window=200)
    big = [{"role": "user", "content": ORDERS}]
    chat = openai.OpenAI(base_url=provider.openai_base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError) as refused:
        chat.chat.completions.create(model=GPT, messages=big)
    counted = chat_prompt_tokens(big)
    assert refused.value.code == "context_length_exceeded"
    assert refused.value.param == "messages"
    assert refused.value.body == {
        "message": f"This model's maximum context length is 200 tokens. However, your messages "
        f"resulted in {counted} tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
    with pytest.raises(openai.BadRequestError) as refused:
        chat.responses.create(model=GPT, input=ORDERS)
    assert refused.value.code == "context_length_exceeded" and refused.value.param == "input"
    assert "Your input exceeds the context window of this model" in refused.value.message

    claude = anthropic.Anthropic(base_url=provider.anthropic_base_url, api_key="x", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as too_long:
        claude.messages.create(model=CLAUDE, max_tokens=10, messages=big)
    assert too_long.value.status_code == 400
    assert too_long.value.body["error"] == {
        "type": "invalid_request_error",
        "message": f"prompt is too long: {anthropic_prompt_tokens(big)} tokens > 200 maximum",
    }
    assert too_long.value.request_id == too_long.value.body["request_id"]


def test_broken_pairing_is_refused_with_each_providers_own_error(provider: ProviderStandIn) -> None:
    chat = openai.OpenAI(base_url=provider.openai_base_url, api_key="x", max_retries=0)
    call = {"id": "call_a", "type": "function", "function": {"name": "q", "arguments": "{}"}}
    unanswered = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call, {**call, "id": "call_b"}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "x"},
        {"role": "user", "content": "and?"},
    ]
    with pytest.raises(openai.BadRequestError) as refused:
        chat.chat.completions.create(model=GPT, messages=unanswered)
    assert refused.value.body == {
        "message": "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have response "
        "messages: call_b",
        "type": "invalid_request_error",
        "param": "messages.[3].role",
        "code": None,
    }
    orphan = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_z", "content": "x"},
    ]
    with pytest.raises(openai.BadRequestError) as refused:
        chat.chat.completions.create(model=GPT, messages=orphan)
    assert refused.value.message.endswith(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
        "message with 'tool_calls'."
    )
    assert refused.value.param == "messages.[1].role"

    with pytest.raises(openai.BadRequestError) as refused:
        chat.responses.create(
            model=GPT, input=[{"type": "function_call_output", "call_id": "call_q", "output": "x"}]
        )
    assert refused.value.body == {
        "message": "No tool call found for function call output with call_id call_q.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }

    claude = anthropic.Anthropic(base_url=provider.anthropic_base_url, api_key="x", max_retries=0)
    use = {"type": "tool_use", "id": "toolu_1", "name": "q", "input": {}}
    with pytest.raises(anthropic.BadRequestError) as missing:
        claude.messages.create(
            model=CLAUDE,
            max_tokens=10,
            messages=[
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [use, {**use, "id": "toolu_2"}]},
                {"role": "user", "content": "the results got lost"},
            ],
        )
    assert missing.value.body["error"]["message"] == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_1, toolu_2. Each `tool_use` block must have a corresponding `tool_result` block "
        "in the next message."
    )
    with pytest.raises(anthropic.BadRequestError) as unexpected:
        claude.messages.create(
            model=CLAUDE,
            max_tokens=10,
            messages=[
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}],
                }
            ],
        )
    assert unexpected.value.body["error"]["message"].startswith(
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9."
    )
    assert provider.engine.script.next_step() == Step(text="ok")  # refusals took no step


def test_silent_front_discard_drops_the_oldest_messages_and_answers_200(
    provider_factory: Any,
) -> None:
    history = [{"role": "system", "content": "You answer from the order system."}]
    for turn in range(6):
        history += [
            {"role": "user", "content": f"第 {turn} 轮: {ORDERS}"},
            {"role": "assistant", "content": f"answer {turn}"},
        ]
    history.append({"role": "user", "content": "最后的问题"})
    full = chat_prompt_tokens(history)
    window = full // 2
    provider = provider_factory(context_window=window, silent_front_discard=True)
    chat = openai.OpenAI(base_url=provider.openai_base_url, api_key="x", max_retries=0)
    completion = chat.chat.completions.create(model=GPT, messages=history)
    assert completion.choices[0].message.content == "ok"
    (discard,) = provider.discards
    kept = [history[0], *history[1 + discard.dropped_messages :]]
    assert discard.dropped_messages > 0 and discard.prompt_tokens_received == full
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == discard.prompt_tokens_kept == chat_prompt_tokens(kept)
    assert completion.usage.prompt_tokens <= window < full
    # one message fewer would not have fitted: only the front was dropped, only as needed
    assert chat_prompt_tokens([history[0], *history[discard.dropped_messages :]]) > window

    claude = anthropic.Anthropic(base_url=provider.anthropic_base_url, api_key="x", max_retries=0)
    reply = claude.messages.create(model=CLAUDE, max_tokens=10, messages=history[1:])
    assert reply.usage.input_tokens <= window < anthropic_prompt_tokens(history[1:])


def test_the_command_serves_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    steps = [
        {
            "tool_calls": [
                {"name": "query_orders", "arguments": {"customer": "C-1"}, "id": "call_1"}
            ]
        },
        "好的",
    ]
    script.write_text(json.dumps({"steps": steps}, ensure_ascii=False), encoding="utf-8")
    question = [{"role": "user", "content": "q"}]
    with provider_process("--script", str(script)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        first = client.chat.completions.create(model=GPT, messages=question)
        calls = first.choices[0].message.tool_calls
        assert calls is not None and calls[0].id == "call_1"
        assert calls[0].function.name == "query_orders"
        second = client.chat.completions.create(model=GPT, messages=question)
        assert second.choices[0].message.content == "好的"
        with pytest.raises(openai.ConflictError, match="used up after 2 turns"):
            client.chat.completions.create(model=GPT, messages=question)
