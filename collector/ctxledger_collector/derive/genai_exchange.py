"""An OpenTelemetry GenAI inference span's messages: ``gen_ai.input.messages`` /
``gen_ai.output.messages`` (JSON parts), or the older span events, or a reference to
where an uploading hook stored them."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import replace
from operator import attrgetter
from typing import Any

from ctxledger import semconv as sc
from ctxledger_collector.derive import cuts
from ctxledger_collector.derive.json_prefix import complete_elements
from ctxledger_collector.derive.messages import (
    VALUE_NOT_CAPTURED,
    Exchange,
    Message,
    as_text,
    chat_message,
    nested_message,
    parse_json,
    parts_messages,
)
from ctxledger_collector.derive.parsed_prefixes import ParsedPrefixes
from ctxledger_collector.derive.spans import SourceSpan, SpanEvent

#: The characters of a conversation's opening that key its parsed messages (with its id).
OPENING_CHARS = 256


def _conversation_key(span: SourceSpan, text: str) -> tuple[str, str]:
    """Where a request's earlier messages are kept: its conversation (or run) and opening."""
    given = span.attributes.get(sc.GEN_AI_CONVERSATION_ID)
    return (given if isinstance(given, str) and given else span.trace_id), text[:OPENING_CHARS]


def _parse_whole(text: str) -> list[Message]:
    return parts_messages(parse_json(text))


def _messages(
    value: Any,
    attribute: str,
    exchange: Exchange,
    parse: Callable[[str], list[Message]] = _parse_whole,
) -> tuple[list[Message] | None, str | None]:
    """A messages attribute parsed (by ``parse`` when it is text); when it is cut, what is
    left of it and why."""
    if not isinstance(value, str):
        try:
            return parts_messages(value), None
        except ValueError:
            return None, None
    try:
        return parse(value), None
    except ValueError:
        exchange.cut_lengths.add(len(value))
        kept = [m for m in complete_elements(value) if isinstance(m, dict)]
        return parts_messages(kept), cuts.invalid_json(attribute, len(value))


def _system(value: Any) -> list[str]:
    if isinstance(value, str):
        try:
            value = parse_json(value)
        except ValueError:
            return [value]
    if isinstance(value, list):
        return [as_text(p.get("content")) for p in value if isinstance(p, dict)]
    return []


def read_genai(span: SourceSpan, prefixes: ParsedPrefixes | None = None) -> tuple[Exchange, str]:
    """The exchange an inference span shows, and the source it came from; its input
    messages parsed from what is new in them where ``prefixes`` holds the rest."""
    attrs = span.attributes
    exchange = Exchange(system=_system(attrs.get(sc.GEN_AI_SYSTEM_INSTRUCTIONS)))
    raw_input = attrs.get(sc.GEN_AI_INPUT_MESSAGES)
    raw_output = attrs.get(sc.GEN_AI_OUTPUT_MESSAGES)
    if raw_input is not None or raw_output is not None:
        if raw_input is not None:
            parse = _parse_whole
            if prefixes is not None and isinstance(raw_input, str):
                key = _conversation_key(span, raw_input)
                parse = functools.partial(prefixes.parse, key, convert=parts_messages)
            exchange.input, exchange.input_cut = _messages(
                raw_input, sc.GEN_AI_INPUT_MESSAGES, exchange, parse
            )
        if raw_output is not None:
            exchange.output, exchange.output_cut = _messages(
                raw_output, sc.GEN_AI_OUTPUT_MESSAGES, exchange
            )
        if raw_input is None:
            exchange.input_cut = _missing(span)
        if exchange.input:
            exchange.input = _name_the_setting(span, exchange.input)
        return exchange, sc.SOURCE_GENAI
    if _read_events(span.events, exchange):
        return exchange, sc.SOURCE_GENAI_EVENTS
    exchange.input_cut = _missing(span) or cuts.no_messages(span.scope_name, attrs)
    return exchange, sc.SOURCE_GENAI


_UNCAPTURED = attrgetter("uncaptured")


def _name_the_setting(span: SourceSpan, messages: list[Message]) -> list[Message]:
    """Results whose parts carry no value: say which setting of the emitter records it.
    New messages where they change: parsed messages may be shared with later requests."""
    if not any(map(_UNCAPTURED, messages)):
        return messages
    why = cuts.no_content("tool_call_response value", span.scope_name, span.attributes)
    return [
        replace(m, uncaptured=False,
                results=[replace(r, cut=why) if r.cut == VALUE_NOT_CAPTURED else r
                         for r in m.results])
        for m in messages
    ]  # fmt: skip


def _missing(span: SourceSpan) -> str | None:
    """Why a span shows no input messages: stored elsewhere, evicted, or not captured
    (None: no sign that it ever had them)."""
    reference = next(
        (span.attributes[r] for r in sc.GEN_AI_CONTENT_REFS if r in span.attributes), None
    )
    if reference is not None:
        return cuts.off_span(str(reference))
    if span.dropped_attributes_count > 0:
        return cuts.evicted(span.dropped_attributes_count)
    return None


def _event_body(event: SpanEvent) -> dict[str, Any]:
    """A per-message event's body: a JSON ``gen_ai.event.content``, or flat fields."""
    body = dict(event.attributes)
    content = body.pop(sc.GEN_AI_EVENT_BODY, None)
    if isinstance(content, str):
        try:
            content = parse_json(content)
        except ValueError:
            content = {"content": content}
    if isinstance(content, dict):
        body.update(content)
    for key in ("tool_calls", "message"):
        if isinstance(body.get(key), str):
            with contextlib.suppress(ValueError):
                body[key] = parse_json(body[key])
    return body


def _read_events(events: tuple[SpanEvent, ...], exchange: Exchange) -> bool:
    """The older forms: a ``gen_ai.content.prompt`` event holding the messages as JSON,
    or one event per message (``gen_ai.user.message``, …, ``gen_ai.choice``)."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    seen = False
    for event in events:
        if event.name in (sc.GEN_AI_EVENT_CONTENT_PROMPT, sc.GEN_AI_EVENT_CONTENT_COMPLETION):
            seen = True
            key = (
                sc.GEN_AI_PROMPT
                if event.name == sc.GEN_AI_EVENT_CONTENT_PROMPT
                else sc.GEN_AI_COMPLETION
            )
            listed = _chat_list(event.attributes.get(key), exchange)
            (inputs if key == sc.GEN_AI_PROMPT else outputs).extend(listed)
        elif event.name in sc.GEN_AI_MESSAGE_EVENTS:
            seen = True
            inputs.append(chat_message(_event_body(event), sc.GEN_AI_MESSAGE_EVENTS[event.name]))
        elif event.name == sc.GEN_AI_EVENT_CHOICE:
            seen = True
            outputs.append(chat_message(nested_message(_event_body(event)), "assistant"))
    if seen:
        exchange.input, exchange.output = inputs, outputs
    return seen


def _chat_list(value: Any, exchange: Exchange) -> list[Message]:
    if isinstance(value, str):
        try:
            value = parse_json(value)
        except ValueError:
            exchange.cut_lengths.add(len(value))
            exchange.input_cut = cuts.invalid_json(sc.GEN_AI_PROMPT, len(value))
            value = complete_elements(value)
    if not isinstance(value, list):
        return []
    found: list[Message] = []
    for item in value:
        if isinstance(item, dict):
            found.append(chat_message(nested_message(item)))
    return found
