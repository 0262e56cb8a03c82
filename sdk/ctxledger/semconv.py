"""Wire names of the ctxledger contract (v1), as documented constants.

This module is the only place where an attribute name is written as a string.
It has no dependencies so that any component (SDK, collector, tests) can import it.
Names marked *extension* are additions of this project; the contract allows adding
names but never renaming or re-meaning the ones it defines.
"""

from __future__ import annotations

from typing import Final

CONTRACT_VERSION: Final = "1"

# --- stages -----------------------------------------------------------------------
STAGE_ORIGINAL: Final = "original"
STAGE_SERIALIZED: Final = "serialized"
STAGE_ASSEMBLED: Final = "assembled"
STAGE_SENT: Final = "sent"
STAGE_RECEIVED: Final = "received"
"""What the model server says it read of the request (contract section 7, v1.2): one span
per request, after ``sent``; the collector and the SDK's ledger expand it into one
measurement per tool result of the request."""
STAGE_EMERGENCY_TRIM: Final = "emergency_trim"
"""*Extension.* The custom stage the SDK's emergency trim declares (its order is
:data:`ctxledger.verdicts.STAGE_EMERGENCY_TRIM_ORDER`)."""
#: Pipeline position of each built-in stage. Custom stages declare their own order.
BUILTIN_STAGE_ORDER: Final[dict[str, int]] = {
    STAGE_ORIGINAL: 10,
    STAGE_SERIALIZED: 20,
    STAGE_ASSEMBLED: 30,
    STAGE_SENT: 40,
    STAGE_RECEIVED: 50,
}

# --- stage measurement spans (contract section 2) -----------------------------------
STAGE: Final = "ctxledger.stage"
"""The stage measured: original, serialized, assembled, sent, or a custom name."""
STAGE_ORDER: Final = "ctxledger.stage.order"
"""Position in the pipeline; required for custom stages."""
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
"""The tool call whose result is measured; links the stages of one result."""
TOOL_NAME: Final = "gen_ai.tool.name"
REQUEST_ID: Final = "ctxledger.request.id"
"""The LLM request the result is assembled into / sent with."""
STEP: Final = "ctxledger.step"
"""The agent step: the LLM request number within the run."""
SIZE_CHARS: Final = "ctxledger.size.chars"
"""Length in Unicode code points."""
SIZE_BYTES: Final = "ctxledger.size.bytes"
"""Length in UTF-8 bytes."""
SIZE_TOKENS: Final = "ctxledger.size.tokens"
TOKENIZER: Final = "ctxledger.tokenizer"
SIZE_ITEMS: Final = "ctxledger.size.items"
"""Records (JSON array elements) or lines."""
ITEMS_IDS: Final = "ctxledger.items.ids"
ITEMS_IDS_COMPLETE: Final = "ctxledger.items.ids_complete"
ITEMS_PRIORITY: Final = "ctxledger.items.priority"
"""How many must-keep items are present."""
CONTENT_SHA256: Final = "ctxledger.content.sha256"
CONTENT_CANONICAL_SHA256: Final = "ctxledger.content.canonical_sha256"
JSON_VALID: Final = "ctxledger.json.valid"
TRUNCATION_DECLARED: Final = "ctxledger.truncation.declared"
TRUNCATION_STRATEGY: Final = "ctxledger.truncation.strategy"
TRUNCATION_MARKER: Final = "ctxledger.truncation.marker"
TRUNCATION_REF: Final = "ctxledger.truncation.ref"

TRUNCATION_STRATEGIES: Final = (
    "head_chars",
    "head_tail",
    "head_rows",
    "structured",
    "page",
    "summary",
    "spill",
    "emergency_trim",
    "other",
)

# --- request manifest spans (contract section 3) ------------------------------------
REQUEST_TOOL_CALL_IDS: Final = "ctxledger.request.tool_call_ids"
"""Tool results present in the request."""
REQUEST_TOOL_CALLS: Final = "ctxledger.request.tool_calls"
"""Tool calls issued by assistant messages in the request."""
REQUEST_TOKENS: Final = "ctxledger.request.tokens"
REQUEST_CONTEXT_WINDOW: Final = "ctxledger.request.context_window"
REQUEST_MODEL: Final = "gen_ai.request.model"

