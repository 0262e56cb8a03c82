"""OpenAI's Codex CLI from its own traces (source ``codex``): each tool output's size, and
whether Codex's own cut can have reached it.

Codex reports a tool call's output on the span that dispatched it
(``dispatch_tool_call_with_state``): a span event whose ``event.name`` attribute is
``codex.tool_result``, with ``call_id``, ``tool_name``, ``output_length`` (the output as
Codex hands it to the model, its ``Chunk ID``/``Wall time`` lines included, in bytes) and
``output_line_count``; never the text. Its ``codex.tool_result`` log record carries a
2,048-character preview: a cut of the telemetry's, not of what the model read.

Before the model reads an output, Codex cuts one over its limit to its head and tail and
says so in the text (``Warning: truncated output (original token count: N)``,
``…N chars truncated…``). The limit is the lesser of the call's ``max_output_tokens``
(10,000 tokens unless the model asks for more) and ``tool_output_token_limit`` in
config.toml (by default the model's own policy: 10,000 bytes, or 10,000 tokens counted as
4 bytes each). Codex's telemetry shows neither the limit that applied nor what the model
read, so:

* an output of at most :data:`SMALLEST_DEFAULT_LIMIT` bytes, under every default limit,
  reached the model whole: stage ``llm_input`` the same size, measured before any request
  (every later request of the conversation carries it);
* a longer one was cut or not by settings the telemetry does not show: its ``llm_input``
  stage is not auditable, and says which settings decide (:data:`CODEX_CUT_UNKNOWN`),
  until the usage of the requests around it and its log record's preview show what the
  model read (:mod:`.codex_turns`, :mod:`.codex_kept`): then it is written again, whole
  or cut to Codex's budget and declared by Codex's marker.
"""

from __future__ import annotations

import json
from typing import Any, Final

from ctxledger import semconv as sc
from ctxledger.request_count import counter_for_model
from ctxledger.verdicts import Measurement
from ctxledger_collector.decoded.batch import DerivedStage
from ctxledger_collector.derive.codex_turns import SHARED, CodexTurns, Preview
from ctxledger_collector.derive.spans import SourceSpan, SpanEvent

TOOL_RESULT_EVENT: Final = "codex.tool_result"
EVENT_NAME: Final = "event.name"
CALL_ID: Final = "call_id"
TOOL_NAME: Final = "tool_name"
OUTPUT_LENGTH: Final = "output_length"
#: Codex's spans of a turn: a request sent; an event of its answer (the one that reports
#: usage, or one that issued a tool call); the turn itself, with its usage summed.
REQUEST_SENT_SPAN: Final = "stream_request"
ANSWER_EVENT_SPAN: Final = "handle_responses"
TURN_SPAN: Final = "session_task.turn"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
TURN_INPUT_TOKENS: Final = "codex.turn.token_usage.input_tokens"
ANSWER_EVENT_FROM: Final = "from"
ITEM_DONE: Final = "output_item_done"
#: The ``codex.tool_result`` log record: the output's first 2,048 chars, this suffix when
#: it goes on, the call's arguments and the model.
PREVIEW: Final = "output"
PREVIEW_CUT: Final = "\n[... telemetry preview truncated ...]"
PREVIEW_TRUNCATED: Final = "output_truncated"
ARGUMENTS: Final = "arguments"
MAX_OUTPUT_TOKENS: Final = "max_output_tokens"
MODEL: Final = "model"
#: Codex's smallest default limit on a tool output the model reads, in bytes.
SMALLEST_DEFAULT_LIMIT: Final = 10_000
CODEX_CUT_UNKNOWN: Final = (
    "Codex cuts a tool output over its limit to its head and tail before the model reads it "
    "(10,000 bytes, or 10,000 tokens, by default), and its telemetry shows neither the limit "
    "nor what the model read: the output is whole only where tool_output_token_limit in "
    "config.toml and the call's max_output_tokens are both raised above its size; the "
    "usage of the requests around it tells what the model read where Codex exports its "
    "log records too ([otel] exporter) and its traces"
)


def tool_result_event(events: tuple[SpanEvent, ...]) -> SpanEvent | None:
    """The ``codex.tool_result`` event of a span, if it has one."""
    return next(
        (e for e in events if e.attributes.get(EVENT_NAME) == TOOL_RESULT_EVENT),
        None,
    )


