"""Derived rule records: what one LLM span or tool span says, as the measurements and
the manifest the SDK's spans would have given.

* an LLM span is one request: a manifest (the results and calls its input carried, the
  calls its response issued, its conversation and start time) and, per tool result in
  its input, a measurement of stage ``llm_input``;
* a tool span is the tool's own output: a measurement of stage ``original``.

Requests are keyed by the LLM span's span id (always there, unique; a failed request
has no response id). A request's step is 1 + the assistant messages in its input; its
sequence is its start time in microseconds; its conversation is
``gen_ai.conversation.id`` when the span has one, else a digest of its opening (the
system instructions and messages, and the first user message: the task), which every
later request of the same conversation repeats, even when its history was rebuilt.
"""

from __future__ import annotations

import hashlib
import weakref
from dataclasses import dataclass, field, replace

import orjson

from ctxledger import semconv as sc
from ctxledger.models import context_window_for_model
from ctxledger.text import TextMeasurement, measure_text
from ctxledger.verdicts import Manifest, Measurement
from ctxledger_collector.decoded.batch import (
    DerivedStage,
    IssuedCall,
    UnmatchedTool,
    carried_stage,
)
from ctxledger_collector.derive import cuts
from ctxledger_collector.derive.compaction import declared_compaction
from ctxledger_collector.derive.input_reads import (
    InputRead,
    earlier_read,
    input_facts,
    keep_read,
)
from ctxledger_collector.derive.messages import Exchange, Message, ToolResult
from ctxledger_collector.derive.spans import SourceSpan
from ctxledger_collector.derive.stage_records import agent_of, kept_content, stage_measurement
from ctxledger_collector.derive.tool_outputs import ToolOutput, arguments_signature
from ctxledger_collector.derive.usage import reported_input_tokens

#: Per result parsed once and carried by later requests (their parsed messages are
#: shared, :mod:`.parsed_prefixes`), found by the result itself and gone with it: its
#: measurement per model, without digesting its text again; and its last ``llm_input``
#: stage with what it was built from but the request, so that each later request takes
#: it as it is (:func:`carried_stage`) instead of building it again (a long run's
#: request carries hundreds).
_KNOWN: weakref.WeakKeyDictionary[ToolResult, _Known] = weakref.WeakKeyDictionary()


@dataclass
class _Known:
    measured: dict[str | None, TextMeasurement] = field(default_factory=dict)
    #: What the stage was built from but its request, and the stage.
    staged: tuple[tuple[object, ...], Measurement] | None = None


def _known(result: ToolResult) -> _Known:
    # On the result itself first: found without hashing its text (hundreds per request).
    known = result.memo.get(_MEMO_KEY)
    if known is None:
        known = _KNOWN.get(result)
        if known is None:
            known = _KNOWN[result] = _Known()
        result.memo[_MEMO_KEY] = known
    return known


_MEMO_KEY = __name__


def _measured(known: _Known, result: ToolResult, model: str | None) -> TextMeasurement:
    found = known.measured.get(model)
    if found is None:
        found = known.measured[model] = measure_text(result.text, model=model)
    return found


def conversation_of(span: SourceSpan, exchange: Exchange) -> str:
    given = span.attributes.get(sc.GEN_AI_CONVERSATION_ID)
    if isinstance(given, str) and given:
        return given[:64]
    opening: list[object] = [["system", exchange.system]]
    whole = False
    for message in exchange.input or ():
        if message.role == "assistant":
            break
        opening.append([message.role, message.texts])
        if message.role == "user":
            whole = True
            break
    if not whole and (exchange.input is None or exchange.input_cut):
        # The opening is not known: a conversation of its own, never another's.
        return f"span:{span.span_id}"
    return hashlib.sha256(orjson.dumps(opening)).hexdigest()[:32]