# --- the model server's layer: stage `received` (contract section 7, v1.2) ----------
RECEIVED_INPUT_TOKENS: Final = "ctxledger.received.input_tokens"
"""The input tokens the server reports it processed, all of them (uncached + cache read +
cache write)."""
RECEIVED_COUNTED_TOKENS: Final = "ctxledger.received.counted_tokens"
"""The measuring side's own count of the request as sent, with ``ctxledger.tokenizer``."""
TOKENIZER_EXACT: Final = "ctxledger.tokenizer.exact"
"""Whether that tokenizer is the model's own (exact) or an approximation."""
RECEIVED_POLICY: Final = "ctxledger.received.policy"
"""What the server does with an over-long prompt, where known (one ``POLICY_*`` below)."""
RECEIVED_DECLARED: Final = "ctxledger.received.declared"
"""The server said it reduced the prompt (a ``truncated`` flag, ``applied_edits``, an
echoed ``truncation: "auto"``)."""
POLICY_FRONT_DISCARD: Final = "front_discard"
"""The oldest non-system messages go first (ollama, LM Studio's rolling window, the
Responses API's ``truncation: "auto"``)."""
POLICY_MIDDLE_DISCARD: Final = "middle_discard"
"""The middle of the non-system messages goes (LM Studio's ``truncateMiddle``; a
compacting proxy such as contextpaw, which declares it in ``X-ContextPaw-*`` headers and
leaves a marker the model reads)."""
POLICY_TOKEN_TRUNCATE: Final = "token_truncate"
"""The first ``keep_tokens`` tokens stay, then the tokens after them go (llama.cpp)."""
POLICY_REFUSE: Final = "refuse"
"""The server refuses an over-long prompt with an error: nothing is lost silently."""
POLICY_PROVIDER_EDIT: Final = "provider_edit"
"""The server cleared named tool results on request (Anthropic's context editing)."""
RECEIVED_POLICIES: Final = (
    POLICY_FRONT_DISCARD,
    POLICY_MIDDLE_DISCARD,
    POLICY_TOKEN_TRUNCATE,
    POLICY_REFUSE,
    POLICY_PROVIDER_EDIT,
)
RECEIVED_SEGMENT_CALL_IDS: Final = "ctxledger.received.segment_call_ids"
"""*Extension.* The request as sent, cut into segments in order (one per message, except
that each tool-result block is its own segment): the tool call id of the result a segment
holds, ``""`` for any other segment."""
RECEIVED_SEGMENT_TOKENS: Final = "ctxledger.received.segment_tokens"
"""*Extension.* Tokens of each segment (same tokenizer as ``counted_tokens``, which is at
least their sum: the rest is overhead such as formatting and tool definitions)."""
RECEIVED_SEGMENT_CHARS: Final = "ctxledger.received.segment_chars"
"""*Extension.* Code points of each segment, so the kept chars of a cut result can be
estimated."""
RECEIVED_SEGMENT_ROLES: Final = "ctxledger.received.segment_roles"
"""*Extension.* The role of each segment: ``system``, ``user``, ``assistant`` or ``tool``."""
RECEIVED_KEEP_TOKENS: Final = "ctxledger.received.keep_tokens"
"""*Extension.* For ``token_truncate``: the first tokens the server always keeps
(ollama's ``num_keep``, llama.cpp's ``n_keep``)."""
RECEIVED_CLEARED_CALL_IDS: Final = "ctxledger.received.cleared_call_ids"
"""*Extension.* For ``provider_edit``: the tool results the server cleared."""
RECEIVED_MARKED: Final = "ctxledger.received.marked"
"""*Extension.* The model sees a placeholder where results were cleared (Anthropic's)."""
RECEIVED_UNREPORTED: Final = "ctxledger.received.unreported"
"""*Extension.* Why the response gave no usable count (one ``UNREPORTED_*`` below). The
span is sent anyway, so the report can say why there is no verdict."""
UNREPORTED_NO_USAGE: Final = "no_usage"
UNREPORTED_STREAM_WITHOUT_USAGE: Final = "stream_without_usage"
"""A streamed OpenAI chat response without ``stream_options.include_usage``."""
UNREPORTED_STREAM_CUT: Final = "stream_cut"
UNREPORTED_INVALID_COUNT: Final = "invalid_count"
RECEIVED_UNREPORTED_REASONS: Final = (
    UNREPORTED_NO_USAGE,
    UNREPORTED_STREAM_WITHOUT_USAGE,
    UNREPORTED_STREAM_CUT,
    UNREPORTED_INVALID_COUNT,
)
RECEIVED_OUTCOME: Final = "ctxledger.received.outcome"
"""*Extension.* Never sent: on the ``received`` measurements the collector and the ledger
expand a ``received`` span into (one per tool result), what the rule found of that result
(``kept``, ``cut``, ``dropped``, ``cleared``, ``unjudged``). Stored with them, so a
stored measurement judges as the decoded one did; the next three likewise."""
RECEIVED_LOST_TOKENS: Final = "ctxledger.received.lost_tokens"
"""*Extension.* Never sent: the result's tokens the server did not read."""
RECEIVED_LOST_CHARS: Final = "ctxledger.received.lost_chars"
"""*Extension.* Never sent: the result's chars the server did not read (estimated)."""
RECEIVED_NOTE: Final = "ctxledger.received.note"
#: A stage the collector derived: what its report should say of it (kept beside it).
STAGE_NOTE: Final = "ctxledger.stage.note"
"""*Extension.* Never sent: why there is no verdict, what was lost, or what the rule
assumed."""
ROLE_SYSTEM: Final = "system"
ROLE_USER: Final = "user"
ROLE_ASSISTANT: Final = "assistant"
ROLE_TOOL: Final = "tool"

