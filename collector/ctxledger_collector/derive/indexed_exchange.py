"""Messages flattened into indexed attributes: OpenLLMetry's legacy
``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*`` and OpenInference's
``llm.input_messages.{i}.message.*`` / ``llm.output_messages.{i}.message.*``.

Each message part is an attribute of its own, so the attribute count limit evicts the
oldest messages (``dropped_attributes_count``) and the length limit cuts each value
alone; OpenInference's ``input.value`` (the whole request as JSON) shows the limit.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ctxledger import semconv as sc
from ctxledger_collector.derive import cuts
from ctxledger_collector.derive.messages import Exchange, Message, ToolCall, ToolResult, as_text
from ctxledger_collector.derive.spans import SourceSpan

Indexed = dict[int, dict[str, Any]]


def indexed(attrs: dict[str, Any], prefix: str) -> Indexed:
    """``{prefix}.{i}.{rest}`` attributes grouped by ``i`` (in index order)."""
    head = prefix + "."
    found: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in attrs.items():
        if key.startswith(head):
            index, _, rest = key[len(head) :].partition(".")
            if index.isdigit() and rest:
                found[int(index)][rest] = value
    return dict(sorted(found.items()))


def _text(value: Any) -> str:
    return as_text(value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --- OpenLLMetry's legacy form -------------------------------------------------------------


def _openllmetry_message(fields: dict[str, Any]) -> Message:
    message = Message(str(fields.get(sc.OPENLLMETRY_ROLE) or ""))
    content = fields.get(sc.OPENLLMETRY_CONTENT)
    call_id = _str(fields.get(sc.OPENLLMETRY_TOOL_CALL_ID))
    if message.role == "tool" or call_id is not None:
        message.results.append(ToolResult(call_id, _text(content)))
    elif content not in (None, ""):
        message.texts.append(_text(content))
    key_id, key_name, key_arguments = sc.OPENLLMETRY_CALL_FIELDS
    for call in indexed(fields, sc.OPENLLMETRY_TOOL_CALLS).values():
        message.calls.append(
            ToolCall(_str(call.get(key_id)), _str(call.get(key_name)), call.get(key_arguments))
        )
    return message


def has_openllmetry_prompts(attrs: dict[str, Any]) -> bool:
    first = f"{sc.GEN_AI_PROMPT}.0."
    return f"{first}{sc.OPENLLMETRY_ROLE}" in attrs or f"{first}{sc.OPENLLMETRY_CONTENT}" in attrs


def read_openllmetry(span: SourceSpan) -> Exchange:
    attrs = span.attributes
    exchange = Exchange(
        input=[_openllmetry_message(f) for f in indexed(attrs, sc.GEN_AI_PROMPT).values()],
        output=[_openllmetry_message(f) for f in indexed(attrs, sc.GEN_AI_COMPLETION).values()],
    )
    if span.dropped_attributes_count > 0:
        exchange.input_cut = cuts.evicted(span.dropped_attributes_count)
    return exchange


# --- OpenInference ---------------------------------------------------------------------------


def _openinference_message(fields: dict[str, Any]) -> Message:
    message = Message(str(fields.get(sc.OI_MESSAGE_ROLE) or ""))
    content = fields.get(sc.OI_MESSAGE_CONTENT)
    if content is None:
        parts = indexed(fields, sc.OI_MESSAGE_CONTENTS).values()
        texts = [p.get(sc.OI_CONTENT_TEXT) for p in parts]
        content = "".join(t for t in texts if isinstance(t, str)) if texts else None
    call_id = _str(fields.get(sc.OI_MESSAGE_TOOL_CALL_ID))
    if message.role == "tool" or call_id is not None:
        hidden = content == sc.OPENINFERENCE_REDACTED
        what = f"the content of tool message {call_id}"
        cut = cuts.redacted(what, "input text") if hidden else None
        message.results.append(ToolResult(call_id, _text(content), cut))
    elif content not in (None, ""):
        message.texts.append(_text(content))
    for call in indexed(fields, sc.OI_MESSAGE_TOOL_CALLS).values():
        message.calls.append(
            ToolCall(
                _str(call.get(sc.OI_TOOL_CALL_ID)),
                _str(call.get(sc.OI_TOOL_CALL_NAME)),
                call.get(sc.OI_TOOL_CALL_ARGUMENTS),
            )
        )
    return message


def read_openinference(span: SourceSpan) -> Exchange:
    attrs = span.attributes
    inputs = indexed(attrs, sc.LLM_INPUT_MESSAGES)
    outputs = indexed(attrs, sc.LLM_OUTPUT_MESSAGES)
    exchange = Exchange(
        input=[_openinference_message(f) for f in inputs.values()] if inputs else None,
        output=[_openinference_message(f) for f in outputs.values()] if outputs else None,
    )
    # The whole request and response as JSON: when one no longer ends as JSON must, the
    # length limit cut it, and any message value exactly that long was cut too.
    for value_key, mime_key in (
        (sc.INPUT_VALUE, sc.INPUT_MIME_TYPE),
        (sc.OUTPUT_VALUE, sc.OUTPUT_MIME_TYPE),
    ):
        value = attrs.get(value_key)
        is_json = attrs.get(mime_key) == sc.MIME_JSON
        if is_json and isinstance(value, str) and not cuts.ends_like_json(value):
            exchange.cut_lengths.add(len(value))
    if span.dropped_attributes_count > 0:
        exchange.input_cut = cuts.evicted(span.dropped_attributes_count)
    elif exchange.input is None and attrs.get(sc.INPUT_VALUE) == sc.OPENINFERENCE_REDACTED:
        exchange.input_cut = cuts.redacted(sc.INPUT_VALUE, "inputs")
    elif exchange.input is None and sc.INPUT_VALUE in attrs:
        exchange.input_cut = cuts.input_messages_hidden()
    return exchange
