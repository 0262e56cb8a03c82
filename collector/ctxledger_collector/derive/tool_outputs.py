"""A tool execution span's own output: GenAI ``execute_tool`` spans, OpenInference
``TOOL`` spans and OpenLLMetry's (traceloop) tool spans."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ctxledger import semconv as sc
from ctxledger.text import canonical_json
from ctxledger_collector.derive import claude_code, cuts
from ctxledger_collector.derive.messages import as_text, parse_json
from ctxledger_collector.derive.spans import SourceSpan


@dataclass(frozen=True)
class ToolOutput:
    """What one tool span says: the call (when it names it), the arguments and the
    result text (None when the span carries none)."""

    call_id: str | None
    name: str | None
    arguments: Any
    text: str | None
    cut: str | None
    source: str


def arguments_signature(name: str | None, arguments: Any) -> int:
    """A tool call's name and canonical arguments as a signed 64-bit number: equal for
    the call an LLM response issued and the tool span that ran it, however each
    serialized the arguments."""
    if isinstance(arguments, str):
        try:
            arguments = parse_json(arguments)
        except ValueError:
            arguments = " ".join(arguments.split())
    canonical = canonical_json(arguments) if not isinstance(arguments, str) else arguments
    digest = hashlib.blake2b(f"{name or ''}\x1f{canonical}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _first_present(attributes: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The first of a value's spellings the span has (else the current one)."""
    return next((k for k in keys if k in attributes), keys[0])


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _result(span: SourceSpan, key: str, arguments: Any) -> tuple[str | None, str | None]:
    """The result text and, when the telemetry cut it, why."""
    value = span.attributes.get(key)
    if value is None:
        return None, None if span.failed else cuts.no_content(key, span.scope_name, span.attributes)
    text = as_text(value)
    if text == sc.OPENINFERENCE_REDACTED:
        return None, cuts.redacted(key, "outputs")
    limits = set()
    if isinstance(arguments, str) and arguments[:1] in "{[" and not cuts.ends_like_json(arguments):
        limits.add(len(arguments))
    if cuts.looks_cut(len(text), limits):
        return text, cuts.at_limit(key, len(text))
    return text, None


def read_tool_output(span: SourceSpan) -> ToolOutput | None:
    """The tool output a span records, or None when it is no tool span."""
    attrs = span.attributes
    if span.scope_name == cuts.CLAUDE_CODE_SCOPE and span.name == CLAUDE_CODE_TOOL_SPAN:
        return _claude_code(span)
    if attrs.get(sc.TRACELOOP_SPAN_KIND) == sc.TRACELOOP_TOOL:
        return _traceloop(span)
    if attrs.get(sc.GEN_AI_OPERATION_NAME) == sc.GEN_AI_EXECUTE_TOOL:
        return _tool_span(
            span, sc.TOOL_CALL_ID, sc.TOOL_NAME,
            _first_present(attrs, sc.GEN_AI_TOOL_CALL_ARGUMENTS_KEYS),
            _first_present(attrs, sc.GEN_AI_TOOL_CALL_RESULTS),
            cuts.FRAMEWORK_SOURCES.get(span.scope_name or "", sc.SOURCE_GENAI),
        )  # fmt: skip
    if attrs.get(sc.AI_OPERATION_ID) == sc.AI_TOOL_CALL:
        return _tool_span(
            span, sc.AI_TOOL_CALL_ID, sc.AI_TOOL_CALL_NAME,
            _first_present(attrs, sc.AI_TOOL_CALL_ARGUMENTS),
            _first_present(attrs, sc.AI_TOOL_CALL_RESULT), sc.SOURCE_VERCEL_AI,
        )  # fmt: skip
    if attrs.get(sc.OPENINFERENCE_SPAN_KIND) == sc.OPENINFERENCE_TOOL:
        return _tool_span(
            span, sc.OPENINFERENCE_TOOL_ID, sc.OPENINFERENCE_TOOL_NAME, sc.INPUT_VALUE,
            sc.OUTPUT_VALUE, sc.SOURCE_OPENINFERENCE,
        )  # fmt: skip
    return None