# --- resource and agent naming ------------------------------------------------------
SERVICE_NAME: Final = "service.name"
SERVICE_INSTANCE_ID: Final = "service.instance.id"
"""OpenTelemetry's name: ctxledger's own resource carries one per process (a UUID), so
that per-process running totals (the drop report) can be told apart and added up."""
HOST_NAME: Final = "host.name"
"""OpenTelemetry's name: the host ctxledger's own pipeline runs on."""
AGENT_NAME: Final = "gen_ai.agent.name"

# --- extensions (this project's additions) ------------------------------------------
SIZE_CANONICAL_CHARS: Final = "ctxledger.size.canonical_chars"
"""*Extension.* Code points of the canonical JSON form; size comparisons use it when both
stages carry it, so escaping and whitespace changes are never mistaken for loss."""
SIZE_TOKENS_ESTIMATED: Final = "ctxledger.size.tokens_estimated"
"""*Extension.* True when the token count was extrapolated from a prefix (very large text)."""
ITEMS_FIELDS: Final = "ctxledger.items.fields"
"""*Extension.* Sorted union of the field names of the items; a field missing at a later
stage is loss even when the item count is unchanged."""
ITEMS_FIELDS_COMPLETE: Final = "ctxledger.items.fields_complete"
"""*Extension.* False when the field list was capped."""
TRUNCATION_MARKERS_FOUND: Final = "ctxledger.truncation.markers_found"
"""*Extension.* Names of the known truncation markers found in the measured text."""
SDK_DROPPED_SPANS: Final = "ctxledger.sdk.dropped_spans"
"""*Extension.* On manifests and drop reports: measurements the SDK had to drop so far in
this process (queue overflow, spool full, or export given up): a running total per
process (``service.instance.id``). Non-zero means the auditor's own view has gaps."""
SDK_DROPS_QUEUE: Final = "ctxledger.sdk.drops.queue"
"""*Extension.* On drop reports: measurement jobs dropped so far in this process because
the measurement queue was full (running total)."""
SDK_DROPS_BUFFER: Final = "ctxledger.sdk.drops.buffer"
"""*Extension.* On drop reports: spans dropped so far in this process from the in-memory
span buffer (full with no spool to take them, or left at shutdown; running total)."""
SDK_DROPS_SPOOL: Final = "ctxledger.sdk.drops.spool"
"""*Extension.* On drop reports: spans deleted so far by this process from a full
on-disk spool, oldest first (running total). They may have been measured by an earlier
process of the same host and service that shared the spool."""
SDK_SPOOL_SPANS: Final = "ctxledger.sdk.spool.spans"
"""*Extension.* On drop reports: spans waiting in the spool when the report was made."""
CONTENT_FORMAT: Final = "ctxledger.content.format"
"""*Extension.* How the measured text carries its data, as the SDK recognised it (one
``FORMAT_*`` name below): items, ids and the canonical form were read that way."""
FORMAT_JSON: Final = "json"
FORMAT_JSON_CUT: Final = "json_cut"
"""JSON that no longer parses (cut, or followed by other text): its complete records."""
FORMAT_JSONL: Final = "jsonl"
FORMAT_PYTHON: Final = "python"
"""A Python literal: what ``str(obj)`` of a dict or list gives (``'a'``, ``True``, ``None``)."""
FORMAT_PYTHON_CUT: Final = "python_cut"
FORMAT_YAML: Final = "yaml"
FORMAT_CSV: Final = "csv"
FORMAT_TSV: Final = "tsv"
FORMAT_MARKDOWN_TABLE: Final = "markdown_table"
FORMAT_TEXT: Final = "text"
"""Plain text: its items are its lines."""
FORMAT_UNPARSED: Final = "unparsed"
"""Looks like data, but no reader recognised it: its item count is unknown, not 0."""
CONTENT_TEXT: Final = "ctxledger.content.text"
"""*Extension.* The measured text itself; only sent when content capture is opted in."""
SDK_NAME: Final = "ctxledger.sdk.name"
SDK_VERSION: Final = "ctxledger.sdk.version"

