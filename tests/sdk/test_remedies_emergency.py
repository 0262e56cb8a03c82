"""Emergency trim (seed 001): oldest tool results first, content only, half the size,
idempotent, this request only; retried at once on the same provider."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

import ctxledger
from ctxledger._markers import EMERGENCY_TRIM_PLACEHOLDER
from ctxledger._messages import parse_messages
from ctxledger._serialize import to_text
from ctxledger.remedies import emergency, overflow, trimming
from ctxledger.remedies.emergency import (
    EVENT_CONTEXT_LENGTH_EXCEEDED,
    TrimResult,
    acall_with_emergency_trim,
    call_with_emergency_trim,
    emergency_trim,
    estimate_tokens,
    is_context_length_error,
    is_trimmed,
)
from ctxledger.remedies.pairing import assert_paired, check_pairing

MODEL = "gpt-4o"
TOOLS = (
    ("grep_logs", 120),
    ("query_alerts", 90),
    ("get_pod_status", 70),
    ("get_deploys", 50),
    ("get_metrics", 40),
)


@pytest.fixture(autouse=True)
def sdk(tmp_path: Path):
    client = ctxledger.configure(service_name="t", export=False, ledger=None)
    yield client
    client.shutdown()


# --- realistic histories ---------------------------------------------------------------


def tool_output(name: str, lines: int) -> str:
    return "\n".join(
        f"2026-05-20T10:{i // 6:02d}:{i % 6 * 10:02d}Z order-api-7d9f-{i % 3} WARN {name}: "
        f"上游调用超时 GET /inventory/sku/SKU-{i * 13 % 97:03d} 耗时 {3000 + i * 17}ms"
        for i in range(lines)
    )


def call_id(k: int, name: str) -> str:
    return f"call_{k}_{name}"


def openai_history(tools: tuple[tuple[str, int], ...] = TOOLS) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "你是 SRE 助手，负责定位故障根因。"},
        {"role": "user", "content": "order-api 下单接口从 10:00 开始大量超时，帮我查原因。"},
    ]
    for k, (name, lines) in enumerate(tools):
        cid = call_id(k, name)
        arguments = json.dumps({"service": "order-api"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": cid, "content": tool_output(name, lines)})
    messages.append({"role": "user", "content": "结论是什么？"})
    return messages


def anthropic_history(tools: tuple[tuple[str, int], ...] = TOOLS) -> list[dict[str, Any]]:
    """Anthropic Messages; tool_result content as a list of text blocks."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "order-api 下单接口从 10:00 开始大量超时，帮我查原因。"}
    ]
    for k, (name, lines) in enumerate(tools):
        cid = call_id(k, name)
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"先用 {name} 看看。"},
                    {
                        "type": "tool_use",
                        "id": cid,
                        "name": name,
                        "input": {"service": "order-api"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": cid,
                        "content": [{"type": "text", "text": tool_output(name, lines)}],
                    }
                ],
            }
        )
    return messages


ALL_IDS = [call_id(k, name) for k, (name, _) in enumerate(TOOLS)]
HISTORIES = {"openai": openai_history, "anthropic": anthropic_history}


def placeholder_ids(messages: list[Any]) -> list[str]:
    return [r.tool_call_id for r in parse_messages(messages).results if is_trimmed(r.text)]


def result_index(messages: list[Any], cid: str) -> int:
    return next(r.message_index for r in parse_messages(messages).results if r.tool_call_id == cid)


def structure(messages: list[Any]) -> list[tuple[str, str | None, int]]:
    """Every call and result: (id, name, message index) — what a trim must keep."""
    parsed = parse_messages(messages)
    calls = [(c.tool_call_id, c.tool_name, c.message_index) for c in parsed.calls]
    results = [(r.tool_call_id, r.tool_name, r.message_index) for r in parsed.results]
    return calls + results


