"""Stage ``received`` through the real ``openai`` and ``anthropic`` clients against the
provider stand-in over real HTTP: the hooks read what the server says it processed
(plain and streamed, sync and async) and emit one span per request with the request's
segments as it was sent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.sdk.received_kit import received_spans

import ctxledger
from ctxledger import semconv as sc
from ctxledger_cli.provider import ProviderStandIn

MODEL = "gpt-4o"
RECORDS = json.dumps([{"id": f"ord-{i}", "note": f'订单 "{i}"\n'} for i in range(30)])
CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "Answer from the tools."},
    {"role": "user", "content": "Which orders shipped?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "orders", "arguments": "{}"}}
            for cid in ("call_a", "call_b")
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": RECORDS},
    {"role": "tool", "tool_call_id": "call_b", "content": RECORDS[:400]},
]
ANTHROPIC: list[dict[str, Any]] = [
    {"role": "user", "content": "Which orders shipped?"},
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": cid, "name": "orders", "input": {}}
            for cid in ("toolu_a", "toolu_b")
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": RECORDS},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": RECORDS[:400]},
            {"type": "text", "text": "Summarise."},
        ],
    },
]


@pytest.fixture
def provider() -> Iterator[ProviderStandIn]:
    with ProviderStandIn(loop=True) as running:
        yield running


def _openai(provider: ProviderStandIn) -> openai.OpenAI:
    http = httpx2.Client(event_hooks=ctxledger.httpx_event_hooks())
    return openai.OpenAI(base_url=provider.base_url, api_key="x", http_client=http, max_retries=0)


def _async_openai(provider: ProviderStandIn) -> openai.AsyncOpenAI:
    http = httpx2.AsyncClient(event_hooks=ctxledger.httpx_event_hooks(is_async=True))
    return openai.AsyncOpenAI(
        base_url=provider.base_url, api_key="x", http_client=http, max_retries=0
    )


def _assert_chat_segments(span: dict[str, Any]) -> None:
    assert span[sc.RECEIVED_SEGMENT_CALL_IDS] == ["", "", "", "call_a", "call_b"]
    assert span[sc.RECEIVED_SEGMENT_ROLES] == ["system", "user", "assistant", "tool", "tool"]
    assert span[sc.RECEIVED_SEGMENT_CHARS][3:] == [
        len("tool") + len("call_a") + len(RECORDS),
        len("tool") + len("call_b") + 400,
    ]
    tokens = span[sc.RECEIVED_SEGMENT_TOKENS]
    assert tokens[3] > tokens[4] > 0
    assert span[sc.RECEIVED_COUNTED_TOKENS] >= sum(tokens)
    assert span[sc.TOKENIZER] in ("o200k_base", "cl100k_base")
    assert span[sc.TOKENIZER_EXACT] is False  # gpt-4o, but not served by OpenAI


def test_chat_plain_and_streamed_with_and_without_include_usage(
    exporter: InMemorySpanExporter, provider: ProviderStandIn
) -> None:
    client = _openai(provider)
    with ctxledger.run("chat-agent"):
        plain = client.chat.completions.create(model=MODEL, messages=CHAT)  # type: ignore[arg-type]
        usage_chunks = [
            chunk.usage.prompt_tokens
            for chunk in client.chat.completions.create(
                model=MODEL,
                messages=CHAT,  # type: ignore[arg-type]
                stream=True,
                stream_options={"include_usage": True},
            )
            if chunk.usage is not None
        ]
        for _ in client.chat.completions.create(model=MODEL, messages=CHAT, stream=True):  # type: ignore[arg-type]
            pass
    client.close()
    first, streamed, without = received_spans(exporter)
    assert plain.usage is not None
    assert first[sc.RECEIVED_INPUT_TOKENS] == plain.usage.prompt_tokens
    assert streamed[sc.RECEIVED_INPUT_TOKENS] == usage_chunks[-1] == plain.usage.prompt_tokens
    # The stand-in counts by the same rule: the SDK's count is the server's, to the token.
    assert first[sc.RECEIVED_COUNTED_TOKENS] == plain.usage.prompt_tokens
    assert without[sc.RECEIVED_UNREPORTED] == sc.UNREPORTED_STREAM_WITHOUT_USAGE
    assert sc.RECEIVED_INPUT_TOKENS not in without
    assert sc.RECEIVED_UNREPORTED not in first and sc.RECEIVED_UNREPORTED not in streamed
    for span in (first, streamed, without):
        _assert_chat_segments(span)
    assert [s[sc.STEP] for s in (first, streamed, without)] == [1, 2, 3]
    assert len({s[sc.REQUEST_ID] for s in (first, streamed, without)}) == 3


def test_chat_async_streamed(exporter: InMemorySpanExporter, provider: ProviderStandIn) -> None:
    async def agent() -> int | None:
        client = _async_openai(provider)
        seen = None
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=CHAT,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in stream:
            if chunk.usage is not None:
                seen = chunk.usage.prompt_tokens
        await client.close()
        return seen

    with ctxledger.run("async-agent"):
        reported = asyncio.run(agent())
    (span,) = received_spans(exporter)
    assert reported is not None and span[sc.RECEIVED_INPUT_TOKENS] == reported
    _assert_chat_segments(span)


def test_front_discard_shows_as_fewer_tokens_than_counted(exporter: InMemorySpanExporter) -> None:
    with ProviderStandIn(context_window=400, silent_front_discard=True) as provider:
        client = _openai(provider)
        answer = client.chat.completions.create(model=MODEL, messages=CHAT)  # type: ignore[arg-type]
        client.close()
    (span,) = received_spans(exporter)
    assert answer.usage is not None
    assert span[sc.RECEIVED_INPUT_TOKENS] == answer.usage.prompt_tokens <= 400
    assert span[sc.RECEIVED_COUNTED_TOKENS] > 400  # what left the process, whole
    # The stand-in answers like ollama (system_fingerprint fp_ollama): its policy is known.
    assert span[sc.RECEIVED_POLICY] == sc.POLICY_FRONT_DISCARD


def test_responses_truncation_auto_is_a_declared_front_discard(
    exporter: InMemorySpanExporter, provider: ProviderStandIn
) -> None:
    items: list[Any] = [
        {"role": "user", "content": "Which orders shipped?"},
        {"type": "function_call", "call_id": "call_r", "name": "orders", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_r", "output": RECORDS},
    ]
    client = _openai(provider)
    auto = client.responses.create(model=MODEL, input=items, truncation="auto")
    disabled = client.responses.create(model=MODEL, input=items, instructions="Be brief.")

    async def streamed() -> int | None:
        async_client = _async_openai(provider)
        seen = None
        async for event in await async_client.responses.create(
            model=MODEL, input=items, stream=True, truncation="auto"
        ):
            if event.type == "response.completed" and event.response.usage is not None:
                seen = event.response.usage.input_tokens
        await async_client.close()
        return seen

    reported = asyncio.run(streamed())
    client.close()
    first, second, third = received_spans(exporter)
    assert auto.usage is not None and disabled.usage is not None
    assert first[sc.RECEIVED_INPUT_TOKENS] == auto.usage.input_tokens
    assert first[sc.RECEIVED_POLICY] == sc.POLICY_FRONT_DISCARD
    assert first[sc.RECEIVED_DECLARED] is True
    assert first[sc.RECEIVED_SEGMENT_CALL_IDS] == ["", "", "call_r"]
    assert first[sc.RECEIVED_SEGMENT_ROLES] == ["user", "assistant", "tool"]
    assert second[sc.RECEIVED_INPUT_TOKENS] == disabled.usage.input_tokens
    assert second[sc.RECEIVED_POLICY] == sc.POLICY_REFUSE  # "disabled" errors when too long
    assert second[sc.RECEIVED_DECLARED] is False
    assert second[sc.RECEIVED_SEGMENT_ROLES] == ["system", "user", "assistant", "tool"]
    assert third.get(sc.RECEIVED_INPUT_TOKENS) == reported, sorted(dict(third).items())
    assert third[sc.RECEIVED_DECLARED] is True


def test_anthropic_sums_its_three_input_counts_sync_and_streamed_async(
    exporter: InMemorySpanExporter, provider: ProviderStandIn
) -> None:
    http = httpx2.Client(event_hooks=ctxledger.httpx_event_hooks())
    client = anthropic.Anthropic(
        base_url=provider.anthropic_base_url, api_key="x", http_client=http, max_retries=0
    )
    kwargs: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": "Brief."}
    message = client.messages.create(messages=ANTHROPIC, **kwargs)
    client.close()

    async def streamed() -> int:
        async_client = anthropic.AsyncAnthropic(
            base_url=provider.anthropic_base_url,
            api_key="x",
            http_client=httpx2.AsyncClient(event_hooks=ctxledger.httpx_event_hooks(is_async=True)),
            max_retries=0,
        )
        async with async_client.messages.stream(messages=ANTHROPIC, **kwargs) as stream:
            final = await stream.get_final_message()
        await async_client.close()
        usage = final.usage
        return (
            usage.input_tokens
            + (usage.cache_read_input_tokens or 0)
            + (usage.cache_creation_input_tokens or 0)
        )

    reported = asyncio.run(streamed())
    plain, stream = received_spans(exporter)
    usage = message.usage
    total = (
        usage.input_tokens
        + (usage.cache_read_input_tokens or 0)
        + (usage.cache_creation_input_tokens or 0)
    )
    assert plain[sc.RECEIVED_INPUT_TOKENS] == total
    assert stream[sc.RECEIVED_INPUT_TOKENS] == reported == total
    for span in (plain, stream):
        # Each tool_result block is a segment of its own; the message's text one more.
        assert span[sc.RECEIVED_SEGMENT_CALL_IDS] == ["", "", "", "", "toolu_a", "toolu_b"]
        roles = ["system", "user", "assistant", "user", "tool", "tool"]
        assert span[sc.RECEIVED_SEGMENT_ROLES] == roles
        assert span[sc.TOKENIZER_EXACT] is False  # Claude: always an approximation
        assert span[sc.RECEIVED_DECLARED] is False