def request_records(
    span: SourceSpan,
    exchange: Exchange,
    source: str,
    model: str | None,
    keep_content: bool,
    request_id: str | None = None,
    carry_into: list[Measurement] | None = None,
) -> tuple[Manifest, list[DerivedStage], list[IssuedCall]]:
    """The manifest of an LLM span's request, a stage per tool result it carried, and
    the calls its response issued. The request is known by ``request_id`` where the
    telemetry names it, else by the span's id. With ``carry_into`` (and no content kept),
    a result carried exactly as an earlier request carried it gives no stage: that
    request's stage goes there instead, for :func:`carried_stage` (a long run's request
    carries hundreds)."""
    request_id = request_id or span.span_id
    inputs: list[Message] = exchange.input or []
    agent = agent_of(span)
    if keep_content:
        carry_into = None
    setting = (model, span.trace_id, source, agent, frozenset(exchange.cut_lengths))
    earlier = earlier_read(inputs, setting) if carry_into is not None else None
    if earlier is not None and carry_into is not None:
        facts = input_facts(inputs[earlier.length :], earlier.facts)
        new_results = facts.results[len(earlier.facts.results) :]
        carry_into.extend(earlier.stages)
    else:
        facts = input_facts(inputs, None)
        new_results = facts.results
    whole = exchange.input is not None and exchange.input_cut is None
    step = 1 + facts.assistants if whole else None
    issued_calls = [c for m in exchange.output or () for c in m.calls if c.id]
    issued: tuple[str, ...] | None = tuple(c.id for c in issued_calls if c.id)
    if exchange.output is None and exchange.output_cut is None and not span.failed:
        issued = None  # the span does not say what its response issued
    manifest = Manifest(
        trace_id=span.trace_id,
        request_id=request_id,
        step=step,
        tool_call_ids=facts.result_ids,
        tool_calls=facts.call_ids if exchange.input is not None else None,
        tokens=reported_input_tokens(span),
        model=model,
        context_window=context_window_for_model(model),
        agent_name=agent,
        observed_at=span.observed_at,
        span_id=span.span_id,
        source=source,
        conversation=conversation_of(span, exchange),
        sequence=span.started_us,
        issued_calls=issued,
        telemetry_cut=exchange.input_cut,
        compaction=declared_compaction(span.attributes, (facts.compaction,)),
    )
    stages: list[DerivedStage] = []
    each_stage = list(earlier.stages) if earlier is not None else []
    for result in new_results:
        assert result.id is not None
        known = _known(result)
        measured = _measured(known, result, model)
        cut = result.cut or (
            cuts.at_limit(f"the result of {result.id}", measured.chars)
            if cuts.looks_cut(measured.chars, exchange.cut_lengths)
            else None
        )
        tool_name = facts.names.get(result.id)
        same = (model, span.trace_id, source, tool_name, agent, cut)
        if known.staged is not None and known.staged[0] == same:
            each_stage.append(known.staged[1])
            if carry_into is not None:
                carry_into.append(known.staged[1])
                continue
            stage = carried_stage(known.staged[1], manifest)
        else:
            stage = stage_measurement(
                span,
                measured,
                call_id=result.id,
                stage=sc.STAGE_LLM_INPUT,
                order=sc.STAGE_LLM_INPUT_ORDER,
                source=source,
                request_id=request_id,
                tool_name=tool_name,
                step=step,
                cut=cut,
            )
            known.staged = (same, stage)
            each_stage.append(stage)
        stages.append(DerivedStage(stage, kept_content(result.text) if keep_content else None))
    if carry_into is not None and inputs:
        read = InputRead(len(inputs), inputs[0], setting, facts, each_stage)
        keep_read(inputs, read, earlier)

    signatures = [
        IssuedCall(
            span.trace_id,
            call.id,
            request_id,
            arguments_signature(call.name, call.arguments),
            span.started_us * 1000 + index,
        )
        for index, call in enumerate(issued_calls)
        if call.id
    ]
    return manifest, stages, signatures


def tool_record(
    span: SourceSpan, output: ToolOutput, keep_content: bool
) -> DerivedStage | UnmatchedTool | None:
    """The ``original`` stage a tool span gives (waiting for its call when it names
    none); None when it recorded nothing to measure and says why not either."""
    if output.text is None and output.cut is None:
        return None
    # The tool span names no model as a rule; where it does, its tokens are counted as the
    # requests that carry its result are, so the two compare.
    model = span.attributes.get(sc.REQUEST_MODEL) or span.attributes.get(sc.LLM_MODEL_NAME)
    measured = measure_text(output.text or "", model=model if isinstance(model, str) else None)
    stage = DerivedStage(
        stage_measurement(
            span,
            measured,
            call_id=output.call_id or "",
            stage=sc.STAGE_ORIGINAL,
            order=sc.BUILTIN_STAGE_ORDER[sc.STAGE_ORIGINAL],
            source=output.source,
            tool_name=output.name,
            cut=output.cut,
            inferred=output.call_id is None,
        ),
        kept_content(output.text) if keep_content and output.text is not None else None,
    )
    if output.call_id is not None:
        return stage
    if output.text is None:
        # The telemetry names no call and hid the output: the settings that hide a tool's
        # output hide the responses that issued the calls too, so no call will ever match
        # this run, yet it happened and its result went somewhere. Its journey is its own,
        # not auditable, so that a run with content off never looks clean.
        keyed = replace(
            stage.measurement,
            tool_call_id=f"{sc.HIDDEN_TOOL_RUN_PREFIX}{span.span_id}",
            inferred=False,
        )
        return DerivedStage(keyed, stage.text)
    return UnmatchedTool(arguments_signature(output.name, output.arguments), span.started_us, stage)