# --- the trim ----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(HISTORIES))
def test_oldest_first_and_stops_as_soon_as_half_is_reached(fmt: str):
    messages = HISTORIES[fmt]()
    result = emergency_trim(messages, model=MODEL)

    before = estimate_tokens(messages, MODEL)
    assert result.tokens_before == before
    assert result.target_tokens == before // 2
    assert result.tokens_after == estimate_tokens(result.messages, MODEL)
    assert result.reached_target and result.tokens_after <= before // 2
    k = len(result.trimmed)
    assert 0 < k < len(ALL_IDS), result  # neither nothing nor everything
    assert list(result.trimmed) == ALL_IDS[:k]  # the oldest, in order
    assert placeholder_ids(result.messages) == ALL_IDS[:k]
    assert not result.nothing_left

    # One trim fewer would not have reached the target: it stopped as soon as it could.
    one_fewer = list(result.messages)
    last = result_index(messages, result.trimmed[-1])
    one_fewer[last] = messages[last]
    assert estimate_tokens(one_fewer, MODEL) > result.target_tokens


@pytest.mark.parametrize("fmt", sorted(HISTORIES))
def test_keeps_every_message_id_name_position_and_pairing(fmt: str):
    messages = HISTORIES[fmt]()
    result = emergency_trim(messages, target_tokens=0, model=MODEL)
    assert len(result.messages) == len(messages)
    assert structure(result.messages) == structure(messages)
    assert check_pairing(result.messages) == []
    assert_paired(result.messages)
    for before, after in zip(messages, result.messages, strict=True):
        assert before["role"] == after["role"]


@pytest.mark.parametrize("fmt", sorted(HISTORIES))
def test_no_protected_recent_results_every_one_can_go(fmt: str):
    messages = HISTORIES[fmt]()
    result = emergency_trim(messages, target_tokens=0, model=MODEL)
    assert list(result.trimmed) == ALL_IDS  # the most recent result too
    assert result.nothing_left and not result.reached_target
    assert placeholder_ids(result.messages) == ALL_IDS
    assert_paired(result.messages)
    again = emergency_trim(result.messages, target_tokens=0, model=MODEL)
    assert again.trimmed == () and again.nothing_left and not again.changed
    assert again.messages == result.messages


@pytest.mark.parametrize("fmt", sorted(HISTORIES))
def test_second_trim_continues_where_the_first_stopped(fmt: str):
    messages = HISTORIES[fmt]()
    first = emergency_trim(messages, model=MODEL)
    snapshot = copy.deepcopy(first.messages)
    second = emergency_trim(first.messages, model=MODEL)
    k, m = len(first.trimmed), len(second.trimmed)
    assert m > 0
    assert list(second.trimmed) == ALL_IDS[k : k + m]  # no result trimmed twice
    assert second.tokens_before == first.tokens_after
    assert placeholder_ids(second.messages) == ALL_IDS[: k + m]
    assert first.messages == snapshot  # the first request's list is not touched either
    assert_paired(second.messages)


def test_an_already_trimmed_result_is_recognised_and_skipped():
    messages = openai_history()
    oldest = result_index(messages, ALL_IDS[0])
    messages[oldest] = {**messages[oldest], "content": EMERGENCY_TRIM_PLACEHOLDER}
    result = emergency_trim(messages, target_tokens=estimate_tokens(messages, MODEL) - 1)
    assert result.trimmed == (ALL_IDS[1],)
    assert result.messages[oldest] is messages[oldest]


def test_is_trimmed_accepts_only_the_placeholder():
    assert is_trimmed(EMERGENCY_TRIM_PLACEHOLDER)
    assert is_trimmed([{"type": "text", "text": EMERGENCY_TRIM_PLACEHOLDER}])
    assert not is_trimmed(EMERGENCY_TRIM_PLACEHOLDER + " and the real output follows")
    assert not is_trimmed("[removed by emergency context trim]")
    assert not is_trimmed(
        [{"type": "text", "text": EMERGENCY_TRIM_PLACEHOLDER}, {"type": "image", "source": {}}]
    )
    assert not is_trimmed(None) and not is_trimmed([])


