"""When the telemetry itself could not show a value whole. Such a value is never judged
as pipeline loss: derivation records why (``telemetry_cut``) and the journey is
``unauditable``, with the reason and the fix in its report.

The OpenTelemetry SDK slices attribute values at ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``
(``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT``) without a marker, and evicts the oldest
attributes past ``OTEL_ATTRIBUTE_COUNT_LIMIT`` (128 by default), counting them in the
span's ``dropped_attributes_count``; OpenLLMetry's tool decorator slices its JSON output
at the same limit. A cut shows as JSON that no longer parses where the convention asks
for JSON, or as a value exactly as long as such a cut one, or exactly at a limit people
commonly set.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ctxledger import semconv as sc
from ctxledger.semconv import AI_SCOPES as AI_SDK_SCOPES

#: Value length limits commonly configured (powers of two, their off-by-one forms, round
#: numbers). A tool result exactly this long is taken for a cut one.
COMMON_LIMITS = frozenset(
    {1024, 2047, 2048, 4095, 4096, 8191, 8192, 10_000, 16_383, 16_384, 32_767, 32_768,
     65_535, 65_536, 100_000, 131_072, 1_000_000, 1_048_576}
)  # fmt: skip

_FIX_LENGTH = (
    "raise OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT (or OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT), "
    "or add ctxledger's stage spans"
)
_FIX_COUNT = (
    "raise OTEL_ATTRIBUTE_COUNT_LIMIT (or OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT), "
    "or add ctxledger's stage spans"
)
_FIX_CONTENT = "capture message content on spans, or add ctxledger's stage spans"


def looks_cut(length: int, cut_lengths: Collection[int]) -> bool:
    """Whether a value of ``length`` chars was likely sliced by a length limit."""
    return length in COMMON_LIMITS or length in cut_lengths


def invalid_json(attribute: str, length: int) -> str:
    return (
        f"{attribute} is not valid JSON at {length} chars: cut by an attribute length limit "
        f"(no marker); {_FIX_LENGTH}"
    )


def at_limit(what: str, length: int) -> str:
    return (
        f"{what} is exactly {length} chars, the length of an attribute limit: cut by the "
        f"telemetry (no marker); {_FIX_LENGTH}"
    )


def evicted(count: int) -> str:
    return (
        f"the span lost {count} attributes to the attribute count limit, so messages may "
        f"be missing; {_FIX_COUNT}"
    )


def off_span(reference: str) -> str:
    return (
        f"the messages are stored off span ({reference}); ctxledger reads span content "
        f"only: {_FIX_CONTENT}"
    )


#: What OpenTelemetry's GenAI instrumentations (``openai-v2`` and the others built on
#: ``opentelemetry-util-genai``) need to put the messages on the span.
OTEL_GENAI_FIX = (
    "OpenTelemetry's GenAI instrumentation (opentelemetry-instrumentation-openai-v2) records "
    "message content on the span only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="
    "span_only (or span_and_event) and OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental "
    "(unset, false, event_only or the older conventions keep it off the span or in log "
    "events, which ctxledger does not read)"
)
OPENLLMETRY_FIX = (
    "OpenLLMetry (traceloop, opentelemetry-instrumentation-openai) records no messages with "
    "TRACELOOP_TRACE_CONTENT=false: unset it or set it to true"
)
#: Which OpenInference setting hides what (``openinference-instrumentation``'s config).
OPENINFERENCE_HIDDEN_BY = {
    "inputs": "OPENINFERENCE_HIDE_INPUTS",
    "outputs": "OPENINFERENCE_HIDE_OUTPUTS",
    "input messages": "OPENINFERENCE_HIDE_INPUT_MESSAGES",
    "input text": "OPENINFERENCE_HIDE_INPUT_TEXT",
}
VERCEL_AI_FIX = (
    "the Vercel AI SDK records prompts, responses and tool results on its spans only with "
    "experimental_telemetry recordInputs and recordOutputs true (the default; false keeps "
    "them off)"
)
PYDANTIC_AI_FIX = (
    "pydantic-ai records prompts, tool arguments and results only with "
    "InstrumentationSettings(include_content=True) (the default; include_content=False "
    "keeps them off)"
)
#: The tracer Claude Code's spans come from, and what it needs to show content.
CLAUDE_CODE_SCOPE = "com.anthropic.claude_code.tracing"
CLAUDE_CODE_OUTPUT_FIX = (
    "Claude Code records a tool's output on its claude_code.tool span (a tool.output event) "
    "only with OTEL_LOG_TOOL_CONTENT=1 and CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1"
)
CLAUDE_CODE_MESSAGES_FIX = (
    "Claude Code's llm_request spans never carry the messages; the request as sent is in "
    "its claude_code.api_request_body log events: set OTEL_LOG_RAW_API_BODIES=1 and "
    "OTEL_LOGS_EXPORTER=otlp, exporting logs to the collector's /v1/logs"
)
#: The tracer name pydantic-ai's instrumentation (and Logfire's) uses.
PYDANTIC_AI_SCOPE = "pydantic-ai"
STRANDS_SCOPE = "strands.telemetry.tracer"
#: The tracer Google ADK's spans come from.
ADK_SCOPE = "gcp.vertex.agent"
#: Tracers of runtimes and frameworks whose spans are reported under their own source.
FRAMEWORK_SOURCES = {
    CLAUDE_CODE_SCOPE: sc.SOURCE_CLAUDE_CODE,
    PYDANTIC_AI_SCOPE: sc.SOURCE_PYDANTIC_AI,
    STRANDS_SCOPE: sc.SOURCE_STRANDS,
    ADK_SCOPE: sc.SOURCE_ADK,
}
ADK_FIX = (
    "Google ADK records prompts, tool arguments and results on its spans only with "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only (or span_and_event); "
    "its older spans (ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1) with "
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS unset or true"
)
STRANDS_FIX = (
    "Strands replaces messages and tool results by [REDACTED] when "
    "OTEL_SEMCONV_STABILITY_OPT_IN holds gen_ai_unredacted_attributes=...: list "
    "gen_ai.input.messages;gen_ai.output.messages;gen_ai.tool.call.result there, or drop it"
)
_OPENLLMETRY_SIGNS = ("gen_ai.is_streaming", "llm.is_streaming", "llm.request.type")


def redacted(attribute: str, hidden: str) -> str:
    """OpenInference replaced a value by ``__REDACTED__``; ``hidden`` is what its
    settings call the kind of value (a key of :data:`OPENINFERENCE_HIDDEN_BY`)."""
    setting = OPENINFERENCE_HIDDEN_BY[hidden]
    return (
        f"{attribute} is redacted: OpenInference hides the {hidden} with {setting}=true; "
        f"unset {setting}, or add ctxledger's stage spans"
    )


def input_messages_hidden() -> str:
    setting = OPENINFERENCE_HIDDEN_BY["input messages"]
    return (
        f"the span carries no llm.input_messages: OpenInference hides the input messages with "
        f"{setting}=true; unset {setting}, or add ctxledger's stage spans"
    )


def _openllmetry(scope: str | None, attributes: Mapping[str, Any]) -> bool:
    if scope is not None and scope.startswith("opentelemetry.instrumentation.openai.v"):
        return True
    return any(k in attributes for k in _OPENLLMETRY_SIGNS) or any(
        k.startswith("traceloop.") for k in attributes
    )


def _vercel_ai(scope: str | None) -> bool:
    return scope in AI_SDK_SCOPES


def vercel_ai_no_content(attribute: str) -> str:
    return f"the span carries no {attribute} (content capture is off): {VERCEL_AI_FIX}"


def no_messages(scope: str | None, attributes: Mapping[str, Any]) -> str:
    """Why an inference span shows no messages at all, and the setting that adds them."""
    if scope == CLAUDE_CODE_SCOPE:
        return f"the span carries no gen_ai.input.messages: {CLAUDE_CODE_MESSAGES_FIX}"
    if _vercel_ai(scope):
        return vercel_ai_no_content("gen_ai.input.messages")
    if scope == PYDANTIC_AI_SCOPE:
        return (
            f"the span carries no gen_ai.input.messages (content capture is off): {PYDANTIC_AI_FIX}"
        )
    if scope == STRANDS_SCOPE:
        return f"the span's messages are redacted: {STRANDS_FIX}"
    if scope == ADK_SCOPE:
        return f"the span carries no gen_ai.input.messages (content capture is off): {ADK_FIX}"
    fix = OPENLLMETRY_FIX if _openllmetry(scope, attributes) else OTEL_GENAI_FIX
    return f"the span carries no gen_ai.input.messages (content capture is off): {fix}"


def no_content(attribute: str, scope: str | None, attributes: Mapping[str, Any]) -> str:
    """A tool span without its result: the instrumentation's setting, where it is known."""
    if _vercel_ai(scope):
        return vercel_ai_no_content(attribute)
    if scope == PYDANTIC_AI_SCOPE:
        return f"the span carries no {attribute} (content capture is off): {PYDANTIC_AI_FIX}"
    if scope == STRANDS_SCOPE:
        return f"the span's {attribute} is redacted: {STRANDS_FIX}"
    if scope == ADK_SCOPE:
        return f"the span carries no {attribute} (content capture is off): {ADK_FIX}"
    if _openllmetry(scope, attributes):
        fix = OPENLLMETRY_FIX
    else:
        fix = f"record {attribute} on the tool span ({_FIX_CONTENT})"
    return f"the span carries no {attribute} (content capture is off): {fix}"


def ends_like_json(text: str) -> bool:
    """A cheap check that a JSON document is whole: it ends as one must."""
    return text.rstrip().endswith(("}", "]", '"'))
