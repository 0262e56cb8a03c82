"""The Vercel AI SDK's own ``ai.*`` spans (built into ``ai`` 4-6; ``LegacyOpenTelemetry``
of ``@ai-sdk/otel`` in ``ai`` 7): each provider call (``ai.generateText.doGenerate``,
``ai.streamText.doStream``, …) is one request, with the prompt as handed to the provider
in ``ai.prompt.messages`` and the calls its response issued in ``ai.response.toolCalls``.
The wrapping ``ai.generateText`` / ``ai.streamText`` spans are not requests. The newer
``@ai-sdk/otel`` ``OpenTelemetry`` integration writes GenAI spans, read as those."""

from __future__ import annotations

from typing import Any

from ctxledger import semconv as sc
from ctxledger_collector.derive import cuts
from ctxledger_collector.derive.json_prefix import complete_elements
from ctxledger_collector.derive.messages import (
    Exchange,
    Message,
    ToolCall,
    ToolResult,
    as_text,
    parse_json,
)
from ctxledger_collector.derive.spans import SourceSpan

#: The ``ai.response.*`` attributes recorded only with ``recordOutputs``: a span that has
#: one of them says what its response issued (no ``ai.response.toolCalls``: no calls).
_RECORDED_OUTPUTS = ("ai.response.text", sc.AI_RESPONSE_TOOL_CALLS, "ai.response.object")


def is_model_call(attributes: dict[str, Any]) -> bool:
    operation = attributes.get(sc.AI_OPERATION_ID)
    return isinstance(operation, str) and operation.endswith(sc.AI_MODEL_REQUEST_SUFFIXES)


def _id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _result_value(part: dict[str, Any]) -> Any:
    """A ``tool-result`` part's value as the provider sends it: AI SDK 5+ wraps it as
    ``output: {"type": "json" | "text" | "content" | "error-*", "value"}``; AI SDK 4 had
    the raw ``result``."""
    output = part.get("output")
    if isinstance(output, dict) and "value" in output:
        value = output["value"]
        if output.get("type") == "content" and isinstance(value, list):
            texts = [p.get("text") for p in value if isinstance(p, dict)]
            if all(isinstance(t, str) for t in texts):
                return "".join(str(t) for t in texts)
        return value
    return part.get("result", output)


def _message(raw: dict[str, Any]) -> Message:
    message = Message(str(raw.get("role") or ""))
    content = raw.get("content")
    if isinstance(content, str):
        message.texts.append(content)
        return message
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            message.texts.append(as_text(part.get("text")))
        elif kind == "tool-call":
            arguments = part.get("input", part.get("args"))
            message.calls.append(
                ToolCall(_id(part.get("toolCallId")), _id(part.get("toolName")), arguments)
            )
        elif kind == "tool-result":
            text = as_text(_result_value(part))
            message.results.append(ToolResult(_id(part.get("toolCallId")), text))
    return message


def _issued(value: Any) -> list[Message]:
    """``ai.response.toolCalls`` as one assistant message issuing them."""
    if isinstance(value, str):
        try:
            value = parse_json(value)
        except ValueError:
            value = complete_elements(value)
    calls = [
        ToolCall(_id(c.get("toolCallId")), _id(c.get("toolName")), c.get("input", c.get("args")))
        for c in value if isinstance(c, dict)
    ] if isinstance(value, list) else []  # fmt: skip
    return [Message("assistant", calls=calls)]


def read_vercel_ai(span: SourceSpan) -> Exchange:
    """The exchange one provider call span shows."""
    attrs = span.attributes
    exchange = Exchange()
    raw = attrs.get(sc.AI_PROMPT_MESSAGES)
    if isinstance(raw, str):
        try:
            document = parse_json(raw)
        except ValueError:
            exchange.cut_lengths.add(len(raw))
            document = complete_elements(raw)
            exchange.input_cut = cuts.invalid_json(sc.AI_PROMPT_MESSAGES, len(raw))
        if isinstance(document, list):
            exchange.input = [_message(m) for m in document if isinstance(m, dict)]
    if exchange.input is None and exchange.input_cut is None:
        exchange.input_cut = (
            cuts.evicted(span.dropped_attributes_count)
            if span.dropped_attributes_count > 0
            else cuts.vercel_ai_no_content(sc.AI_PROMPT_MESSAGES)
        )
    if sc.AI_RESPONSE_TOOL_CALLS in attrs:
        exchange.output = _issued(attrs[sc.AI_RESPONSE_TOOL_CALLS])
    elif any(k in attrs for k in _RECORDED_OUTPUTS):
        exchange.output = []
    return exchange