@pytest.mark.parametrize("fmt", sorted(HISTORIES))
def test_input_is_never_mutated_and_only_changed_messages_are_copies(fmt: str):
    messages = HISTORIES[fmt]()
    snapshot = copy.deepcopy(messages)
    result = emergency_trim(messages, model=MODEL)
    assert messages == snapshot
    assert result.messages is not messages
    changed = {result_index(messages, cid) for cid in result.trimmed}
    for index, (before, after) in enumerate(zip(messages, result.messages, strict=True)):
        if index in changed:
            assert after is not before and after != before
        else:
            assert after is before
    # A deep copy: editing the trimmed request does not reach the stored history.
    first = min(changed)
    result.messages[first]["content"] = "edited"
    assert messages == snapshot


def test_openai_trim_replaces_the_content_and_nothing_else():
    messages = openai_history()
    result = emergency_trim(messages, model=MODEL)
    for cid in result.trimmed:
        index = result_index(messages, cid)
        assert result.messages[index] == {**messages[index], "content": EMERGENCY_TRIM_PLACEHOLDER}


def test_anthropic_parallel_results_are_trimmed_block_by_block():
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "查一下"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_a", "name": "grep_logs", "input": {}},
                {"type": "tool_use", "id": "toolu_b", "name": "query_alerts", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": tool_output("a", 30)},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "is_error": True,
                    "content": [{"type": "text", "text": tool_output("b", 30)}],
                },
                {"type": "text", "text": "两个结果都在这里。"},
            ],
        },
    ]
    snapshot = copy.deepcopy(messages)

    def untrimmed(msgs: list[Any]) -> int:  # a size that only counts untrimmed results
        return 100 * sum(not is_trimmed(r.text) for r in parse_messages(msgs).results)

    first = emergency_trim(messages, target_tokens=150, estimate=untrimmed)
    assert first.trimmed == ("toolu_a",) and first.tokens_after == 100
    blocks = first.messages[2]["content"]
    assert blocks[0] == {**messages[2]["content"][0], "content": EMERGENCY_TRIM_PLACEHOLDER}
    assert blocks[1] == messages[2]["content"][1]  # the second result is untouched
    assert blocks[2] == messages[2]["content"][2]

    second = emergency_trim(first.messages, target_tokens=0, estimate=untrimmed)
    assert second.trimmed == ("toolu_b",) and second.nothing_left and second.reached_target
    assert second.messages[2]["content"][1] == {
        "type": "tool_result",
        "tool_use_id": "toolu_b",
        "is_error": True,
        "content": EMERGENCY_TRIM_PLACEHOLDER,
    }
    assert messages == snapshot
    assert_paired(second.messages)


def test_responses_items_are_trimmed_too():
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "查一下"},
        {"type": "function_call", "call_id": "fc_1", "name": "grep_logs", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "fc_1", "output": tool_output("x", 80)},
        {"type": "function_call", "call_id": "fc_2", "name": "grep_logs", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "fc_2", "output": tool_output("y", 40)},
    ]
    result = emergency_trim(items)
    assert result.trimmed == ("fc_1",)
    assert result.messages[2] == {**items[2], "output": EMERGENCY_TRIM_PLACEHOLDER}
    assert_paired(result.messages)


def test_a_custom_estimator_is_used_and_called_after_each_replacement():
    messages = openai_history()
    seen: list[int] = []

    def chars(msgs: list[Any]) -> int:
        size = sum(len(to_text(m)) for m in msgs)
        seen.append(size)
        return size

    result = emergency_trim(messages, estimate=chars)
    assert result.tokens_before == seen[0] == sum(len(to_text(m)) for m in messages)
    assert len(seen) == 1 + len(result.trimmed)
    assert result.tokens_after == seen[-1] <= seen[0] // 2


def test_nothing_to_trim_is_reported():
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "很长的系统提示。" * 200},
        {"role": "user", "content": "你好"},
    ]
    result = emergency_trim(messages)
    assert result.trimmed == () and result.nothing_left and not result.reached_target
    assert result.messages == messages