def _tool_span(
    span: SourceSpan, id_key: str, name_key: str, arguments_key: str, result_key: str, source: str
) -> ToolOutput:
    """A tool span whose convention names its call id, tool name, arguments and result."""
    attrs = span.attributes
    arguments = attrs.get(arguments_key)
    text, cut = _result(span, result_key, arguments)
    call_id = _str(attrs.get(id_key))
    if call_id is None and text is not None and cut is None:
        message = _langchain_tool_message(text)
        if message is not None:
            call_id, text = message
    return ToolOutput(call_id, _str(attrs.get(name_key)), arguments, text, cut, source)


def _langchain_tool_message(text: str) -> tuple[str, str] | None:
    """LangChain's tool runs (OpenInference's ``TOOL`` spans name no ``tool.id``) record
    the ``ToolMessage`` the tool returned, serialized: ``{"type": "tool", "data":
    {"content", "tool_call_id", ...}}``. Its call id and its content as the model sees it,
    or None when the output is not such a message."""
    if not text.startswith('{"type": "tool"'):
        return None
    try:
        document = parse_json(text)
    except ValueError:
        return None
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, dict) or document.get("type") != "tool":
        return None
    call_id = _str(data.get("tool_call_id"))
    content = data.get("content")
    if call_id is None or content is None:
        return None
    if isinstance(content, list):  # content blocks: the texts the model reads
        texts = [b.get("text") if isinstance(b, dict) else b for b in content]
        if all(isinstance(t, str) for t in texts):
            return call_id, "".join(str(t) for t in texts)
    return call_id, as_text(content)


CLAUDE_CODE_TOOL_SPAN = "claude_code.tool"
CLAUDE_CODE_OUTPUT_EVENT = "tool.output"


def _claude_code(span: SourceSpan) -> ToolOutput:
    """Claude Code's ``claude_code.tool`` span: the output in its ``tool.output`` event
    (``output``), present only with tool content on, cut at 60 KB by default (and a Bash
    output at the 30,000 chars Claude Code keeps of it)."""
    attrs = span.attributes
    call_id = _str(attrs.get(sc.TOOL_CALL_ID)) or _str(attrs.get(claude_code.TOOL_USE_ID))
    # The name the model calls (an MCP tool's ``mcp__server__tool``), not the bare one.
    name = _str(attrs.get(claude_code.TOOL_NAME)) or _str(attrs.get(sc.TOOL_NAME))
    event = next((e for e in span.events if e.name == CLAUDE_CODE_OUTPUT_EVENT), None)
    output = event.attributes.get("output") if event is not None else None
    if not isinstance(output, str):
        cut = (
            None
            if span.failed
            else f"the span has no tool.output event: {cuts.CLAUDE_CODE_OUTPUT_FIX}"
        )
        return ToolOutput(call_id, name, None, None, cut, sc.SOURCE_CLAUDE_CODE)
    output, cut = claude_code.telemetry_cut(output, "the tool.output event")
    cut = cut or claude_code.bash_read_back_cut(name, output)
    return ToolOutput(call_id, name, None, output, cut, sc.SOURCE_CLAUDE_CODE)


def _traceloop(span: SourceSpan) -> ToolOutput:
    """OpenLLMetry's decorator records ``{"args", "kwargs"}`` and the JSON of the return
    value, sliced at the length limit (then the JSON no longer parses)."""
    attrs = span.attributes
    name = _str(attrs.get(sc.TOOL_NAME)) or _str(attrs.get(sc.TRACELOOP_ENTITY_NAME))
    arguments: Any = None
    try:
        called = parse_json(attrs.get(sc.TRACELOOP_ENTITY_INPUT))
        if isinstance(called, dict) and not called.get("args"):
            arguments = called.get("kwargs")
    except ValueError:
        pass
    raw = attrs.get(sc.TRACELOOP_ENTITY_OUTPUT)
    if not isinstance(raw, str):
        cut = (
            None
            if span.failed
            else cuts.no_content(sc.TRACELOOP_ENTITY_OUTPUT, span.scope_name, attrs)
        )
        return ToolOutput(None, name, arguments, None, cut, sc.SOURCE_OPENLLMETRY)
    try:
        value = parse_json(raw)
    except ValueError:
        return ToolOutput(
            None,
            name,
            arguments,
            raw,
            cuts.invalid_json(sc.TRACELOOP_ENTITY_OUTPUT, len(raw)),
            sc.SOURCE_OPENLLMETRY,
        )
    return ToolOutput(None, name, arguments, as_text(value), None, sc.SOURCE_OPENLLMETRY)
