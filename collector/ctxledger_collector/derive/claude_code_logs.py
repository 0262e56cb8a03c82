"""Claude Code's log events as evidence: each ``claude_code.api_request_body`` is one
request as sent (a manifest of the tool calls and results it carried, and a stage
``llm_input`` per result), keyed by its session's run and its ``request_body_id`` (the
name of its body's file with ``OTEL_LOG_RAW_API_BODIES=file:DIR``).

An inline body is cut at 60 KB by Claude Code's telemetry: the messages wholly inside the
prefix are judged, and the request says the rest was not seen.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any, Final

from ctxledger import semconv as sc
from ctxledger.verdicts import Manifest
from ctxledger_collector.decoded.batch import DerivedStage, IssuedCall
from ctxledger_collector.derive import claude_code
from ctxledger_collector.derive.anthropic_body import read_request_body
from ctxledger_collector.derive.messages import Exchange
from ctxledger_collector.derive.records import request_records
from ctxledger_collector.derive.spans import SourceSpan

#: The marker (``ctxledger.DEFAULT_MARKERS``) of Claude Code's ``<persisted-output>``.
PERSISTED_OUTPUT_MARKER: Final = "persisted_output"
SPILL_STRATEGY: Final = "spill"
REQUEST_BODY_EVENT: Final = "claude_code.api_request_body"
REQUEST_BODY_ID: Final = "request_body_id"
BODY_LENGTH: Final = "body_length"
MODEL: Final = "model"
PROVIDER: Final = "anthropic.provider"
CUSTOM_BASE_URL: Final = "anthropic.custom_base_url"
#: Claude Code's ``anthropic.provider`` as the GenAI conventions name the API.
PROVIDERS: Final = {"firstParty": "anthropic", "bedrock": "aws.bedrock", "vertex": "gcp.vertex_ai"}
INLINE_BODY_FIX: Final = (
    "Claude Code logs a request body inline up to CLAUDE_CODE_OTEL_CONTENT_MAX_LENGTH "
    "(60 KB by default): raise it (and any OTEL_*_ATTRIBUTE_VALUE_LENGTH_LIMIT)"
)


@dataclass(frozen=True)
class LogEvent:
    """One log record as derivation reads it: its body's text in memory only."""

    event_name: str
    time_us: int
    attributes: dict[str, Any]
    text: str | None
    truncated: bool
    service_name: str | None = None
    scope_name: str | None = None
    #: Why the body is not here (a file the collector may not or could not read).
    unread: str | None = None
    #: The trace the record was emitted in, if any.
    trace_id: str | None = None


def _text(attributes: dict[str, Any], key: str) -> str | None:
    value = attributes.get(key)
    return value if isinstance(value, str) and value else None


def _body_cut(event: LogEvent, text: str) -> tuple[str, str | None]:
    kept, cut = claude_code.telemetry_cut(text, "the request body")
    if cut is None and event.truncated:
        length = event.attributes.get(BODY_LENGTH)
        whole = f" of {length}" if isinstance(length, (int, str)) and length else ""
        cut = f"the request body was cut ({len(kept):,}{whole} chars kept)"
    if cut is not None:
        cut = f"{cut}; {INLINE_BODY_FIX}"
    return kept, cut


@dataclass(frozen=True)
class RequestBody:
    """What one request body showed, and what its usage needs to be read against it."""

    span: SourceSpan
    exchange: Exchange
    manifest: Manifest
    stages: list[DerivedStage]
    issued: list[IssuedCall]


def _provider(attributes: dict[str, Any]) -> str | None:
    """The API Claude Code reached: Anthropic's own, Bedrock or Vertex (which refuse an
    over-long prompt), or None behind a custom base URL (a gateway or another server)."""
    if _flag(attributes.get(CUSTOM_BASE_URL)):
        return None
    return PROVIDERS.get(str(attributes.get(PROVIDER)))


def _flag(value: Any) -> bool:
    return value is True or value == "true"


def request_body_records(event: LogEvent, keep_content: bool) -> RequestBody | None:
    """What one ``api_request_body`` event shows, or None when it is not one (or names
    no session, or carries no body and says nothing of one)."""
    if event.event_name != REQUEST_BODY_EVENT or (event.text is None and event.unread is None):
        return None
    session = claude_code.session_of(event.attributes)
    if session is None:
        return None
    if event.text is None:
        exchange = Exchange(input=None, input_cut=event.unread)
    else:
        text, cut = _body_cut(event, event.text)
        exchange = read_request_body(text, cut)
    request = _text(event.attributes, REQUEST_BODY_ID) or f"{session}@{event.time_us}"
    model = _text(event.attributes, MODEL)
    attributes: dict[str, Any] = {sc.GEN_AI_CONVERSATION_ID: session}
    if model is not None:
        attributes[sc.REQUEST_MODEL] = model
    provider = _provider(event.attributes)
    if provider is not None:
        attributes[sc.GEN_AI_PROVIDER_NAME] = provider
    request_span = SourceSpan(
        trace_id=claude_code.session_trace_id(session),
        span_id=hashlib.blake2b(request.encode(), digest_size=8).hexdigest(),
        name=event.event_name,
        start_time_unix_nano=event.time_us * 1000,
        end_time_unix_nano=event.time_us * 1000,
        attributes=attributes,
        service_name=event.service_name,
        scope_name=event.scope_name,
    )
    manifest, stages, issued = request_records(
        request_span, exchange, sc.SOURCE_CLAUDE_CODE, model, keep_content, request
    )
    spilled = [_spilled(stage) for stage in stages]
    return RequestBody(request_span, exchange, manifest, spilled, issued)


def _spilled(stage: DerivedStage) -> DerivedStage:
    """A result Claude Code saved to a file, the model getting a preview that says so: a
    declared spill, with the file as the reference to the whole."""
    m = stage.measurement
    if PERSISTED_OUTPUT_MARKER not in m.markers_found:
        return stage
    spilled = dataclasses.replace(m, declared=True, strategy=SPILL_STRATEGY)
    return DerivedStage(spilled, stage.text)
