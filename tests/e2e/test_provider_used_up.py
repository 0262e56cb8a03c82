"""A used-up script through the real ``openai`` and ``anthropic`` clients: each API, plain
and streaming, refuses the next request with a 409 in the provider's own error shape that
says so and how to rerun, and the clients (default retries) send it once; ``loop`` starts
the script again; ``POST /_ctxledger/reset`` and ``reset()`` rewind it; steps queued after
it was used up are answered; a stand-in never scripted answers ``"ok"``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest

from ctxledger_cli.provider import ProviderStandIn, ToolCall

pytest_plugins = ["ctxledger_cli.provider.pytest_fixture"]

GPT = "gpt-4o"
CLAUDE = "claude-sonnet-4-5"
QUESTION = "哪些订单在退款?"


def ask_chat(provider: ProviderStandIn, stream: bool) -> str:
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="x")
    messages: Any = [{"role": "user", "content": QUESTION}]
    completion: Any
    if stream:
        with client.chat.completions.stream(model=GPT, messages=messages) as events:
            completion = events.get_final_completion()
    else:
        completion = client.chat.completions.create(model=GPT, messages=messages)
    message = completion.choices[0].message
    return message.tool_calls[0].id if message.tool_calls else message.content or ""


def ask_responses(provider: ProviderStandIn, stream: bool) -> str:
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="x")
    if stream:
        with client.responses.stream(model=GPT, input=QUESTION) as events:
            return events.get_final_response().output_text
    return client.responses.create(model=GPT, input=QUESTION).output_text


def ask_anthropic(provider: ProviderStandIn, stream: bool) -> str:
    client = anthropic.Anthropic(base_url=provider.anthropic_base_url, api_key="x")
    messages: Any = [{"role": "user", "content": QUESTION}]
    reply: Any
    if stream:
        with client.messages.stream(model=CLAUDE, max_tokens=64, messages=messages) as events:
            reply = events.get_final_message()
    else:
        reply = client.messages.create(model=CLAUDE, max_tokens=64, messages=messages)
    block = reply.content[0]
    return block.text if block.type == "text" else ""


ASK: dict[str, Callable[[ProviderStandIn, bool], str]] = {
    "chat": ask_chat,
    "responses": ask_responses,
    "anthropic": ask_anthropic,
}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", list(ASK))
def test_a_used_up_script_is_refused_in_each_providers_own_shape(
    provider_factory: Callable[..., ProviderStandIn], api: str, stream: bool
) -> None:
    provider = provider_factory(script=["十二笔订单在退款。"])
    assert ASK[api](provider, stream) == "十二笔订单在退款。"
    with pytest.raises((openai.ConflictError, anthropic.ConflictError)) as refused:
        ASK[api](provider, stream)
    message = (
        "ctxledger provider: the script is used up after 1 turn; to rerun it, "
        f"POST {provider.url}/_ctxledger/reset to rewind it (or start the stand-in with --loop)"
    )
    error: Any = refused.value
    body = error.body
    assert error.status_code == 409
    if api == "anthropic":
        assert body["error"] == {"type": "invalid_request_error", "message": message}
        assert error.response.headers["request-id"] == body["request_id"]
    else:
        assert body == {
            "message": message,
            "type": "invalid_request_error",
            "param": None,
            "code": "script_exhausted",
        }
    assert len(provider.requests) == 2  # not retried: x-should-retry: false


def test_a_looping_script_starts_again_from_its_first_step(
    provider_factory: Callable[..., ProviderStandIn],
) -> None:
    call = ToolCall("query_orders", {"status": "退款中"}, id="call_orders_1")
    provider = provider_factory(script=[call, "十二笔。"], loop=True)
    answers = [ask_chat(provider, stream=False) for _ in range(5)]
    assert answers == ["call_orders_1", "十二笔。", "call_orders_1", "十二笔。", "call_orders_1"]


def test_the_reset_endpoint_rewinds_the_script(provider: ProviderStandIn) -> None:
    provider.script("第一步", "第二步")
    assert [ask_anthropic(provider, stream=False) for _ in range(2)] == ["第一步", "第二步"]
    rewound = httpx.post(provider.reset_url)
    assert (rewound.status_code, rewound.json()) == (200, {"rewound": True, "turns": 2})
    assert ask_anthropic(provider, stream=False) == "第一步"
    assert len(provider.requests) == 3  # the reset is the stand-in's own, not recorded
    provider.reset()
    assert ask_chat(provider, stream=False) == "第一步"


def test_steps_queued_after_the_script_was_used_up_are_answered(
    provider: ProviderStandIn,
) -> None:
    provider.script("一")
    assert ask_responses(provider, stream=False) == "一"
    with pytest.raises(openai.ConflictError):
        ask_responses(provider, stream=False)
    provider.script("二")
    assert ask_responses(provider, stream=True) == "二"


def test_a_stand_in_never_scripted_answers_ok(provider: ProviderStandIn) -> None:
    assert [ask_chat(provider, stream=False) for _ in range(3)] == ["ok"] * 3