# --- derived records and their extensions (contract section 6, v1.1) ---------------
STAGE_LLM_INPUT: Final = "llm_input"
"""*Extension.* The stage the collector derives from an LLM span's input messages: the tool
result as that request carried it. Its order is :data:`STAGE_LLM_INPUT_ORDER`."""
STAGE_LLM_INPUT_ORDER: Final = 40
STAGE_COMPACTED: Final = "compacted"
"""*Extension.* The stage the collector derives for a result the first request after a
compaction no longer carries, where that request declares the compaction and the one
before it carried the result: 0 chars, declared (strategy :data:`STRATEGY_COMPACTION`). Its
order is :data:`STAGE_LLM_INPUT_ORDER`: it stands where the request would have carried it."""
STRATEGY_COMPACTION: Final = "compaction"
"""The declared strategy of a :data:`STAGE_COMPACTED` stage: the runtime summarized the
conversation and the model sees the summary instead."""
SOURCE: Final = "ctxledger.source"
"""*Extension.* Where a measurement or manifest came from (``SOURCE_*``); absent means
``ctxledger`` (the SDK's own stage spans)."""
SOURCE_CTXLEDGER: Final = "ctxledger"
SOURCE_GENAI: Final = "genai"
"""OpenTelemetry GenAI spans: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` and
``execute_tool`` spans."""
SOURCE_GENAI_EVENTS: Final = "genai_events"
"""OpenTelemetry GenAI spans whose messages are span events (the older event form)."""
SOURCE_OPENLLMETRY: Final = "openllmetry"
"""OpenLLMetry's indexed ``gen_ai.prompt.{i}.*`` attributes and ``traceloop`` tool spans."""
SOURCE_OPENINFERENCE: Final = "openinference"
"""OpenInference ``LLM`` and ``TOOL`` spans."""
SOURCE_VERCEL_AI: Final = "vercel_ai"
"""The Vercel AI SDK's own ``ai.*`` spans (``ai.generateText.doGenerate``,
``ai.streamText.doStream``, ``ai.toolCall``)."""
SOURCE_CLAUDE_CODE: Final = "claude_code"
"""Claude Code's own telemetry (its ``claude_code.tool`` span's ``tool.output`` event, its
``claude_code.api_request_body`` log events)."""
SOURCE_PYDANTIC_AI: Final = "pydantic_ai"
"""pydantic-ai's own instrumentation (and Logfire's): GenAI spans, every data format
version (2 to 6)."""
SOURCE_STRANDS: Final = "strands"
"""Strands Agents' own telemetry (its ``chat`` and ``execute_tool`` spans, messages in the
Bedrock Converse shape, as span events or the latest conventions' event)."""
SOURCE_ADK: Final = "adk"
"""Google ADK's own telemetry (its GenAI conventions spans, or its older ``call_llm`` spans
with ``gcp.vertex.agent.llm_request`` and ``gcp.vertex.agent.tool_response``)."""
SOURCE_CODEX: Final = "codex"
"""OpenAI's Codex CLI's own telemetry (the ``codex.tool_result`` event on the span that
dispatched a tool call: the output's size, never its text)."""
CLAUDE_CODE_SPAN_REQUEST_PREFIX: Final = "llm_request:"
"""*Extension.* The request id of a Claude Code ``llm_request`` span (which never shows
the messages) begins with this; its request body's id is the ``request_body_id``."""
TELEMETRY_CUT: Final = "ctxledger.telemetry.cut"
"""*Extension.* Why the telemetry itself could not show this value whole (an attribute
length limit, evicted attributes, content stored off span). Such evidence is never
judged as pipeline loss: the journey is ``unauditable``."""
HIDDEN_TOOL_RUN_PREFIX: Final = "tool-span:"
"""*Extension.* The call id the collector gives a tool run whose telemetry names no call
and hid its output (``tool-span:<span id>``): no call will ever match it and no request
will carry it by that id, so its journey is judged at once, ``unauditable``."""
MATCH_INFERRED: Final = "ctxledger.match.inferred"
"""*Extension.* True on a stage whose tool call id was inferred (a tool span without a
call id, matched by tool name, canonical arguments and order within the trace)."""
REQUEST_ISSUED_CALLS: Final = "ctxledger.request.issued_calls"
"""*Extension.* On manifests: the tool calls the request's *response* issued. A call's
step is then the step of the request that issued it."""
REQUEST_CONVERSATION: Final = "ctxledger.request.conversation"
"""*Extension.* On manifests: the conversation the request belongs to. The request that
follows a call is looked for in the issuing request's conversation only."""
REQUEST_SEQUENCE: Final = "ctxledger.request.sequence"
"""*Extension.* On manifests: the request's place in its conversation (the collector uses
the LLM span's start time in microseconds); ordered by it rather than by the step."""

