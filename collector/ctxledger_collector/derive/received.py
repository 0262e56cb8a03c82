"""Stage ``received`` from an LLM span: the input tokens its usage reports, met with the
request as the span shows it, counted as the SDK counts a request body (contract §7).

Only a span that shows its whole input (every tool result whole too) and reports a usage
count gives one: a request counted from part of itself would err low and hide a discard.
The server's policy comes from the provider the span names and the host it reached: the
hosted APIs refuse an over-long prompt (an error, never a discard); ollama (its name,
its port 11434 or its ``fp_ollama`` fingerprint) discards the oldest messages; any other
server's policy is unknown and the rule assumes it discards from the front, and says so.
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter
from typing import Any, Final

from ctxledger import semconv as sc
from ctxledger.models import tokenizer_is_exact
from ctxledger.request_count import counter_for_model
from ctxledger.verdicts import Manifest
from ctxledger.verdicts.model import ReceivedRecord
from ctxledger_collector.derive.messages import Exchange
from ctxledger_collector.derive.request_segments import request_segments
from ctxledger_collector.derive.spans import SourceSpan

#: Provider names (``gen_ai.provider.name``, ``gen_ai.system``, ``llm.provider``) of the
#: hosted APIs other than OpenAI's, which answer an over-long prompt with an error.
_HOSTED: Final = frozenset(
    {
        "anthropic",
        "aws.bedrock",
        "azure.ai.inference",
        "azure.ai.openai",
        "az.ai.inference",
        "az.ai.openai",
        "azure",
        "bedrock",
        "cohere",
        "deepseek",
        "gcp.gemini",
        "gcp.gen_ai",
        "gcp.vertex_ai",
        "google",
        "groq",
        "mistral_ai",
        "mistralai",
        "perplexity",
        "vertexai",
        "x_ai",
        "xai",
    }
)
_OLLAMA_PORT: Final = 11434
_LOCAL_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def _text(attrs: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = attrs.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def server_policy(attrs: dict[str, Any]) -> str | None:
    """What the server the span reached does with an over-long prompt, where known.

    ``gen_ai.provider.name`` (``gen_ai.system`` before it) names the client's API, so
    ``openai`` is OpenAI only at OpenAI's host; OpenInference's ``llm.provider`` is
    inferred from the host, so it names the server itself (its ``llm.system`` names the
    client and says nothing of the server).
    """
    named = _text(attrs, sc.GEN_AI_PROVIDER_NAME, sc.GEN_AI_SYSTEM)
    inferred = _text(attrs, sc.LLM_PROVIDER)
    provider = (inferred or named or "").lower()
    host = (_text(attrs, sc.SERVER_ADDRESS) or "").lower().rstrip(".")
    port = attrs.get(sc.SERVER_PORT)
    fingerprint = _text(attrs, *sc.GEN_AI_SYSTEM_FINGERPRINTS)
    if provider == "ollama" or port == _OLLAMA_PORT or fingerprint == "fp_ollama":
        return sc.POLICY_FRONT_DISCARD
    if host in _LOCAL_HOSTS:
        return None
    if provider in _HOSTED or (inferred or "").lower() == "openai":
        return sc.POLICY_REFUSE
    if host == "api.openai.com" or host.endswith(".openai.azure.com"):
        return sc.POLICY_REFUSE
    return None


_CUT = attrgetter("cut")
_RESULTS = attrgetter("results")


def received_record(
    span: SourceSpan, exchange: Exchange, model: str | None, manifest: Manifest
) -> ReceivedRecord | None:
    """The ``received`` record of an LLM span's request; None when the span cannot give
    one (its input not shown whole, no tool result in it, no usage, a failed request)."""
    inputs = exchange.input
    if inputs is None or exchange.input_cut is not None or span.failed:
        return None
    if manifest.tokens is None or not manifest.tool_call_ids:
        return None
    if any(map(_CUT, chain.from_iterable(map(_RESULTS, inputs)))):  # a long run's: hundreds
        return None
    count, tokenizer = counter_for_model(model)
    segments = request_segments(exchange, count, tokenizer, model)
    attrs = span.attributes
    policy = server_policy(attrs)
    return ReceivedRecord(
        trace_id=span.trace_id,
        request_id=manifest.request_id,
        input_tokens=manifest.tokens,
        counted_tokens=segments.counted_tokens,
        tokenizer=tokenizer,
        exact=tokenizer_is_exact(model, _text(attrs, sc.SERVER_ADDRESS), tokenizer),
        policy=policy,
        segment_call_ids=segments.call_ids,
        segment_tokens=segments.tokens,
        segment_chars=segments.chars,
        segment_roles=segments.roles,
        step=manifest.step,
        agent_name=manifest.agent_name,
        observed_at=manifest.observed_at,
        span_id=span.span_id,
        source=manifest.source,
    )