def _count(value: Any) -> int | None:
    """A count as Codex sends it: an int, or a string of one (its attributes mix both)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _issues_a_call(attributes: dict[str, Any]) -> bool:
    return attributes.get(ANSWER_EVENT_FROM) == ITEM_DONE and TOOL_NAME in attributes


def is_turn_span(name: str, service: str | None, attributes: dict[str, Any]) -> bool:
    """A Codex span that tells when a request was sent, what its usage reports, that its
    answer issued a tool call, or what the whole turn's usage was."""
    if not (service or "").startswith("codex"):
        return False
    if name == ANSWER_EVENT_SPAN:
        return sc.GEN_AI_USAGE_INPUT_TOKENS in attributes or _issues_a_call(attributes)
    return name == REQUEST_SENT_SPAN or (name == TURN_SPAN and TURN_INPUT_TOKENS in attributes)


def turn_stages(span: SourceSpan, turns: CodexTurns = SHARED) -> list[DerivedStage]:
    """Remember a turn span (:func:`is_turn_span`); the ``llm_input`` stages it lets
    :mod:`.codex_turns` write again."""
    attributes = span.attributes
    if span.name == REQUEST_SENT_SPAN:
        return turns.request_sent(span.trace_id, span.start_time_unix_nano)
    if span.name == TURN_SPAN:
        total = _count(attributes.get(TURN_INPUT_TOKENS))
        return [] if total is None else turns.turn_over(span.trace_id, total)
    if _issues_a_call(attributes):
        return turns.call_issued(span.trace_id, span.span_id)
    tokens_in = _count(attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS))
    if tokens_in is None:
        return []
    tokens_out = _count(attributes.get(OUTPUT_TOKENS)) or 0
    start = span.start_time_unix_nano
    return turns.usage(span.trace_id, start, tokens_in, tokens_out, span.observed_at)


def _max_output_tokens(arguments: Any) -> int | None:
    if not isinstance(arguments, str) or MAX_OUTPUT_TOKENS not in arguments:
        return None
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return None
    return _count(parsed.get(MAX_OUTPUT_TOKENS)) if isinstance(parsed, dict) else None


def preview_stages(
    attributes: dict[str, Any], trace_id: str | None, turns: CodexTurns = SHARED
) -> list[DerivedStage]:
    """Remember what a ``codex.tool_result`` log record (of the turn ``trace_id``) tells
    of its output: its preview's bytes per token (counted with the model's encoding, then
    dropped) and the call's ``max_output_tokens``; the stages that lets
    :mod:`.codex_turns` write again. A record outside any trace tells nothing, nor one
    whose preview is the whole output: at most 2,048 chars, under every limit of Codex's,
    its output never needs reading (so its preview is never counted)."""
    call_id = _text(attributes.get(CALL_ID))
    text = _text(attributes.get(PREVIEW))
    if call_id is None or text is None or not trace_id:
        return []
    if attributes.get(PREVIEW_TRUNCATED) in (False, "false"):
        return []
    text = text.removesuffix(PREVIEW_CUT)
    model = _text(attributes.get(MODEL))
    tokens = counter_for_model(model)[0]([text])
    if tokens <= 0:
        return []
    per_token = len(text.encode("utf-8", "surrogatepass")) / tokens
    most = _max_output_tokens(attributes.get(ARGUMENTS))
    return turns.preview(trace_id, call_id, Preview(per_token, most))


def tool_output_stages(
    span: SourceSpan, event: SpanEvent, turns: CodexTurns = SHARED
) -> list[DerivedStage]:
    """The stages one ``codex.tool_result`` event gives: ``original``, the output's size
    as the tool gave it, and ``llm_input``, what Codex handed the model (none when the
    event names no call or no size)."""
    attrs = event.attributes
    call_id = _text(attrs.get(CALL_ID))
    length = _count(attrs.get(OUTPUT_LENGTH))
    if call_id is None or length is None:
        return []
    common: dict[str, Any] = {
        "trace_id": span.trace_id,
        "tool_call_id": call_id,
        "tool_name": _text(attrs.get(TOOL_NAME)),
        "agent_name": span.service_name,
        "observed_at": span.observed_at,
        "span_id": span.span_id,
        "source": sc.SOURCE_CODEX,
    }
    original = Measurement(
        stage=sc.STAGE_ORIGINAL,
        order=sc.BUILTIN_STAGE_ORDER[sc.STAGE_ORIGINAL],
        chars=length,
        bytes=length,
        **common,
    )
    whole = length <= SMALLEST_DEFAULT_LIMIT
    handed = Measurement(
        stage=sc.STAGE_LLM_INPUT,
        order=sc.STAGE_LLM_INPUT_ORDER,
        chars=length if whole else 0,
        bytes=length if whole else None,
        telemetry_cut=None if whole else CODEX_CUT_UNKNOWN,
        **common,
    )
    decided = turns.output(span.start_time_unix_nano, span.end_time_unix_nano, length, handed)
    return [DerivedStage(original, None), DerivedStage(handed, None), *decided]
