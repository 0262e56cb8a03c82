"""Which OTLP log records the audit reads, and what of them is stored (contract section 8).

Agent runtimes report tool results and request bodies as log events: Claude Code's
``claude_code.tool_result``, ``api_request`` (usage), ``api_request_body`` and
``api_response_body``, ``compaction``; Codex's ``codex.tool_result``, ``sse_event`` and
``api_request``; and every ``gen_ai.*`` event of the GenAI conventions. Those are kept;
every other record (a plugin loaded, a prompt typed) is counted as ignored, never an
error.

A record keeps its ids (session, tool call, trace), its time, its numeric attributes
(sizes, token counts), whether the runtime says it cut it, and its body's size and
digest. The body's text is kept only when the operator opted in to content
(``CTXLEDGER_STORE_MESSAGE_CONTENT``); a body the runtime wrote to a file is kept as that
file's reference (``body_ref``).
"""

from __future__ import annotations

import hashlib
import math
import re
from datetime import datetime
from typing import Any, Final

import orjson

from ctxledger_collector.decoded.batch import DecodedLogRecord
from ctxledger_collector.ingest.otlp_logs import RawLogRecord

#: The runtimes' events the audit reads: tool results, requests as sent (and their
#: answers), the usage a request reports, declared compactions.
AUDITED_EVENTS: Final = frozenset(
    {
        "claude_code.tool_result",
        "claude_code.api_request",
        "claude_code.api_request_body",
        "claude_code.api_response_body",
        "claude_code.compaction",
        "codex.tool_result",
        "codex.sse_event",
        "codex.api_request",
    }
)
#: Every event of the GenAI conventions is read.
AUDITED_PREFIXES: Final = ("gen_ai.",)
#: Where runtimes put the event's name when the record's own field is empty.
EVENT_NAME_ATTRIBUTES: Final = ("event.name",)
SESSION_ATTRIBUTES: Final = ("session.id", "conversation.id", "gen_ai.conversation.id")
CALL_ATTRIBUTES: Final = ("tool_use_id", "call_id", "gen_ai.tool.call.id", "tool_call_id")
BODY_REF_ATTRIBUTE: Final = "body_ref"
#: Where Claude Code puts a request or response body (inline, cut at 60 KB).
BODY_ATTRIBUTE: Final = "body"
_NUMBER: Final = re.compile(r"-?\d{1,19}(\.\d+)?")
EVENT_TIMESTAMP_ATTRIBUTE: Final = "event.timestamp"
_MAX_NAME: Final = 256
_MAX_PATH: Final = 4_096
_MAX_BODY: Final = 65_536


def event_name(raw: RawLogRecord) -> str:
    """The record's event name: the first audited one of its own field, a body that is
    one (Claude Code's ``claude_code.tool_result``, whose ``event.name`` attribute is the
    bare ``tool_result``) and its ``event.name`` attribute (Codex's ``codex.tool_result``:
    Codex 0.171 fills the record's own field with a code location,
    ``event otel/src/tool_result.rs:54``); else the first of them it has."""
    body = raw.body if isinstance(raw.body, str) and len(raw.body) <= _MAX_NAME else None
    named = [raw.event_name, body if body is not None and is_audited(body) else None]
    named += [raw.attributes.get(name) for name in EVENT_NAME_ATTRIBUTES]
    names = [n[:_MAX_NAME] for n in named if isinstance(n, str) and n]
    return next((n for n in names if is_audited(n)), names[0] if names else "")


def is_audited(name: str) -> bool:
    return name in AUDITED_EVENTS or name.startswith(AUDITED_PREFIXES)


def _text_attribute(
    attrs: dict[str, Any], names: tuple[str, ...], longest: int = _MAX_NAME
) -> str | None:
    """The first of ``names`` holding text; None when that text is longer than ``longest``
    (an id cut short would name another thing)."""
    for name in names:
        value = attrs.get(name)
        if isinstance(value, str) and value:
            return value if len(value) <= longest else None
    return None


