"""The input tokens an LLM span's usage reports, as the whole prompt the server read
(contract section 7): cached tokens included, whichever shape the instrumentation uses.

The GenAI conventions count cache reads and writes inside ``gen_ai.usage.input_tokens``,
and most instrumentations follow them (the OTel and OpenLLMetry Anthropic ones,
OpenInference's Python one, pydantic-ai, Logfire, the AI SDK from version 6, and every
OpenAI client, whose ``prompt_tokens`` include cached tokens). Anthropic's own
``usage.input_tokens`` leaves them out, and a few instrumentations pass it on as is:

* Strands Agents reports the provider's raw count with the cache counts beside it
  (``gen_ai.usage.cache_read_input_tokens``, ``…cache_write_input_tokens``): summed here.
* The AI SDK before version 6 reports Anthropic's raw count, the cache reads as
  ``ai.usage.cachedInputTokens`` (version 5) and the cache writes only in
  ``ai.response.providerMetadata``: summed here.
* OpenInference's JS Anthropic instrumentation reports the raw count and no cache counts:
  the count cannot be judged (a cached request would look like a discard).

A count that cannot be judged is None: never a false loss.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from ctxledger import semconv as sc
from ctxledger_collector.derive.spans import SourceSpan

_COUNT_LIMIT: Final = 2**31

STRANDS_SCOPE: Final = "strands.telemetry.tracer"
STRANDS_CACHE_COUNTS: Final = (
    "gen_ai.usage.cache_read_input_tokens",
    "gen_ai.usage.cache_write_input_tokens",
)
OPENINFERENCE_JS_ANTHROPIC_SCOPE: Final = "@arizeai/openinference-instrumentation-anthropic"

AI_CACHED_INPUT_TOKENS: Final = "ai.usage.cachedInputTokens"
"""AI SDK 5: the cache reads (Anthropic's ``inputTokens`` then left them out)."""
AI_INPUT_TOKEN_DETAILS: Final = "ai.usage.inputTokenDetails."
"""AI SDK 6 on: ``…noCacheTokens``, ``…cacheReadTokens``, ``…cacheWriteTokens``, with
``inputTokens`` their total."""
AI_MODEL_PROVIDER: Final = "ai.model.provider"
AI_PROVIDER_METADATA: Final = "ai.response.providerMetadata"


def _count(value: Any) -> int | None:
    if type(value) is int and 0 <= value < _COUNT_LIMIT:
        return value
    return None


def token_count(value: Any) -> int | None:
    """A token count as a runtime may send it: an integer, or its text (Claude Code's
    ``"13892"``, ``"0.0"``); None for anything else."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        value = int(number) if number.is_integer() else None
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    return _count(value)


def _first_count(attrs: dict[str, Any], names: Iterable[str]) -> int | None:
    for name in names:
        if name in attrs:
            return _count(attrs[name])
    return None


def _provider(attrs: dict[str, Any]) -> str:
    for name in (AI_MODEL_PROVIDER, sc.GEN_AI_PROVIDER_NAME, sc.GEN_AI_SYSTEM, sc.LLM_PROVIDER):
        value = attrs.get(name)
        if isinstance(value, str) and value:
            return value.lower()
    return ""


def _added(raw: int, extras: Iterable[Any]) -> int | None:
    """``raw`` plus every extra count present; None when one of them is not a count."""
    total = raw
    for value in extras:
        if value is None:
            continue
        count = _count(value)
        if count is None:
            return None
        total += count
    return total if total < _COUNT_LIMIT else None


def _anthropic_metadata(attrs: dict[str, Any]) -> dict[str, Any]:
    """``ai.response.providerMetadata``'s ``anthropic`` object (its cache counts)."""
    metadata = attrs.get(AI_PROVIDER_METADATA)
    if not isinstance(metadata, str):
        return {}
    try:
        anthropic = json.loads(metadata).get("anthropic")
    except (ValueError, AttributeError):
        return {}
    return anthropic if isinstance(anthropic, dict) else {}


def _ai_sdk(attrs: dict[str, Any], raw: int) -> int | None:
    """The AI SDK's count. From version 6 ``inputTokens`` is the total (its details are
    there); before, Anthropic's raw count plus its cache reads and writes, another
    provider's count as reported (OpenAI's includes cached tokens), and an unknown
    provider's count with cache reads cannot be judged."""
    if any(name.startswith(AI_INPUT_TOKEN_DETAILS) for name in attrs):
        return raw
    provider = _provider(attrs)
    cached = attrs.get(AI_CACHED_INPUT_TOKENS)
    if provider.startswith("anthropic"):
        metadata = _anthropic_metadata(attrs)
        reads = cached if cached is not None else metadata.get("cacheReadInputTokens")
        return _added(raw, (reads, metadata.get("cacheCreationInputTokens")))
    if provider.startswith(("openai", "azure")) or not _count(cached):
        return raw
    return None


def reported_input_tokens(span: SourceSpan) -> int | None:
    """The whole prompt's tokens the span's usage reports; None when it reports none or a
    count that cannot be judged."""
    attrs = span.attributes
    raw = _first_count(attrs, (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.LLM_TOKEN_COUNT_PROMPT))
    if raw is None:
        return None
    if span.scope_name == STRANDS_SCOPE:
        return _added(raw, (attrs.get(name) for name in STRANDS_CACHE_COUNTS))
    if span.scope_name == OPENINFERENCE_JS_ANTHROPIC_SCOPE:
        return None
    if sc.AI_OPERATION_ID in attrs:
        return _ai_sdk(attrs, raw)
    return raw