# --- OpenTelemetry GenAI semantic conventions (read, never written) ------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_INFERENCE_OPERATIONS: Final = frozenset({"chat", "text_completion", "generate_content"})
"""The ``gen_ai.operation.name`` values of an inference (LLM request) span."""
GEN_AI_EXECUTE_TOOL: Final = "execute_tool"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
"""JSON: ``[{"role", "parts": [{"type": "text" | "tool_call" | "tool_call_response", ...}]}]``."""
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_CONTENT_REFS: Final = (
    "gen_ai.input.messages_ref",
    "gen_ai.output.messages_ref",
    "gen_ai.input.messages.ref",
    "gen_ai.output.messages.ref",
)
"""Where an uploading completion hook stored the messages instead of the span."""
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_CONVERSATION_COMPACTED: Final = "gen_ai.conversation.compacted"
"""On an inference span: the conversation was compacted before this request (only ever
set true)."""
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_SYSTEM: Final = "gen_ai.system"
"""The provider's name before ``gen_ai.provider.name`` replaced it (still what most emit)."""
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
GEN_AI_SYSTEM_FINGERPRINTS: Final = (
    "openai.response.system_fingerprint",
    "gen_ai.openai.response.system_fingerprint",
    "gen_ai.openai.system_fingerprint",
)
"""Where the conventions (new, old) and OpenLLMetry record a Chat Completions response's
``system_fingerprint`` (ollama answers ``fp_ollama``)."""
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_TOOL_CALL_RESULTS: Final = (GEN_AI_TOOL_CALL_RESULT, "tool_response")
"""Where an ``execute_tool`` span holds the tool's result: the conventions' attribute, and
pydantic-ai's ``tool_response`` (its instrumentation version 2, ``running tool`` spans)."""
GEN_AI_TOOL_CALL_ARGUMENTS_KEYS: Final = (GEN_AI_TOOL_CALL_ARGUMENTS, "tool_arguments")
GEN_AI_PART_TEXT: Final = "text"
GEN_AI_PART_TOOL_CALL: Final = "tool_call"
GEN_AI_PART_TOOL_CALL_RESPONSE: Final = "tool_call_response"
GEN_AI_PART_COMPACTION: Final = "compaction"
"""A message part standing for the history a compaction replaced (a summary, or the
provider's opaque compaction item)."""
GEN_AI_TOOL_RESPONSE_KEYS: Final = ("response", "result")
"""The spec names the result ``response``; its own example and pydantic-ai say ``result``."""
GEN_AI_PROMPT: Final = "gen_ai.prompt"
"""OpenLLMetry's legacy indexed form: ``gen_ai.prompt.{i}.role`` / ``.content`` /
``.tool_call_id`` / ``.tool_calls.{j}.id`` (and ``.name``, ``.arguments``); also the
attribute of the older ``gen_ai.content.prompt`` span event (a JSON messages list)."""
GEN_AI_COMPLETION: Final = "gen_ai.completion"
"""OpenLLMetry's legacy ``gen_ai.completion.{i}.*``; also the attribute of the
``gen_ai.content.completion`` span event."""
# The parts of one message of OpenLLMetry's legacy form, after ``gen_ai.prompt.{i}.``:
OPENLLMETRY_ROLE: Final = "role"
OPENLLMETRY_CONTENT: Final = "content"
OPENLLMETRY_TOOL_CALL_ID: Final = "tool_call_id"
OPENLLMETRY_TOOL_CALLS: Final = "tool_calls"
"""Followed by ``.{j}.id`` / ``.name`` / ``.arguments``."""
OPENLLMETRY_CALL_FIELDS: Final = ("id", "name", "arguments")
GEN_AI_EVENT_CONTENT_PROMPT: Final = "gen_ai.content.prompt"
GEN_AI_EVENT_CONTENT_COMPLETION: Final = "gen_ai.content.completion"
GEN_AI_MESSAGE_EVENTS: Final = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
"""The older per-message span events and the role each stands for."""
GEN_AI_EVENT_CHOICE: Final = "gen_ai.choice"
GEN_AI_EVENT_BODY: Final = "gen_ai.event.content"
"""A JSON body some emitters put on the per-message events instead of flat fields."""