def _time_us(raw: RawLogRecord) -> int:
    """The record's time; Codex sends ``timeUnixNano`` 0, so then its observed time, else
    its ``event.timestamp`` attribute (ISO 8601)."""
    nanos = raw.time_unix_nano or raw.observed_time_unix_nano
    if nanos:
        return nanos // 1000
    stamp = raw.attributes.get(EVENT_TIMESTAMP_ATTRIBUTE)
    if isinstance(stamp, str):
        try:
            return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1e6)
        except ValueError:
            return 0
    return 0


def _content(raw: RawLogRecord, name: str) -> Any:
    """What the record carries: its ``body`` attribute (Claude Code puts the request or
    response body there, the record's own body being the event's name), else its body
    unless that is only the event's name."""
    attribute = raw.attributes.get(BODY_ATTRIBUTE)
    if isinstance(attribute, str):
        return attribute
    return None if raw.body == name else raw.body


def _body_text(body: Any) -> str | None:
    """The body as text: a string as it is, anything else as compact JSON."""
    if body is None:
        return None
    if isinstance(body, str):
        return body
    if isinstance(body, bytes):
        return body.decode("utf-8", "replace")
    return orjson.dumps(body, default=repr).decode("utf-8")


def record_text(raw: RawLogRecord, name: str) -> str | None:
    """What the record carries, as text (in memory: stored only with content opted in)."""
    return _body_text(_content(raw, name))


def _truncated(attrs: dict[str, Any]) -> bool:
    return any(
        _scalar(value) is True for name, value in attrs.items() if name.endswith("truncated")
    )


def _scalar(value: Any) -> int | float | bool | None:
    """A flag or number, also as the text some runtimes send (Claude Code's ``"13892"``,
    ``"0.0"``, ``"true"``); None for anything else. Integers beyond 64 bits are left out
    (JSON readers would not hold them exactly)."""
    if isinstance(value, str):
        if value in ("true", "false"):
            return value == "true"
        if not _NUMBER.fullmatch(value):
            return None
        value = float(value) if "." in value else int(value)
    if isinstance(value, bool) or (isinstance(value, float) and math.isfinite(value)):
        return value
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return value
    return None


def _numbers(attrs: dict[str, Any]) -> dict[str, int | float | bool]:
    """The record's flags and numbers (sizes, token counts, durations): never content."""
    kept: dict[str, int | float | bool] = {}
    for name, value in attrs.items():
        scalar = _scalar(value)
        if scalar is not None:
            kept[name[:_MAX_NAME]] = scalar
    return kept


def _key(raw: RawLogRecord, name: str, body: str | None) -> bytes:
    identity = orjson.dumps(
        [
            raw.service_name,
            raw.scope_name,
            name,
            raw.time_unix_nano,
            raw.observed_time_unix_nano,
            raw.trace_id,
            raw.span_id,
            body,
            raw.attributes,
        ],
        default=repr,
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
    )
    return hashlib.blake2b(identity, digest_size=16).digest()


def decoded_log_record(raw: RawLogRecord, keep_content: bool) -> DecodedLogRecord | None:
    """The stored form of a record the audit reads; None for any other record."""
    name = event_name(raw)
    if not is_audited(name):
        return None
    attrs = raw.attributes
    text = record_text(raw, name)
    encoded = text.encode("utf-8", "surrogatepass") if text is not None else None
    return DecodedLogRecord(
        key=_key(raw, name, text),
        service_name=raw.service_name,
        scope_name=raw.scope_name,
        event_name=name,
        time_us=_time_us(raw),
        trace_id=raw.trace_id or None,
        span_id=raw.span_id or None,
        session_id=_text_attribute(attrs, SESSION_ATTRIBUTES),
        call_id=_text_attribute(attrs, CALL_ATTRIBUTES),
        body_chars=len(text) if text is not None else None,
        body_bytes=len(encoded) if encoded is not None else None,
        body_sha256=hashlib.sha256(encoded).hexdigest() if encoded is not None else None,
        body=text[:_MAX_BODY] if keep_content and text is not None else None,
        body_ref=_text_attribute(attrs, (BODY_REF_ATTRIBUTE,), _MAX_PATH),
        truncated=_truncated(attrs),
        numbers=_numbers(attrs),
    )
