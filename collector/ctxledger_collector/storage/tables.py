"""The database tables (sqlmodel). The migrations in ``migrations/`` create the same schema.

Each run (trace) gets an integer id once (``runs``); the other tables key on it.
Keys are natural: a measurement is (run, tool call, request, stage), a manifest is
(run, request), a report is (run, tool call, request), a call is (run, tool call).
Two counter tables summarise the reports for the aggregates (``journey_counts``,
``run_journey_counts``, in :mod:`ctxledger_collector.storage.counter_tables`); the spans refused
at ingest are kept in :mod:`ctxledger_collector.storage.rejection_table`, the OTLP log records
in :mod:`ctxledger_collector.storage.log_table`, the alerting tables in
:mod:`ctxledger_collector.storage.alert_tables`.
``request_key`` is the request id or ``""`` for stages measured before any request, so
keys never hold NULL. Nothing is stored twice: a measurement's contract attributes are
columns (digests as 64-bit prefixes, which is all equality needs), attributes outside
the contract are kept as received in ``extra``; a report keeps its verdict, what was
lost and its lossy transitions, and the API reads its stages from the measurements.
Lists of strings (item ids, field names, tool call ids) are kept once each in
``string_lists`` and referred to by digest. On SQLite the keyed tables with small rows
are ``WITHOUT ROWID`` (the primary key is the table, not a second copy of it); reports
and manifests keep a rowid, so their secondary indexes carry it instead of the key.
"""

from __future__ import annotations

import builtins

from sqlalchemy import BigInteger, Boolean, Column, Index, LargeBinary, false, text
from sqlmodel import Field, SQLModel

# The alerting, counter, log and rejection tables live in modules of their own; importing this
# one defines them too, so SQLModel's metadata always holds the whole schema.
from ctxledger_collector.storage import (  # noqa: F401
    alert_tables,
    counter_tables,
    log_table,
    rejection_table,
)
from ctxledger_collector.storage.table_columns import (
    WITHOUT_ROWID,
    big_integer,
    digest_column,
    text_column,
)
from ctxledger_collector.storage.typed_tables import table_of

#: The condition of the partial index of losing and lossy reports (a literal: a
#: partial index serves only queries that repeat it word for word).
LOSSY_CONDITION = "verdict <> 'intact'"
_LOSSY = text(LOSSY_CONDITION)
#: The condition of the partial index of first lost journeys, word for word as the store
#: asks it (SQLite uses a partial index only for a query that repeats its condition).
FIRST_LOST_CONDITION = "first_lost = true"
_FIRST_LOST = text(FIRST_LOST_CONDITION)