# --- OpenInference semantic conventions (read, never written) -----------------------
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OPENINFERENCE_LLM: Final = "LLM"
OPENINFERENCE_TOOL: Final = "TOOL"
LLM_INPUT_MESSAGES: Final = "llm.input_messages"
"""Flattened: ``llm.input_messages.{i}.message.role`` / ``.content`` / ``.tool_call_id`` /
``.tool_calls.{j}.tool_call.id`` (``.function.name``, ``.function.arguments``) /
``.contents.{k}.message_content.text``."""
LLM_OUTPUT_MESSAGES: Final = "llm.output_messages"
# The parts of a flattened OpenInference message, after ``llm.input_messages.{i}.``:
OI_MESSAGE_ROLE: Final = "message.role"
OI_MESSAGE_CONTENT: Final = "message.content"
OI_MESSAGE_CONTENTS: Final = "message.contents"
"""Followed by ``.{k}.message_content.text`` (:data:`OI_CONTENT_TEXT`)."""
OI_CONTENT_TEXT: Final = "message_content.text"
OI_MESSAGE_TOOL_CALL_ID: Final = "message.tool_call_id"
OI_MESSAGE_TOOL_CALLS: Final = "message.tool_calls"
"""Followed by ``.{j}.`` and :data:`OI_TOOL_CALL_ID`, ``_NAME``, ``_ARGUMENTS``."""
OI_TOOL_CALL_ID: Final = "tool_call.id"
OI_TOOL_CALL_NAME: Final = "tool_call.function.name"
OI_TOOL_CALL_ARGUMENTS: Final = "tool_call.function.arguments"
LLM_MODEL_NAME: Final = "llm.model_name"
LLM_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
LLM_PROVIDER: Final = "llm.provider"
OPENINFERENCE_TOOL_NAME: Final = "tool.name"
OPENINFERENCE_TOOL_ID: Final = "tool.id"
INPUT_VALUE: Final = "input.value"
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME_TYPE: Final = "output.mime_type"
MIME_JSON: Final = "application/json"
OPENINFERENCE_REDACTED: Final = "__REDACTED__"
"""What OpenInference writes instead of a value its ``OPENINFERENCE_HIDE_*`` settings hide."""

# --- the Vercel AI SDK's ai.* spans (read, never written) ----------------------------
AI_OPERATION_ID: Final = "ai.operationId"
"""``ai.generateText.doGenerate``, ``ai.streamText.doStream``, ``ai.toolCall``, …"""
AI_MODEL_REQUEST_SUFFIXES: Final = (".doGenerate", ".doStream")
"""The operation ids of one provider call (an LLM request); the others wrap them."""
AI_TOOL_CALL: Final = "ai.toolCall"
AI_PROMPT_MESSAGES: Final = "ai.prompt.messages"
"""JSON: the prompt as handed to the provider (``role``, ``content`` parts of type
``text``, ``tool-call``, ``tool-result``)."""
AI_RESPONSE_TOOL_CALLS: Final = "ai.response.toolCalls"
"""JSON: ``[{"toolCallId", "toolName", "input"}]`` (``args`` before AI SDK 5)."""
AI_MODEL_ID: Final = "ai.model.id"
AI_USAGE_INPUT_TOKENS: Final = ("ai.usage.inputTokens", "ai.usage.promptTokens")
AI_TOOL_CALL_ID: Final = "ai.toolCall.id"
AI_TOOL_CALL_NAME: Final = "ai.toolCall.name"
AI_TOOL_CALL_ARGUMENTS: Final = ("ai.toolCall.args", "ai.toolCall.input")
AI_TOOL_CALL_RESULT: Final = ("ai.toolCall.result", "ai.toolCall.output")
AI_SCOPES: Final = frozenset({"ai", "gen_ai"})
"""The tracer names of the AI SDK: ``ai`` (its ``ai.*`` spans, ``LegacyOpenTelemetry``
in AI SDK 7) and ``gen_ai`` (``@ai-sdk/otel``'s ``OpenTelemetry``: GenAI spans)."""

