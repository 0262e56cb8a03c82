"""The input tokens an inference span reports, cached tokens included whatever the
instrumentation's shape: a cached request is never a discard at the model server."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from ctxledger import semconv as sc
from ctxledger.verdicts.received import judge_received
from ctxledger_collector.derive import derive_span
from ctxledger_collector.derive.usage import (
    OPENINFERENCE_JS_ANTHROPIC_SCOPE,
    STRANDS_SCOPE,
    reported_input_tokens,
)
from tests.collector.test_derive_received import chat_span, counted

ANTHROPIC_METADATA = "ai.response.providerMetadata"
AI_SDK = {sc.AI_OPERATION_ID: "ai.generateText.doGenerate"}


def _span(usage: int, scope: str | None = None, **attributes: Any) -> Any:
    return replace(chat_span(usage, **attributes), scope_name=scope)


@pytest.mark.parametrize(
    ("scope", "attributes", "expected"),
    [
        # The GenAI conventions (OTel, OpenLLMetry, OpenInference Python, pydantic-ai):
        # cache reads and writes are inside input_tokens already.
        (
            "opentelemetry.instrumentation.anthropic",
            {"gen_ai.usage.cache_read.input_tokens": 900},
            1000,
        ),
        ("pydantic-ai", {"gen_ai.usage.cache_write.input_tokens": 40}, 1000),
        # Strands: the provider's raw count, the cache counts beside it.
        (
            STRANDS_SCOPE,
            {
                "gen_ai.usage.cache_read_input_tokens": 900,
                "gen_ai.usage.cache_write_input_tokens": 40,
            },
            1940,
        ),
        (STRANDS_SCOPE, {}, 1000),
        (STRANDS_SCOPE, {"gen_ai.usage.cache_read_input_tokens": "900"}, None),
        # OpenInference JS: Anthropic's raw count and no cache counts at all.
        (OPENINFERENCE_JS_ANTHROPIC_SCOPE, {}, None),
        # AI SDK 5 on Anthropic: cache reads apart, cache writes in the provider metadata.
        (
            "ai",
            {
                **AI_SDK,
                "ai.model.provider": "anthropic.messages",
                "ai.usage.cachedInputTokens": 900,
                ANTHROPIC_METADATA: json.dumps({"anthropic": {"cacheCreationInputTokens": 40}}),
            },
            1940,
        ),
        # AI SDK 4 on Anthropic: both cache counts in the provider metadata.
        (
            "ai",
            {
                **AI_SDK,
                "ai.model.provider": "anthropic.messages",
                ANTHROPIC_METADATA: json.dumps(
                    {"anthropic": {"cacheReadInputTokens": 900, "cacheCreationInputTokens": 0}}
                ),
            },
            1900,
        ),
        # AI SDK 6 on: inputTokens is the total, its details beside it.
        (
            "ai",
            {
                **AI_SDK,
                "ai.model.provider": "anthropic.messages",
                "ai.usage.cachedInputTokens": 900,
                "ai.usage.inputTokenDetails.cacheReadTokens": 900,
            },
            1000,
        ),
        # OpenAI's prompt_tokens include cached tokens; an unknown provider cannot be judged.
        (
            "ai",
            {**AI_SDK, "ai.model.provider": "openai.chat", "ai.usage.cachedInputTokens": 9},
            1000,
        ),
        ("ai", {**AI_SDK, "ai.model.provider": "bedrock", "ai.usage.cachedInputTokens": 9}, None),
        ("ai", {**AI_SDK, "ai.model.provider": "bedrock", "ai.usage.cachedInputTokens": 0}, 1000),
    ],
)
def test_each_shape_gives_the_whole_prompts_tokens(
    scope: str, attributes: dict[str, Any], expected: int | None
) -> None:
    assert reported_input_tokens(_span(1000, scope, **attributes)) == expected


def test_a_count_out_of_range_is_no_count() -> None:
    assert reported_input_tokens(_span(-1)) is None
    assert reported_input_tokens(_span(2**31)) is None
    assert reported_input_tokens(_span(True)) is None  # type: ignore[arg-type]


def test_a_cached_strands_request_is_read_whole_not_discarded() -> None:
    """Behind ollama (front discard): the raw count alone would say the older result fell
    out; with the cache reads it was all read."""
    whole = counted()
    cached = whole - 100
    span = _span(
        100,
        STRANDS_SCOPE,
        **{sc.GEN_AI_PROVIDER_NAME: "ollama", "gen_ai.usage.cache_read_input_tokens": cached},
    )
    derived = derive_span(span)
    assert derived is not None and derived.received is not None
    assert derived.received.input_tokens == whole
    outcome = {r.call_id: r.outcome for r in judge_received(derived.received).results}
    assert outcome == {"call_old": "kept", "call_new": "kept"}
    # The same request read short by more than the tolerance is still a discard.
    short = _span(
        100,
        STRANDS_SCOPE,
        **{sc.GEN_AI_PROVIDER_NAME: "ollama", "gen_ai.usage.cache_read_input_tokens": 20},
    )
    derived = derive_span(short)
    assert derived is not None and derived.received is not None
    outcome = {r.call_id: r.outcome for r in judge_received(derived.received).results}
    assert outcome == {"call_old": "dropped", "call_new": "kept"}


def test_openinference_js_on_anthropic_gives_no_received_stage() -> None:
    span = _span(10, OPENINFERENCE_JS_ANTHROPIC_SCOPE, **{sc.GEN_AI_PROVIDER_NAME: "ollama"})
    derived = derive_span(span)
    assert derived is not None and derived.received is None