def test_each_trimmed_result_is_declared_as_the_emergency_trim_stage(monkeypatch):
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    monkeypatch.setattr(trimming, "measure", lambda *a, **kw: calls.append((a, kw)))
    result = emergency_trim(openai_history(), model=MODEL)
    assert [kw["tool_call_id"] for _, kw in calls] == list(result.trimmed)
    args, kw = calls[0]
    assert args == ("emergency_trim", EMERGENCY_TRIM_PLACEHOLDER)
    assert kw["tool_name"] == TOOLS[0][0]
    assert (kw["order"], kw["declared"], kw["strategy"], kw["marker"]) == (
        35,
        True,
        "emergency_trim",
        True,
    )


def test_the_declared_stage_reaches_the_local_ledger_without_an_orphan(tmp_path: Path):
    path = tmp_path / "l.txt"
    client = ctxledger.configure(service_name="t", export=False, ledger=str(path))
    try:
        messages = openai_history()
        with ctxledger.run("sre-agent"):
            ctxledger.measure_messages(messages, model=MODEL)
            result = emergency_trim(messages, model=MODEL)
            ctxledger.measure_request({"model": MODEL, "messages": result.messages})
        ctxledger.flush()
        lines = path.read_text(encoding="utf-8").splitlines()
    finally:
        client.shutdown()
    losses = [line for line in lines if " LOSS " in line]
    assert losses, lines
    assert all("LOSS declared" in line for line in losses), losses
    assert {cid for cid in ALL_IDS if any(f"[{cid}]" in line for line in losses)} == set(
        result.trimmed
    )
    assert not any("orphan" in line for line in lines), lines
    stages = [line for line in lines if "] emergency_trim" in line]
    assert len(stages) == len(result.trimmed)
    assert all("declared=emergency_trim" in line for line in stages)


# --- recognising the provider's error ----------------------------------------------------