# --- OpenLLMetry (traceloop) tool spans (read, never written) ------------------------
TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"
TRACELOOP_TOOL: Final = "tool"
TRACELOOP_ENTITY_NAME: Final = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT: Final = "traceloop.entity.input"
"""JSON ``{"args": [...], "kwargs": {...}}``."""
TRACELOOP_ENTITY_OUTPUT: Final = "traceloop.entity.output"
"""JSON of the return value, sliced at ``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT``."""

# --- the context overflow event (extension) ----------------------------------------
EVENT_CONTEXT_LENGTH_EXCEEDED: Final = "ctxledger.context_length_exceeded"
"""*Extension.* A span event: the provider rejected a request as longer than the model's
context window (recorded by :func:`ctxledger.remedies.call_with_emergency_trim`)."""
ERROR_TYPE: Final = "error.type"
"""The exception's class (OpenTelemetry's general attribute)."""
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"
"""The provider's HTTP status, where the error carries one (OpenTelemetry's name)."""
ERROR_MESSAGE: Final = "ctxledger.error.message"
"""*Extension.* The error's text, cut to 1,000 chars."""
EMERGENCY_TRIM_ATTEMPT: Final = "ctxledger.emergency_trim.attempt"
"""*Extension.* Which overflow of this call it was: 1 for the first."""
EMERGENCY_TRIM_TRIMMED: Final = "ctxledger.emergency_trim.trimmed"
"""*Extension.* How many tool results the trim that followed this overflow replaced
(this and the next three are absent when no trim followed: the rounds ran out)."""
EMERGENCY_TRIM_TOKENS_BEFORE: Final = "ctxledger.emergency_trim.tokens_before"
"""*Extension.* The estimated tokens of the request that overflowed."""
EMERGENCY_TRIM_TOKENS_AFTER: Final = "ctxledger.emergency_trim.tokens_after"
"""*Extension.* The estimated tokens after that trim."""
EMERGENCY_TRIM_NOTHING_LEFT: Final = "ctxledger.emergency_trim.nothing_left"
"""*Extension.* True when every tool result is already the placeholder."""

# --- span names (not part of the contract; clients may name spans freely) -----------
SPAN_MEASUREMENT: Final = "ctxledger.measure"
SPAN_MANIFEST: Final = "ctxledger.request"
SPAN_RUN: Final = "ctxledger.run"
SPAN_SDK_DROPS: Final = "ctxledger.sdk.drops"
"""The drop report: a root span the SDK's own pipeline emits when its drop totals changed
(at most every few seconds, and at shutdown). It carries ``ctxledger.sdk.dropped_spans``
and the ``ctxledger.sdk.drops.*`` totals, and neither ``ctxledger.stage`` nor
``ctxledger.request.id``; its resource names the host and the process."""

# --- verdicts (contract section 4) --------------------------------------------------
VERDICT_INTACT: Final = "intact"
VERDICT_DECLARED: Final = "declared"
VERDICT_UNMARKED: Final = "unmarked"
VERDICT_SILENT: Final = "silent"
VERDICT_DROPPED: Final = "dropped"
VERDICT_ORPHANED: Final = "orphaned"
VERDICT_INCOMPLETE: Final = "incomplete"
VERDICT_UNAUDITABLE: Final = "unauditable"
"""*Extension.* The telemetry itself could not show the evidence whole (an attribute
length limit, evicted attributes, content stored off span): the journey could not be
judged, and its report says why and what to change. Never a loss verdict."""
