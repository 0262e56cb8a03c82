"""What Claude Code's own telemetry says, read the same way from its spans and its log
events: which run a record belongs to, and where Claude Code cut what it reports.

Claude Code's log events carry no trace id, only ``session.id``; its spans carry both,
one trace per prompt. A session is one run: every Claude Code record is keyed by its
session (the session's UUID as 32 hex digits is the run's trace id), so a tool's output
on a span and the requests in log events that carried it meet in one journey.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Any, Final

from ctxledger import semconv as sc
from ctxledger_collector.derive import cuts
from ctxledger_collector.derive.spans import SourceSpan

#: The logger of Claude Code's events (its spans' tracer is ``cuts.CLAUDE_CODE_SCOPE``).
EVENTS_SCOPE: Final = "com.anthropic.claude_code.events"
SESSION_ATTRIBUTE: Final = "session.id"
TOOL_USE_ID: Final = "tool_use_id"
#: The tool's name as the model calls it (``gen_ai.tool.name`` is an MCP tool's bare name).
TOOL_NAME: Final = "tool_name"

#: Claude Code ends a value it cut for its telemetry (``CLAUDE_CODE_OTEL_CONTENT_MAX_LENGTH``,
#: 60 KB by default, or a smaller OTel attribute limit) with this line.
_TELEMETRY_CUT = re.compile(r"\n\[TRUNCATED - Content exceeds ([^\]\n]{1,40}) limit\]\Z")
#: The characters of a Bash command's output Claude Code keeps in memory, and so in its
#: tool.output event, when the output is longer (``bashOutputMaxChars``; the rest goes
#: to a file and the model gets a ``<persisted-output>`` preview).
BASH_READ_BACK_CHARS: Final = 30_000
BASH_TOOL: Final = "Bash"

CONTENT_LIMIT_FIX: Final = (
    "raise CLAUDE_CODE_OTEL_CONTENT_MAX_LENGTH (and any OTEL_*_ATTRIBUTE_VALUE_LENGTH_LIMIT)"
)


def session_trace_id(session: str) -> str:
    """The run's trace id of a Claude Code session: its UUID as 32 hex digits (so the id
    shown is the session's), else a digest of whatever id it has."""
    digits = session.replace("-", "").lower()
    if len(digits) == 32 and all(c in "0123456789abcdef" for c in digits):
        return digits
    return hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def session_of(attributes: dict[str, Any]) -> str | None:
    session = attributes.get(SESSION_ATTRIBUTE)
    return session if isinstance(session, str) and session else None


def keyed_by_session(span: SourceSpan) -> SourceSpan:
    """A Claude Code span keyed by its session's run (other spans as they are)."""
    if span.scope_name != cuts.CLAUDE_CODE_SCOPE:
        return span
    session = session_of(span.attributes)
    if session is None:
        return span
    return dataclasses.replace(span, trace_id=session_trace_id(session))


def span_request_id(span: SourceSpan) -> str:
    """The request id of a Claude Code ``llm_request`` span: its span id behind a prefix
    that sorts after the request bodies' ids (UUIDs), so that where both show a request
    the evidence gap a report names is a body's, whose setting says how to read it."""
    return f"{sc.CLAUDE_CODE_SPAN_REQUEST_PREFIX}{span.span_id}"


def telemetry_cut(text: str, what: str) -> tuple[str, str | None]:
    """``text`` without the line Claude Code appends where it cut a value for its
    telemetry, and why it is cut (None: whole)."""
    found = _TELEMETRY_CUT.search(text)
    if found is None:
        return text, None
    kept = text[: found.start()]
    return kept, (
        f"{what} was cut by Claude Code's telemetry at {found.group(1)} "
        f"({len(kept):,} chars kept): {CONTENT_LIMIT_FIX}"
    )


def bash_read_back_cut(tool_name: str | None, output: str) -> str | None:
    """Why a Bash output in a tool.output event is only the start of the command's
    output (None: it is whole as far as its length says)."""
    if tool_name != BASH_TOOL or len(output) != BASH_READ_BACK_CHARS:
        return None
    return (
        f"the tool.output event holds the first {BASH_READ_BACK_CHARS:,} chars of the Bash "
        "output, all Claude Code keeps in memory (bashOutputMaxChars); the whole output is "
        "in the file its <persisted-output> preview names"
    )
