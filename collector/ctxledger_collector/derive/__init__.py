"""Derive stage measurements and manifests from spans that never met the ctxledger SDK:
OpenTelemetry GenAI inference and ``execute_tool`` spans (and the older forms real
packages emit), OpenInference ``LLM`` and ``TOOL`` spans, the Vercel AI SDK's ``ai.*``
spans; and runtimes' log events (Claude Code's request bodies). Pure: a span in, rule records
out, the message content parsed in memory and dropped (kept only when the operator opts
in). Two memories between spans: a conversation's last parsed messages
(:mod:`.parsed_prefixes`) change how much is parsed, never the records; the evidence of
recent Codex turns (:mod:`.codex_turns`) lets a later span or log record write a Codex
output's ``llm_input`` stage again, once it shows what the model read. The rules
(:mod:`ctxledger.verdicts`) then judge them as they judge the SDK's.

May import: ``decoded`` only (and the SDK's public modules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest, Measurement
from ctxledger.verdicts.model import ReceivedRecord
from ctxledger_collector.decoded.batch import DerivedStage, IssuedCall, UnmatchedTool
from ctxledger_collector.derive import adk, claude_code, codex, cuts, strands
from ctxledger_collector.derive.claude_code import keyed_by_session
from ctxledger_collector.derive.claude_code_logs import LogEvent, request_body_records
from ctxledger_collector.derive.claude_code_usage import UsagePairs
from ctxledger_collector.derive.genai_exchange import read_genai
from ctxledger_collector.derive.indexed_exchange import (
    has_openllmetry_prompts,
    read_openinference,
    read_openllmetry,
)
from ctxledger_collector.derive.messages import Exchange
from ctxledger_collector.derive.parsed_prefixes import SHARED, ParsedPrefixes
from ctxledger_collector.derive.received import received_record
from ctxledger_collector.derive.records import request_records, tool_record
from ctxledger_collector.derive.spans import SourceSpan, SpanEvent
from ctxledger_collector.derive.tool_outputs import read_tool_output
from ctxledger_collector.derive.vercel_ai import is_model_call, read_vercel_ai

__all__ = [
    "Derived",
    "LogDerivation",
    "LogEvent",
    "SourceSpan",
    "SpanEvent",
    "derive_log_event",
    "derive_span",
    "may_derive",
]


@dataclass
class Derived:
    """What one span gave: stages, the manifest of its request, what its server's usage
    says it read, the calls its response issued, and tool outputs that wait for the call
    they answer."""

    stages: list[DerivedStage] = field(default_factory=list)
    manifest: Manifest | None = None
    received: ReceivedRecord | None = None
    issued: list[IssuedCall] = field(default_factory=list)
    unmatched: list[UnmatchedTool] = field(default_factory=list)
    #: With ``received`` and no stages: the stages of the request it reads, by call id.
    sent: dict[str, Measurement] = field(default_factory=dict)
    #: Stages of earlier requests this one carries as they were (``DecodedManifest``).
    carried: list[Measurement] = field(default_factory=list)


def may_derive(
    attributes: dict[str, Any],
    events: tuple[SpanEvent, ...] = (),
    name: str = "",
    service: str | None = None,
) -> bool:
    """A cheap test that a span follows one of the conventions derivation reads."""
    return (
        sc.GEN_AI_OPERATION_NAME in attributes
        or sc.OPENINFERENCE_SPAN_KIND in attributes
        or sc.TRACELOOP_SPAN_KIND in attributes
        or sc.AI_OPERATION_ID in attributes
        or adk.LLM_REQUEST in attributes  # ADK's older call_llm spans name no operation
        or has_openllmetry_prompts(attributes)
        or (bool(events) and codex.tool_result_event(events) is not None)
        or codex.is_turn_span(name, service, attributes)
    )


def _exchange(
    span: SourceSpan, prefixes: ParsedPrefixes
) -> tuple[Exchange, str, str | None] | None:
    attrs = span.attributes
    model = attrs.get(sc.REQUEST_MODEL)
    operation = attrs.get(sc.GEN_AI_OPERATION_NAME)
    if attrs.get(sc.OPENINFERENCE_SPAN_KIND) == sc.OPENINFERENCE_LLM:
        model = attrs.get(sc.LLM_MODEL_NAME) or model
        exchange, source = read_openinference(span), sc.SOURCE_OPENINFERENCE
    elif is_model_call(attrs):
        model = model or attrs.get(sc.AI_MODEL_ID)
        exchange, source = read_vercel_ai(span), sc.SOURCE_VERCEL_AI
    elif operation is not None and operation not in sc.GEN_AI_INFERENCE_OPERATIONS:
        # An agent, a step, an embedding: not one LLM request. An agent span's messages
        # are the whole run's, and its response lists every call the run issued.
        return None
    elif sc.GEN_AI_INPUT_MESSAGES in attrs or sc.GEN_AI_OUTPUT_MESSAGES in attrs:
        exchange, source = read_genai(span, prefixes)
    elif has_openllmetry_prompts(attrs):
        exchange, source = read_openllmetry(span), sc.SOURCE_OPENLLMETRY
    elif operation in sc.GEN_AI_INFERENCE_OPERATIONS:
        exchange, source = read_genai(span)
    else:
        return None
    source = cuts.FRAMEWORK_SOURCES.get(span.scope_name or "", source)
    return exchange, source, model if isinstance(model, str) and model else None


def derive_span(
    span: SourceSpan, keep_content: bool = False, prefixes: ParsedPrefixes = SHARED
) -> Derived | None:
    """The records one span gives, or None when it shows nothing derivation reads (no
    inference or tool span, or one without content and no sign of where it went).
    ``prefixes`` holds the messages of earlier requests, to parse only what is new in a
    request's (the same records either way)."""
    codex_result = codex.tool_result_event(span.events)
    if codex_result is not None:  # Codex's tool spans carry their outputs' sizes only
        stages = codex.tool_output_stages(span, codex_result)
        return Derived(stages=stages) if stages else None
    if codex.is_turn_span(span.name, span.service_name, span.attributes):
        return Derived(stages=codex.turn_stages(span))
    span = adk.as_conventions(strands.as_conventions(keyed_by_session(span)))
    output = read_tool_output(span)
    if output is not None:
        record = tool_record(span, output, keep_content)
        if record is None:
            return None
        if isinstance(record, UnmatchedTool):
            return Derived(unmatched=[record])
        return Derived(stages=[record])
    found = _exchange(span, prefixes)
    if found is None:
        return None
    exchange, source, model = found
    if exchange.input is None and exchange.output is None and exchange.input_cut is None:
        return None
    # Claude Code's llm_request spans never show the messages; its request bodies do, so
    # its own ids sort after theirs: a report names the body that was not read, if any.
    request_id = claude_code.span_request_id(span) if source == sc.SOURCE_CLAUDE_CODE else None
    carried: list[Measurement] = []
    manifest, stages, issued = request_records(
        span, exchange, source, model, keep_content, request_id, carry_into=carried
    )
    received = received_record(span, exchange, model, manifest)
    return Derived(
        stages=stages, manifest=manifest, received=received, issued=issued, carried=carried
    )


class LogDerivation:
    """Derivation of one export's log events: each Claude Code request body gives its
    request's records; the usage Claude Code reports for a request, once paired with its
    body, gives the request's ``received`` stage."""

    def __init__(self, keep_content: bool = False) -> None:
        self.keep_content = keep_content
        self.usage = UsagePairs()

    def derive(self, event: LogEvent) -> Derived | None:
        if event.event_name == codex.TOOL_RESULT_EVENT:
            stages = codex.preview_stages(event.attributes, event.trace_id)
            return Derived(stages=stages) if stages else None
        body = request_body_records(event, self.keep_content)
        if body is not None:
            self.usage.add_body(body)
            return Derived(stages=body.stages, manifest=body.manifest, issued=body.issued)
        paired = self.usage.add_event(event)
        if paired is None:
            return None
        body, received = paired
        sent = {s.measurement.tool_call_id: s.measurement for s in body.stages}
        return Derived(received=received, sent=sent)


def derive_log_event(event: LogEvent, keep_content: bool = False) -> Derived | None:
    """The records one runtime log event gives alone (Claude Code's request bodies)."""
    return LogDerivation(keep_content).derive(event)