class FakeBadRequestError(Exception):
    """Shaped like ``openai.BadRequestError``: message, status_code, code, body."""

    def __init__(self, message: str, body: dict[str, Any], status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.body = body
        self.code = body.get("code")


def openai_overflow(tokens: int = 130_000) -> FakeBadRequestError:
    body = {
        "message": f"This model's maximum context length is 128000 tokens. However, your "
        f"messages resulted in {tokens} tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
    return FakeBadRequestError(f"Error code: 400 - {{'error': {body}}}", body)


class FakeAnthropicError(Exception):
    """Shaped like ``anthropic.BadRequestError``: the body is the whole error document."""

    def __init__(self, status_code: int, error_type: str, message: str) -> None:
        self.body = {"type": "error", "error": {"type": error_type, "message": message}}
        super().__init__(f"Error code: {status_code} - {self.body}")
        self.status_code = status_code


class FakeResponse:
    def __init__(self, status_code: int, text: str) -> None:
        self.status_code = status_code
        self.text = text


class FakeHTTPStatusError(Exception):
    """Shaped like ``httpx.HTTPStatusError``: the status and text are on ``response``."""

    def __init__(self, status_code: int, text: str) -> None:
        super().__init__(f"Client error '{status_code}'")
        self.response = FakeResponse(status_code, text)


OVERFLOWS: dict[str, BaseException] = {
    "openai": openai_overflow(),
    "openai_code_only_in_body": FakeBadRequestError(
        "Error code: 400", {"error": {"code": "context_length_exceeded"}}
    ),
    "anthropic_prompt_too_long": FakeAnthropicError(
        400, "invalid_request_error", "prompt is too long: 209840 tokens > 200000 maximum"
    ),
    "anthropic_input_and_max_tokens": FakeAnthropicError(
        400,
        "invalid_request_error",
        "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, "
        "decrease input length or `max_tokens` and try again",
    ),
    "anthropic_413": FakeAnthropicError(
        413, "request_too_large", "Request exceeds the maximum size"
    ),
    "http_400_body": FakeHTTPStatusError(
        400, '{"object":"error","message":"This model\'s maximum context length is 32768 tokens"}'
    ),
    "http_413_body": FakeHTTPStatusError(413, "413 Request Entity Too Large"),
    "wrapped": RuntimeError("the agent framework failed"),
}
OVERFLOWS["wrapped"].__cause__ = openai_overflow()

NOT_OVERFLOWS: dict[str, BaseException] = {
    "rate_limit_429": FakeBadRequestError(
        "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000",
        {"code": "rate_limit_exceeded", "type": "tokens"},
        status_code=429,
    ),
    "output_max_tokens": FakeAnthropicError(
        400,
        "invalid_request_error",
        "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens",
    ),
    "server_error": FakeHTTPStatusError(500, "prompt is too long? internal error"),
    "auth": FakeAnthropicError(401, "authentication_error", "invalid x-api-key"),
    "plain": ValueError("boom"),
    "timeout": TimeoutError("read timed out"),
}


@pytest.mark.parametrize("name", sorted(OVERFLOWS))
def test_provider_overflow_errors_are_recognised(name: str):
    assert is_context_length_error(OVERFLOWS[name])


@pytest.mark.parametrize("name", sorted(NOT_OVERFLOWS))
def test_other_errors_are_not_overflows(name: str):
    assert not is_context_length_error(NOT_OVERFLOWS[name])


def test_the_real_openai_error_is_recognised():
    openai = pytest.importorskip("openai")
    httpx = pytest.importorskip("httpx")
    fake = openai_overflow()
    request = httpx.Request("POST", "https://api.openai.com/v1/chat/completions")
    response = httpx.Response(400, request=request, json={"error": fake.body})
    error = openai.BadRequestError(fake.message, response=response, body=fake.body)
    assert is_context_length_error(error)


def test_the_predicate_list_is_extensible(monkeypatch):
    class GatewayError(Exception):
        reason = "CONTEXT_OVERFLOW"

    assert not is_context_length_error(GatewayError())

    def broken(error: BaseException) -> bool:
        raise KeyError("a predicate that raises counts as no")

    extended = [
        *emergency.CONTEXT_LENGTH_PREDICATES,
        broken,
        lambda e: getattr(e, "reason", None) == "CONTEXT_OVERFLOW",
    ]
    monkeypatch.setattr(overflow, "CONTEXT_LENGTH_PREDICATES", extended)
    assert is_context_length_error(GatewayError())
    assert not is_context_length_error(ValueError("boom"))


# --- trim and retry ------------------------------------------------------------------------


class FakeProvider:
    """A stand-in for the provider: rejects a request over ``limit`` estimated tokens
    with an error shaped like openai's, and records every request it receives."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.received: list[list[Any]] = []
        self.errors: list[BaseException] = []

    def __call__(self, messages: list[Any]) -> str:
        self.received.append(copy.deepcopy(messages))
        tokens = estimate_tokens(messages, MODEL)
        if tokens > self.limit:
            error = openai_overflow(tokens)
            self.errors.append(error)
            raise error
        return f"ok after {len(self.received)} calls"


@pytest.fixture
def no_sleep(monkeypatch):
    def refuse(*_: Any) -> None:
        raise AssertionError("the retry must not sleep")

    monkeypatch.setattr(time, "sleep", refuse)
    monkeypatch.setattr(asyncio, "sleep", refuse)


def two_rounds() -> tuple[list[dict[str, Any]], TrimResult, TrimResult, int]:
    """A history, its first and second trims, and a limit only the second one fits."""
    messages = openai_history()
    first = emergency_trim(messages, model=MODEL)
    second = emergency_trim(first.messages, model=MODEL)
    assert second.tokens_after < first.tokens_after
    return messages, first, second, (first.tokens_after + second.tokens_after) // 2


def test_retry_trims_and_resends_at_once_until_it_fits(no_sleep):
    messages, first, second, limit = two_rounds()
    snapshot = copy.deepcopy(messages)
    provider = FakeProvider(limit)
    answer = call_with_emergency_trim(provider, messages, model=MODEL)
    assert answer == "ok after 3 calls"
    assert len(provider.received) == 3  # original, trimmed once, trimmed twice
    assert provider.received == [messages, first.messages, second.messages]
    assert messages == snapshot  # the stored history is unchanged
    for sent in provider.received:
        assert_paired(sent)


def test_a_request_that_fits_is_sent_once_untouched(no_sleep):
    messages = openai_history()
    provider = FakeProvider(limit=10**9)
    assert call_with_emergency_trim(provider, messages) == "ok after 1 calls"
    assert provider.received == [messages]


def test_the_original_error_comes_back_when_nothing_is_left(no_sleep):
    messages = openai_history()
    provider = FakeProvider(limit=0)  # even an empty request overflows
    with pytest.raises(FakeBadRequestError) as raised:
        call_with_emergency_trim(provider, messages, model=MODEL)
    assert raised.value is provider.errors[0]  # the first error, not the last one
    assert len(provider.errors) > 2
    assert len(provider.received) == len(provider.errors)
    assert placeholder_ids(provider.received[-1]) == ALL_IDS  # everything was trimmed
    assert placeholder_ids(provider.received[-2]) != ALL_IDS  # and only then it gave up


def test_max_rounds_bounds_the_retries(no_sleep):
    provider = FakeProvider(limit=0)
    with pytest.raises(FakeBadRequestError) as raised:
        call_with_emergency_trim(provider, openai_history(), max_rounds=1)
    assert raised.value is provider.errors[0]
    assert len(provider.received) == 2


def test_other_errors_are_not_retried(no_sleep):
    received: list[list[Any]] = []

    def provider(messages: list[Any]) -> str:
        received.append(messages)
        raise NOT_OVERFLOWS["rate_limit_429"]

    with pytest.raises(FakeBadRequestError):
        call_with_emergency_trim(provider, openai_history())
    assert len(received) == 1


def test_a_custom_overflow_predicate_is_honoured(no_sleep):
    calls: list[int] = []

    class TooBig(Exception):
        pass

    def provider(messages: list[Any]) -> int:
        calls.append(len(placeholder_ids(messages)))
        if not placeholder_ids(messages):
            raise TooBig()
        return len(calls)

    assert (
        call_with_emergency_trim(
            provider, openai_history(), is_overflow=lambda e: isinstance(e, TooBig)
        )
        == 2
    )
    assert calls[0] == 0 and calls[1] > 0


def test_async_twin_retries_at_once_and_returns_the_original_error(no_sleep):
    messages, first, second, limit = two_rounds()
    provider = FakeProvider(limit)

    async def send(msgs: list[Any]) -> str:
        return provider(msgs)

    assert asyncio.run(acall_with_emergency_trim(send, messages, model=MODEL)) == (
        "ok after 3 calls"
    )
    assert provider.received == [messages, first.messages, second.messages]

    stuck = FakeProvider(limit=0)

    async def send_stuck(msgs: list[Any]) -> str:
        return stuck(msgs)

    with pytest.raises(FakeBadRequestError) as raised:
        asyncio.run(acall_with_emergency_trim(send_stuck, messages, model=MODEL))
    assert raised.value is stuck.errors[0]


def test_each_overflow_is_an_event_on_the_current_span(no_sleep):
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider_otel = TracerProvider()
    provider_otel.add_span_processor(SimpleSpanProcessor(exporter))
    messages, _, _, limit = two_rounds()
    provider = FakeProvider(limit)
    with provider_otel.get_tracer("app").start_as_current_span("llm.call"):
        call_with_emergency_trim(provider, messages, model=MODEL)
    (span,) = exporter.get_finished_spans()
    events = [e for e in span.events if e.name == EVENT_CONTEXT_LENGTH_EXCEEDED]
    assert len(events) == len(provider.errors) == 2
    attributes = events[0].attributes or {}
    assert attributes["error.type"] == "FakeBadRequestError"
    assert attributes["http.response.status_code"] == 400
    assert attributes["gen_ai.request.model"] == MODEL
    assert "maximum context length" in str(attributes["ctxledger.error.message"])
    assert attributes["ctxledger.emergency_trim.trimmed"] > 0
    assert [e.attributes["ctxledger.emergency_trim.attempt"] for e in events] == [1, 2]


def test_without_a_span_the_event_is_a_no_op(no_sleep):
    messages, _, _, limit = two_rounds()
    assert call_with_emergency_trim(FakeProvider(limit), messages, model=MODEL) == (
        "ok after 3 calls"
    )