class RunRow(SQLModel, table=True):
    """One agent run: one trace."""

    __tablename__ = "runs"
    #: Newest first, ties by id: the runs list and its cursor.
    __table_args__ = (Index("ix_runs_recent", "last_seen", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    trace_id: str = Field(max_length=32, unique=True)
    service_name: str | None = Field(default=None, max_length=256, index=True)
    agent_name: str | None = Field(default=None, max_length=256, index=True)
    first_seen: float = Field(index=True)
    last_seen: float


class StringListRow(SQLModel, table=True):
    """One distinct list of strings (item ids, field names, tool call ids), kept once."""

    __tablename__ = "string_lists"
    __table_args__ = WITHOUT_ROWID

    digest: bytes = Field(sa_column=Column(LargeBinary(16), primary_key=True))
    items: str = text_column(nullable=False)


class MeasurementRow(SQLModel, table=True):
    """One stage measurement span: one tool result at one stage."""

    __tablename__ = "measurements"
    __table_args__ = WITHOUT_ROWID

    run_id: int = Field(primary_key=True)
    tool_call_id: str = Field(primary_key=True, max_length=256)
    request_key: str = Field(primary_key=True, max_length=256)
    stage: str = Field(primary_key=True, max_length=128)
    stage_order: int
    tool_name: str | None = Field(default=None, max_length=256)
    agent_name: str | None = Field(default=None, max_length=256)
    step: int | None = None
    span_number: int = big_integer()
    observed_us: int = big_integer()
    copy_digest: int = big_integer()
    dropped_attributes: int = 0
    chars: int
    bytes: int | None = None
    tokens: int | None = None
    tokenizer: str | None = Field(default=None, max_length=64)
    tokens_estimated: bool = False
    canonical_chars: int | None = None
    items: int | None = None
    # ``builtins.bytes``: the class's own ``bytes`` column shadows the type here.
    item_ids_ref: builtins.bytes | None = digest_column()
    ids_complete: bool = True
    fields_ref: builtins.bytes | None = digest_column()
    fields_complete: bool = True
    priority_items: int | None = None
    sha256: int | None = big_integer(nullable=True)
    canonical_sha256: int | None = big_integer(nullable=True)
    json_valid: bool | None = None
    declared: bool = False
    strategy: str | None = Field(default=None, max_length=64)
    marker: bool = False
    markers_found: str | None = text_column()
    ref: str | None = text_column()
    extra: str | None = text_column()
    source: str = Field(default="ctxledger", max_length=32)
    telemetry_cut: str | None = text_column()
    inferred: bool = False


class ManifestRow(SQLModel, table=True):
    """One request manifest span: what an LLM request contained when sent."""

    __tablename__ = "manifests"
    __table_args__ = (
        Index("ix_manifests_request", "run_id", "request_id", unique=True),
        Index("ix_manifests_step", "conversation", "run_id", "position"),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: int
    request_id: str = Field(max_length=256)
    step: int | None = None
    model: str | None = Field(default=None, max_length=256)
    agent_name: str | None = Field(default=None, max_length=256)
    tokens: int | None = None
    tokenizer: str | None = Field(default=None, max_length=64)
    context_window: int | None = None
    sdk_dropped_spans: int | None = None
    tool_call_ids_ref: bytes = digest_column(nullable=False)
    tool_calls_ref: bytes | None = digest_column()
    span_number: int = big_integer()
    observed_us: int = big_integer()
    copy_digest: int = big_integer()
    extra: str | None = text_column()
    source: str = Field(default="ctxledger", max_length=32)
    #: The conversation ("" for the run's default one) and the request's place in it
    #: (its sequence, else its step): what the request that follows a call is found by.
    conversation: str = Field(default="", max_length=64)
    sequence: int | None = big_integer(nullable=True)
    position: int | None = big_integer(nullable=True)
    issued_calls_ref: bytes | None = digest_column()
    telemetry_cut: str | None = text_column()
    compaction: str | None = text_column()


class CallRow(SQLModel, table=True):
    """One tool call of a run and its origin (the conversation and position of the request
    whose response issued it, else the lowest step of its stages measured before any
    request), so the request that should follow it is found by an index."""

    __tablename__ = "calls"
    __table_args__ = (Index("ix_calls_step", "run_id", "conversation", "call_step"), WITHOUT_ROWID)

    run_id: int = Field(primary_key=True)
    tool_call_id: str = Field(primary_key=True, max_length=256)
    call_step: int = big_integer()
    conversation: str = Field(default="", max_length=64)


class CallIssuerRow(SQLModel, table=True):
    """A request whose response issued a call (its manifest's ``issued_calls``), with
    the call's signature (tool name and canonical arguments) where it was derived, so a
    tool span that names no call id can be matched to it."""

    __tablename__ = "call_issuers"
    __table_args__ = (Index("ix_call_issuers_signature", "run_id", "signature"), WITHOUT_ROWID)

    run_id: int = Field(primary_key=True)
    tool_call_id: str = Field(primary_key=True, max_length=256)
    request_id: str = Field(primary_key=True, max_length=256)
    signature: int | None = big_integer(nullable=True)
    issued_order: int | None = big_integer(nullable=True)


class UnmatchedToolRow(SQLModel, table=True):
    """A tool span that named no call id: its measured output, until it is matched to a
    call by signature and order (then it is also a measurement of that call)."""

    __tablename__ = "unmatched_tools"
    __table_args__ = (Index("ix_unmatched_tools_signature", "run_id", "signature"), WITHOUT_ROWID)

    run_id: int = Field(primary_key=True)
    span_number: int = Field(sa_column=Column(BigInteger, primary_key=True))
    signature: int = big_integer()
    started_us: int = big_integer()
    measurement: str = text_column(nullable=False)


class ReportRow(SQLModel, table=True):
    """The verdict on one journey, re-judged whenever data that bears on it arrives."""

    __tablename__ = "reports"
    # The time indexes end with the row id, so the reports list (newest first, ties by id)
    # pages by cursor on any of them.
    __table_args__ = (
        Index("ix_reports_journey", "run_id", "tool_call_id", "request_key", unique=True),
        # Request key first: an index that starts with the run would also serve lookups by
        # the run alone, and PostgreSQL chose it for a run's reports by call id, filtering
        # every report of the run per key, where the journey index finds them.
        Index("ix_reports_request", "request_key", "run_id"),
        Index("ix_reports_time", "last_observed_at", "id"),
        Index("ix_reports_verdict_time", "verdict", "last_observed_at", "id"),
        Index("ix_reports_tool_time", "tool_name", "last_observed_at", "id"),
        Index("ix_reports_agent_time", "agent_name", "last_observed_at", "id"),
        Index(
            "ix_reports_unsettled",
            "last_observed_at",
            sqlite_where=text("settled = 0"),
            postgresql_where=text("NOT settled"),
        ),
        # A tool's losses (its page's stages and recent losses) without its intact rows.
        Index(
            "ix_reports_losses",
            "tool_name",
            "last_observed_at",
            sqlite_where=_LOSSY,
            postgresql_where=_LOSSY,
        ),
        # Each lost result's first lost journey, found from its call.
        Index(
            "ix_reports_first_lost",
            "run_id",
            "tool_call_id",
            sqlite_where=_FIRST_LOST,
            postgresql_where=_FIRST_LOST,
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: int
    tool_call_id: str = Field(max_length=256)
    request_key: str = Field(max_length=256)
    verdict: str = Field(max_length=16)
    tool_name: str | None = Field(default=None, max_length=256)
    agent_name: str | None = Field(default=None, max_length=256)
    step: int | None = None
    settled: bool = True
    lost_items: int = 0
    lost_chars: int = 0
    lost_tokens: int = 0
    lost_priority_items: int = 0
    last_observed_at: float
    judged_at: float
    lost_item_ids: str | None = text_column()
    lost_fields: str | None = text_column()
    notes: str | None = text_column()
    transitions: str | None = text_column()
    source: str = Field(default="ctxledger", max_length=64)
    layer: str | None = text_column()
    #: The journey of its result (run, tool call) where the result was first lost: losing,
    #: and before every other losing journey of the call (``ctxledger.verdicts.sent_order``).
    #: Its other losing journeys are the result still missing.
    first_lost: bool = Field(
        default=False, sa_column=Column(Boolean, nullable=False, server_default=false())
    )
    #: Why the journey's lost tokens are not known (stages counted with different
    #: encodings); ``lost_tokens`` then says nothing (migration 0012).
    lost_tokens_unknown: str | None = text_column()


#: The duplicate rule's triple (ctxledger.verdicts.duplicates), as columns of the tables
#: that keep one copy per key.
COPY_KEY = ("observed_us", "span_number", "copy_digest")


RUNS = table_of(RunRow)
MEASUREMENTS = table_of(MeasurementRow)
MANIFESTS = table_of(ManifestRow)
CALLS = table_of(CallRow)
CALL_ISSUERS = table_of(CallIssuerRow)
UNMATCHED_TOOLS = table_of(UnmatchedToolRow)
STRING_LISTS = table_of(StringListRow)
REPORTS = table_of(ReportRow)
