"""Why a span was rejected: a fixed vocabulary of reason codes, and the rejection record.

The codes label the ``ctxledger_ingest_rejected_spans`` metric and the rows of
``GET /api/v1/rejections``, so their set is closed (a metric label set must stay
bounded); the human-readable detail that goes with each rejection is free text.
"""

from __future__ import annotations

from dataclasses import dataclass

#: A span whose structure is not an OTLP span (JSON: wrong types, bad base64, ...), or
#: that holds text that is not Unicode (invalid UTF-8, a lone surrogate).
MALFORMED_SPAN = "malformed_span"
#: A measurement or manifest without a valid trace id or span id.
INVALID_ID = "invalid_id"
#: A measurement or manifest that breaks the wire contract (missing or mistyped attribute).
CONTRACT = "contract"
#: An identifier longer than its database column, or one the database cannot hold (NUL).
COLUMN_LIMIT = "column_limit"
#: The database refused the span itself (the rest of its batch was stored).
DATABASE_REFUSED = "database_refused"
#: More attributes on the span (or on one of its events), or more events, than allowed.
TOO_MANY_ATTRIBUTES = "too_many_attributes"
#: A string or bytes value longer, or an array or key/value list longer, than allowed.
VALUE_TOO_LONG = "value_too_long"
#: An ``AnyValue`` nested (arrays, key/value lists) deeper than allowed.
NESTING_TOO_DEEP = "nesting_too_deep"
#: Given before 2026-12-08 to the spans of an export past the request time limit that were
#: not yet stored; since then such an export is kept in the ingest spool and stored whole.
#: Rows written before may still carry it.
REQUEST_DEADLINE = "request_deadline"

REASONS: tuple[str, ...] = (
    MALFORMED_SPAN,
    INVALID_ID,
    CONTRACT,
    COLUMN_LIMIT,
    DATABASE_REFUSED,
    TOO_MANY_ATTRIBUTES,
    VALUE_TOO_LONG,
    NESTING_TOO_DEEP,
    REQUEST_DEADLINE,
)


@dataclass(frozen=True)
class Rejection:
    """One span refused alone, the rest of its batch kept: ``code`` is one of
    :data:`REASONS`, ``reason`` says what exactly was wrong."""

    trace_id: str
    span_id: str
    reason: str
    code: str
    service_name: str | None = None
