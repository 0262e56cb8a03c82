"""Compact storage for incremental judging: integer run ids, measurement attributes as
columns (no JSON copy of the record, no second copy of the attributes), reports without
copies of their stages, and a calls table.

Revision ID: 0003_compact_storage
Revises: 0002_alerts
Create Date: 2026-12-01

Mirrors ``collector/ctxledger_collector/storage/tables.py`` as of this revision (written out,
never imported), with what judging traces without the SDK needs: each record's source
and telemetry cut, a request's conversation, sequence and position and the calls its
response issued (``call_issuers``), tool spans waiting for a call (``unmatched_tools``),
and a report's source and layer. Existing data is converted: the old tables are renamed
``*_v2``, the new ones created, every row copied across in batches, the old tables
dropped. Digests
are kept as their first 64 bits (all the rules compare), duplicate-copy digests of
converted rows are computed from the stored record (they only break ties between copies
with the same end time and span id). The downgrade converts back the same way; what the
new schema no longer holds (full digests, attributes the contract names) is rebuilt from
the columns.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0003_compact_storage"
down_revision: str | Sequence[str] | None = "0002_alerts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 2_000
_OFFSET = 2**63

#: The wire names a v2 measurement record came from (frozen here: migrations never
#: import project code). Attributes outside these are kept in ``extra``.
_MEASUREMENT_NAMES = {
    "stage": "ctxledger.stage",
    "order": "ctxledger.stage.order",
    "tool_call_id": "gen_ai.tool.call.id",
    "tool_name": "gen_ai.tool.name",
    "request_id": "ctxledger.request.id",
    "step": "ctxledger.step",
    "agent_name": "gen_ai.agent.name",
    "chars": "ctxledger.size.chars",
    "bytes": "ctxledger.size.bytes",
    "tokens": "ctxledger.size.tokens",
    "tokenizer": "ctxledger.tokenizer",
    "tokens_estimated": "ctxledger.size.tokens_estimated",
    "canonical_chars": "ctxledger.size.canonical_chars",
    "items": "ctxledger.size.items",
    "item_ids": "ctxledger.items.ids",
    "ids_complete": "ctxledger.items.ids_complete",
    "fields": "ctxledger.items.fields",
    "fields_complete": "ctxledger.items.fields_complete",
    "priority_items": "ctxledger.items.priority",
    "sha256": "ctxledger.content.sha256",
    "canonical_sha256": "ctxledger.content.canonical_sha256",
    "json_valid": "ctxledger.json.valid",
    "declared": "ctxledger.truncation.declared",
    "strategy": "ctxledger.truncation.strategy",
    "marker": "ctxledger.truncation.marker",
    "markers_found": "ctxledger.truncation.markers_found",
    "ref": "ctxledger.truncation.ref",
}
_MANIFEST_NAMES = {
    "request_id": "ctxledger.request.id",
    "step": "ctxledger.step",
    "tool_call_ids": "ctxledger.request.tool_call_ids",
    "tool_calls": "ctxledger.request.tool_calls",
    "tokens": "ctxledger.request.tokens",
    "tokenizer": "ctxledger.tokenizer",
    "context_window": "ctxledger.request.context_window",
    "model": "gen_ai.request.model",
    "agent_name": "gen_ai.agent.name",
    "sdk_dropped_spans": "ctxledger.sdk.dropped_spans",
}

_OLD_INDEXES = {
    "runs": ("ix_runs_agent_name", "ix_runs_first_seen", "ix_runs_last_seen"),
    "measurements": ("ix_measurements_journey",),
    "manifests": (),
    "reports": (
        "ix_reports_verdict_time",
        "ix_reports_tool_time",
        "ix_reports_agent_time",
        "ix_reports_unsettled",
    ),
}
_NEW_INDEXES = {
    "runs": ("ix_runs_agent_name", "ix_runs_first_seen", "ix_runs_last_seen"),
    "measurements": (),
    "string_lists": (),
    "manifests": ("ix_manifests_request", "ix_manifests_step"),
    "calls": ("ix_calls_step",),
    "call_issuers": ("ix_call_issuers_signature",),
    "unmatched_tools": ("ix_unmatched_tools_signature",),
    "reports": (
        "ix_reports_journey",
        "ix_reports_request",
        "ix_reports_verdict_time",
        "ix_reports_tool_time",
        "ix_reports_agent_time",
        "ix_reports_unsettled",
    ),
}


# --- the schemas -------------------------------------------------------------------------


def _create_new_tables() -> None:
    rowid = {"sqlite_with_rowid": False}
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("service_name", sa.String(length=256), nullable=True),
        sa.Column("agent_name", sa.String(length=256), nullable=True),
        sa.Column("first_seen", sa.Float(), nullable=False),
        sa.Column("last_seen", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("trace_id"),
    )
    op.create_index("ix_runs_agent_name", "runs", ["agent_name"], unique=False)
    op.create_index("ix_runs_first_seen", "runs", ["first_seen"], unique=False)
    op.create_index("ix_runs_last_seen", "runs", ["last_seen"], unique=False)

    op.create_table(
        "measurements",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("tool_call_id", sa.String(length=256), nullable=False),
        sa.Column("request_key", sa.String(length=256), nullable=False),
        sa.Column("stage", sa.String(length=128), nullable=False),
        sa.Column("stage_order", sa.Integer(), nullable=False),
        sa.Column("tool_name", sa.String(length=256), nullable=True),
        sa.Column("agent_name", sa.String(length=256), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("span_number", sa.BigInteger(), nullable=False),
        sa.Column("observed_us", sa.BigInteger(), nullable=False),
        sa.Column("copy_digest", sa.BigInteger(), nullable=False),
        sa.Column("dropped_attributes", sa.Integer(), nullable=False),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=True),
        sa.Column("tokens", sa.Integer(), nullable=True),
        sa.Column("tokenizer", sa.String(length=64), nullable=True),
        sa.Column("tokens_estimated", sa.Boolean(), nullable=False),
        sa.Column("canonical_chars", sa.Integer(), nullable=True),
        sa.Column("items", sa.Integer(), nullable=True),
        sa.Column("item_ids_ref", sa.LargeBinary(length=16), nullable=True),
        sa.Column("ids_complete", sa.Boolean(), nullable=False),
        sa.Column("fields_ref", sa.LargeBinary(length=16), nullable=True),
        sa.Column("fields_complete", sa.Boolean(), nullable=False),
        sa.Column("priority_items", sa.Integer(), nullable=True),
        sa.Column("sha256", sa.BigInteger(), nullable=True),
        sa.Column("canonical_sha256", sa.BigInteger(), nullable=True),
        sa.Column("json_valid", sa.Boolean(), nullable=True),
        sa.Column("declared", sa.Boolean(), nullable=False),
        sa.Column("strategy", sa.String(length=64), nullable=True),
        sa.Column("marker", sa.Boolean(), nullable=False),
        sa.Column("markers_found", sa.Text(), nullable=True),
        sa.Column("ref", sa.Text(), nullable=True),
        sa.Column("extra", sa.Text(), nullable=True),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("telemetry_cut", sa.Text(), nullable=True),
        sa.Column("inferred", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "tool_call_id", "request_key", "stage"),
        **rowid,
    )

    op.create_table(
        "string_lists",
        sa.Column("digest", sa.LargeBinary(length=16), nullable=False),
        sa.Column("items", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("digest"),
        **rowid,
    )

    op.create_table(
        "manifests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.String(length=256), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(length=256), nullable=True),
        sa.Column("agent_name", sa.String(length=256), nullable=True),
        sa.Column("tokens", sa.Integer(), nullable=True),
        sa.Column("tokenizer", sa.String(length=64), nullable=True),
        sa.Column("context_window", sa.Integer(), nullable=True),
        sa.Column("sdk_dropped_spans", sa.Integer(), nullable=True),
        sa.Column("tool_call_ids_ref", sa.LargeBinary(length=16), nullable=False),
        sa.Column("tool_calls_ref", sa.LargeBinary(length=16), nullable=True),
        sa.Column("span_number", sa.BigInteger(), nullable=False),
        sa.Column("observed_us", sa.BigInteger(), nullable=False),
        sa.Column("copy_digest", sa.BigInteger(), nullable=False),
        sa.Column("extra", sa.Text(), nullable=True),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("conversation", sa.String(length=64), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=True),
        sa.Column("position", sa.BigInteger(), nullable=True),
        sa.Column("issued_calls_ref", sa.LargeBinary(length=16), nullable=True),
        sa.Column("telemetry_cut", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_manifests_request", "manifests", ["run_id", "request_id"], unique=True)
    op.create_index(
        "ix_manifests_step", "manifests", ["run_id", "conversation", "position"], unique=False
    )

    op.create_table(
        "calls",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("tool_call_id", sa.String(length=256), nullable=False),
        sa.Column("call_step", sa.BigInteger(), nullable=False),
        sa.Column("conversation", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "tool_call_id"),
        **rowid,
    )
    op.create_index("ix_calls_step", "calls", ["run_id", "conversation", "call_step"], unique=False)

    op.create_table(
        "call_issuers",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("tool_call_id", sa.String(length=256), nullable=False),
        sa.Column("request_id", sa.String(length=256), nullable=False),
        sa.Column("signature", sa.BigInteger(), nullable=True),
        sa.Column("issued_order", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("run_id", "tool_call_id", "request_id"),
        **rowid,
    )
    op.create_index(
        "ix_call_issuers_signature", "call_issuers", ["run_id", "signature"], unique=False
    )

    op.create_table(
        "unmatched_tools",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("span_number", sa.BigInteger(), nullable=False),
        sa.Column("signature", sa.BigInteger(), nullable=False),
        sa.Column("started_us", sa.BigInteger(), nullable=False),
        sa.Column("measurement", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "span_number"),
        **rowid,
    )
    op.create_index(
        "ix_unmatched_tools_signature", "unmatched_tools", ["run_id", "signature"], unique=False
    )

    op.create_table(
        "reports",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("tool_call_id", sa.String(length=256), nullable=False),
        sa.Column("request_key", sa.String(length=256), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("tool_name", sa.String(length=256), nullable=True),
        sa.Column("agent_name", sa.String(length=256), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("settled", sa.Boolean(), nullable=False),
        sa.Column("lost_items", sa.Integer(), nullable=False),
        sa.Column("lost_chars", sa.Integer(), nullable=False),
        sa.Column("lost_tokens", sa.Integer(), nullable=False),
        sa.Column("lost_priority_items", sa.Integer(), nullable=False),
        sa.Column("last_observed_at", sa.Float(), nullable=False),
        sa.Column("judged_at", sa.Float(), nullable=False),
        sa.Column("lost_item_ids", sa.Text(), nullable=True),
        sa.Column("lost_fields", sa.Text(), nullable=True),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("transitions", sa.Text(), nullable=True),
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("layer", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_reports_journey", "reports", ["run_id", "tool_call_id", "request_key"], unique=True
    )
    op.create_index("ix_reports_request", "reports", ["run_id", "request_key"], unique=False)
    op.create_index(
        "ix_reports_verdict_time", "reports", ["verdict", "last_observed_at"], unique=False
    )
    op.create_index(
        "ix_reports_tool_time", "reports", ["tool_name", "last_observed_at"], unique=False
    )
    op.create_index(
        "ix_reports_agent_time", "reports", ["agent_name", "last_observed_at"], unique=False
    )
    op.create_index(
        "ix_reports_unsettled",
        "reports",
        ["last_observed_at"],
        unique=False,
        sqlite_where=sa.text("settled = 0"),
        postgresql_where=sa.text("NOT settled"),
    )


def _create_old_tables() -> None:
    """The 0002 schema of runs, measurements, manifests and reports."""
    op.create_table(
        "runs",
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("service_name", sa.String(length=256), nullable=True),
        sa.Column("agent_name", sa.String(length=256), nullable=True),
        sa.Column("first_seen", sa.Float(), nullable=False),
        sa.Column("last_seen", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("trace_id"),
    )
    op.create_index("ix_runs_agent_name", "runs", ["agent_name"], unique=False)
    op.create_index("ix_runs_first_seen", "runs", ["first_seen"], unique=False)
    op.create_index("ix_runs_last_seen", "runs", ["last_seen"], unique=False)
    op.create_table(
        "measurements",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("tool_call_id", sa.String(length=256), nullable=False),
        sa.Column("request_key", sa.String(length=256), nullable=False),
        sa.Column("stage", sa.String(length=128), nullable=False),
        sa.Column("stage_order", sa.Integer(), nullable=False),
        sa.Column("tool_name", sa.String(length=256), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("span_id", sa.String(length=16), nullable=True),
        sa.Column("observed_at", sa.Float(), nullable=False),
        sa.Column("pick_key", sa.String(length=64), nullable=False),
        sa.Column("dropped_attributes", sa.Integer(), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("attributes", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_measurements_journey",
        "measurements",
        ["trace_id", "tool_call_id", "request_key", "stage"],
        unique=True,
    )
    op.create_table(
        "manifests",
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("request_id", sa.String(length=256), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(length=256), nullable=True),
        sa.Column("tokens", sa.Integer(), nullable=True),
        sa.Column("context_window", sa.Integer(), nullable=True),
        sa.Column("span_id", sa.String(length=16), nullable=True),
        sa.Column("observed_at", sa.Float(), nullable=False),
        sa.Column("pick_key", sa.String(length=64), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("attributes", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("trace_id", "request_id"),
    )
    op.create_table(
        "reports",
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("tool_call_id", sa.String(length=256), nullable=False),
        sa.Column("request_key", sa.String(length=256), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("tool_name", sa.String(length=256), nullable=True),
        sa.Column("agent_name", sa.String(length=256), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("settled", sa.Boolean(), nullable=False),
        sa.Column("lost_items", sa.Integer(), nullable=False),
        sa.Column("lost_chars", sa.Integer(), nullable=False),
        sa.Column("lost_tokens", sa.Integer(), nullable=False),
        sa.Column("last_observed_at", sa.Float(), nullable=False),
        sa.Column("judged_at", sa.Float(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("trace_id", "tool_call_id", "request_key"),
    )
    for name, columns in (
        ("ix_reports_verdict_time", ["verdict", "last_observed_at"]),
        ("ix_reports_tool_time", ["tool_name", "last_observed_at"]),
        ("ix_reports_agent_time", ["agent_name", "last_observed_at"]),
        ("ix_reports_unsettled", ["settled", "last_observed_at"]),
    ):
        op.create_index(name, "reports", columns, unique=False)


def _set_aside(tables: dict[str, tuple[str, ...]], suffix: str) -> None:
    """Rename ``tables`` to ``<name><suffix>``, freeing their index and key names."""
    bind = op.get_bind()
    for table, indexes in tables.items():
        for index in indexes:
            op.drop_index(index, table_name=table)
        op.rename_table(table, f"{table}{suffix}")
        if bind.dialect.name == "postgresql":
            op.execute(f"ALTER INDEX IF EXISTS {table}_pkey RENAME TO {table}{suffix}_pkey")
            op.execute(
                f"ALTER INDEX IF EXISTS {table}_trace_id_key RENAME TO {table}{suffix}_trace_id_key"
            )
            op.execute(f"ALTER SEQUENCE IF EXISTS {table}_id_seq RENAME TO {table}{suffix}_id_seq")


# --- converting rows ---------------------------------------------------------------------


def _json(value: Any) -> Any:
    if isinstance(value, str):
        return json.loads(value)
    return value


def _text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _number(hex_text: str | None) -> int | None:
    """A span id or digest as the signed 64-bit number the new schema keeps."""
    if not hex_text:
        return None
    head = hex_text[:16] if len(hex_text) == 64 else hex_text
    try:
        if len(head) == 16:
            return int(head, 16) - _OFFSET
    except ValueError:
        pass
    return int.from_bytes(
        hashlib.blake2b(head.encode(), digest_size=8).digest(), "big", signed=True
    )


def _digest(document: Any) -> int:
    text = json.dumps(document, sort_keys=True, default=str)
    return int.from_bytes(
        hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True
    )


def _list_ref(lists: dict[bytes, str], values: Any) -> bytes | None:
    """The ``string_lists`` digest of a list (kept in ``lists`` to insert), None for None."""
    if values is None:
        return None
    text = json.dumps(list(values), ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
    lists.setdefault(digest, text)
    return digest


def _rows(table: str, columns: str, order: str) -> Iterator[Sequence[Any]]:
    bind = op.get_bind()
    offset = 0
    while True:
        chunk = bind.execute(
            sa.text(
                f"SELECT {columns} FROM {table} ORDER BY {order} LIMIT {_BATCH} OFFSET {offset}"
            )
        ).fetchall()
        if not chunk:
            return
        yield from chunk
        offset += len(chunk)


#: The 0002 columns of type JSON: PostgreSQL takes their text only through a cast.
_JSON_COLUMNS = {"record", "attributes", "detail"}


def _insert(table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    cast = op.get_bind().dialect.name == "postgresql"
    values = [f"CAST(:{c} AS JSON)" if cast and c in _JSON_COLUMNS else f":{c}" for c in rows[0]]
    op.get_bind().execute(
        sa.text(f"INSERT INTO {table} ({', '.join(rows[0])}) VALUES ({', '.join(values)})"),
        rows,
    )


def _flush(buffers: dict[str, list[dict[str, Any]]], force: bool = False) -> None:
    for table, rows in buffers.items():
        if rows and (force or len(rows) >= _BATCH):
            _insert(table, rows)
            rows.clear()


def _upgrade_data() -> None:
    bind = op.get_bind()
    run_ids: dict[str, int] = {}
    buffers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for index, (trace_id, service, agent, first, last) in enumerate(
        _rows("runs_v2", "trace_id, service_name, agent_name, first_seen, last_seen", "trace_id"),
        start=1,
    ):
        run_ids[trace_id] = index
        buffers["runs"].append(
            dict(
                id=index,
                trace_id=trace_id,
                service_name=service,
                agent_name=agent,
                first_seen=first,
                last_seen=last,
            )
        )
        _flush(buffers)
    _flush(buffers, force=True)
    if bind.dialect.name == "postgresql" and run_ids:
        op.execute(f"SELECT setval('runs_id_seq', {len(run_ids)})")

    call_steps: dict[tuple[int, str], int] = {}
    lists: dict[bytes, str] = {}
    for trace_id, request_key, observed_at, span_id, dropped, record, attributes in _rows(
        "measurements_v2",
        "trace_id, request_key, observed_at, span_id, dropped_attributes, record, attributes",
        "id",
    ):
        r, attrs = _json(record), _json(attributes)
        run_id = run_ids[trace_id]
        known = set(_MEASUREMENT_NAMES.values())
        extra = {k: v for k, v in attrs.items() if k not in known}
        if r.get("step") is not None and not request_key:
            key = (run_id, r["tool_call_id"])
            call_steps[key] = min(call_steps.get(key, r["step"]), r["step"])
        buffers["measurements"].append(
            dict(
                run_id=run_id,
                tool_call_id=r["tool_call_id"],
                request_key=request_key,
                stage=r["stage"],
                stage_order=r["order"],
                tool_name=r.get("tool_name"),
                agent_name=r.get("agent_name"),
                step=r.get("step"),
                span_number=_number(span_id) or -_OFFSET,
                observed_us=round(max(observed_at, 0.0) * 1_000_000),
                copy_digest=_digest(r),
                dropped_attributes=dropped,
                chars=r["chars"],
                bytes=r.get("bytes"),
                tokens=r.get("tokens"),
                tokenizer=r.get("tokenizer"),
                tokens_estimated=bool(r.get("tokens_estimated")),
                canonical_chars=r.get("canonical_chars"),
                items=r.get("items"),
                item_ids_ref=_list_ref(lists, r.get("item_ids")),
                ids_complete=bool(r.get("ids_complete", True)),
                fields_ref=_list_ref(lists, r.get("fields")),
                fields_complete=bool(r.get("fields_complete", True)),
                priority_items=r.get("priority_items"),
                sha256=_number(r.get("sha256")),
                canonical_sha256=_number(r.get("canonical_sha256")),
                json_valid=r.get("json_valid"),
                declared=bool(r.get("declared")),
                strategy=r.get("strategy"),
                marker=bool(r.get("marker")),
                markers_found=_text(r.get("markers_found")) if r.get("markers_found") else None,
                ref=r.get("ref"),
                extra=_text(extra) if extra else None,
                source="ctxledger",
                telemetry_cut=None,
                inferred=False,
            )
        )
        _flush(buffers)
    for (run_id, call_id), step in call_steps.items():
        buffers["calls"].append(
            dict(run_id=run_id, tool_call_id=call_id, call_step=step, conversation="")
        )
        _flush(buffers)

    for trace_id, observed_at, span_id, record, attributes in _rows(
        "manifests_v2", "trace_id, observed_at, span_id, record, attributes", "trace_id, request_id"
    ):
        r, attrs = _json(record), _json(attributes)
        known = set(_MANIFEST_NAMES.values())
        extra = {k: v for k, v in attrs.items() if k not in known}
        buffers["manifests"].append(
            dict(
                run_id=run_ids[trace_id],
                request_id=r["request_id"],
                step=r.get("step"),
                model=r.get("model"),
                agent_name=r.get("agent_name"),
                tokens=r.get("tokens"),
                tokenizer=attrs.get("ctxledger.tokenizer"),
                context_window=r.get("context_window"),
                sdk_dropped_spans=r.get("sdk_dropped_spans"),
                tool_call_ids_ref=_list_ref(lists, r.get("tool_call_ids") or []),
                tool_calls_ref=_list_ref(lists, r.get("tool_calls")),
                span_number=_number(span_id) or -_OFFSET,
                observed_us=round(max(observed_at, 0.0) * 1_000_000),
                copy_digest=_digest(r),
                extra=_text(extra) if extra else None,
                source="ctxledger",
                conversation="",
                sequence=None,
                position=r.get("step"),
                issued_calls_ref=None,
                telemetry_cut=None,
            )
        )
        _flush(buffers)

    columns = (
        "trace_id, tool_call_id, request_key, verdict, tool_name, agent_name, step, settled, "
        "lost_items, lost_chars, lost_tokens, last_observed_at, judged_at, detail"
    )
    for row in _rows("reports_v2", columns, "trace_id, tool_call_id, request_key"):
        (
            trace_id,
            call_id,
            request_key,
            verdict,
            tool,
            agent,
            step,
            settled,
            lost_items,
            lost_chars,
            lost_tokens,
            last_observed,
            judged,
            detail,
        ) = row
        d = _json(detail)
        lossy = [t for t in d.get("transitions", []) if t.get("verdict") != "intact"]
        buffers["reports"].append(
            dict(
                run_id=run_ids[trace_id],
                tool_call_id=call_id,
                request_key=request_key,
                verdict=verdict,
                tool_name=tool,
                agent_name=agent,
                step=step,
                settled=bool(settled),
                lost_items=lost_items,
                lost_chars=lost_chars,
                lost_tokens=lost_tokens,
                lost_priority_items=d.get("lost_priority_items", 0),
                last_observed_at=last_observed,
                judged_at=judged,
                lost_item_ids=_text(d.get("lost_item_ids")) if d.get("lost_item_ids") else None,
                lost_fields=_text(d.get("lost_fields")) if d.get("lost_fields") else None,
                notes=_text(d.get("notes")) if d.get("notes") else None,
                transitions=_text(lossy) if lossy else None,
                source="ctxledger",
                layer=None,
            )
        )
        _flush(buffers)
    for digest, text in lists.items():
        buffers["string_lists"].append(dict(digest=digest, items=text))
        _flush(buffers)
    _flush(buffers, force=True)


def _hex(number: int | None) -> str | None:
    return None if number is None else format(number + _OFFSET, "016x")


def _downgrade_data() -> None:
    traces = dict((run_id, trace_id) for run_id, trace_id in _rows("runs_v3", "id, trace_id", "id"))
    buffers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for _, trace_id, service, agent, first, last in _rows(
        "runs_v3", "id, trace_id, service_name, agent_name, first_seen, last_seen", "id"
    ):
        buffers["runs"].append(
            dict(
                trace_id=trace_id,
                service_name=service,
                agent_name=agent,
                first_seen=first,
                last_seen=last,
            )
        )
        _flush(buffers)

    lists = {
        bytes(digest): json.loads(items)
        for digest, items in _rows("string_lists_v3", "digest, items", "digest")
    }
    names = list(_MEASUREMENT_NAMES)
    aliases = {"item_ids": "item_ids_ref AS item_ids", "fields": "fields_ref AS fields"}
    stage_columns = (
        "run_id, tool_call_id, request_key, stage, stage_order, span_number, observed_us, "
        "dropped_attributes, extra, "
        + ", ".join(
            aliases.get(n, n)
            for n in names
            if n not in ("stage", "order", "tool_call_id", "request_id")
        )
    )
    stages_by_journey: dict[tuple[int, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in _rows("measurements_v3", stage_columns, "run_id, tool_call_id, request_key, stage"):
        run_id, call_id, request_key, stage, order, span, observed_us, dropped, extra = row[:9]
        values = dict(
            zip(
                [n for n in names if n not in ("stage", "order", "tool_call_id", "request_id")],
                row[9:],
                strict=True,
            )
        )
        for key in ("item_ids", "fields"):
            values[key] = lists[bytes(values[key])] if values[key] is not None else None
        values["markers_found"] = (
            json.loads(values["markers_found"]) if values["markers_found"] else []
        )
        for key in ("sha256", "canonical_sha256"):
            values[key] = _hex(values[key])
        record = dict(
            values,
            trace_id=traces[run_id],
            tool_call_id=call_id,
            stage=stage,
            order=order,
            request_id=request_key or None,
            dropped_attributes=dropped,
            observed_at=observed_us / 1_000_000,
            span_id=_hex(span),
        )
        attributes = {
            wire: record[field]
            for field, wire in _MEASUREMENT_NAMES.items()
            if record.get(field) not in (None, [])
        }
        attributes.update(json.loads(extra) if extra else {})
        stages_by_journey[(run_id, call_id, request_key)].append(record)
        buffers["measurements"].append(
            dict(
                trace_id=traces[run_id],
                tool_call_id=call_id,
                request_key=request_key,
                stage=stage,
                stage_order=order,
                tool_name=record.get("tool_name"),
                step=record.get("step"),
                span_id=_hex(span),
                observed_at=observed_us / 1_000_000,
                pick_key=f"{observed_us / 1_000_000:020.6f}|{_hex(span)}",
                dropped_attributes=dropped,
                record=_text(record),
                attributes=_text(attributes),
            )
        )
        _flush(buffers)

    manifest_fields = [n for n in _MANIFEST_NAMES if n != "request_id"]
    list_columns = {
        "tool_call_ids": "tool_call_ids_ref AS tool_call_ids",
        "tool_calls": "tool_calls_ref AS tool_calls",
    }
    for row in _rows(
        "manifests_v3",
        "run_id, request_id, span_number, observed_us, extra, "
        + ", ".join(list_columns.get(n, n) for n in manifest_fields),
        "run_id, request_id",
    ):
        run_id, request_id, span, observed_us, extra = row[:5]
        values = dict(zip(manifest_fields, row[5:], strict=True))
        values["tool_call_ids"] = lists[bytes(values["tool_call_ids"])]
        calls = values["tool_calls"]
        values["tool_calls"] = lists[bytes(calls)] if calls is not None else None
        tokenizer = values.pop("tokenizer")
        record = dict(
            values,
            trace_id=traces[run_id],
            request_id=request_id,
            observed_at=observed_us / 1_000_000,
            span_id=_hex(span),
        )
        attributes = {
            wire: record[field]
            for field, wire in _MANIFEST_NAMES.items()
            if record.get(field) is not None
        }
        if tokenizer:
            attributes["ctxledger.tokenizer"] = tokenizer
        attributes.update(json.loads(extra) if extra else {})
        buffers["manifests"].append(
            dict(
                trace_id=traces[run_id],
                request_id=request_id,
                step=record.get("step"),
                model=record.get("model"),
                tokens=record.get("tokens"),
                context_window=record.get("context_window"),
                span_id=_hex(span),
                observed_at=observed_us / 1_000_000,
                pick_key=f"{observed_us / 1_000_000:020.6f}|{_hex(span)}",
                record=_text(record),
                attributes=_text(attributes),
            )
        )
        _flush(buffers)

    columns = (
        "run_id, tool_call_id, request_key, verdict, tool_name, agent_name, step, settled, "
        "lost_items, lost_chars, lost_tokens, lost_priority_items, last_observed_at, "
        "judged_at, lost_item_ids, lost_fields, notes, transitions"
    )
    for row in _rows("reports_v3", columns, "run_id, tool_call_id, request_key"):
        (
            run_id,
            call_id,
            request_key,
            verdict,
            tool,
            agent,
            step,
            settled,
            lost_items,
            lost_chars,
            lost_tokens,
            lost_priority,
            last_observed,
            judged,
            ids,
            fields,
            notes,
            transitions,
        ) = row
        stages = sorted(
            [
                *stages_by_journey.get((run_id, call_id, ""), []),
                *(stages_by_journey.get((run_id, call_id, request_key), []) if request_key else []),
            ],
            key=lambda s: (s["order"], s["stage"]),
        )
        detail = {
            "request_id": request_key or None,
            "lost_item_ids": json.loads(ids) if ids else [],
            "lost_fields": json.loads(fields) if fields else [],
            "lost_priority_items": lost_priority,
            "notes": json.loads(notes) if notes else [],
            "stages": [
                {
                    k: s.get(k)
                    for k in (
                        "stage",
                        "order",
                        "request_id",
                        "step",
                        "chars",
                        "bytes",
                        "tokens",
                        "tokenizer",
                        "tokens_estimated",
                        "items",
                        "priority_items",
                        "json_valid",
                        "declared",
                        "strategy",
                        "marker",
                        "markers_found",
                        "ref",
                        "observed_at",
                    )
                }
                | {"trusted": s["dropped_attributes"] == 0}
                for s in stages
            ],
            "transitions": json.loads(transitions) if transitions else [],
        }
        buffers["reports"].append(
            dict(
                trace_id=traces[run_id],
                tool_call_id=call_id,
                request_key=request_key,
                verdict=verdict,
                tool_name=tool,
                agent_name=agent,
                step=step,
                settled=bool(settled),
                lost_items=lost_items,
                lost_chars=lost_chars,
                lost_tokens=lost_tokens,
                last_observed_at=last_observed,
                judged_at=judged,
                detail=_text(detail),
            )
        )
        _flush(buffers)
    _flush(buffers, force=True)


def upgrade() -> None:
    """Set the 0002 tables aside, create the compact ones, convert every row, drop the old."""
    _set_aside(_OLD_INDEXES, "_v2")
    _create_new_tables()
    _upgrade_data()
    for table in _OLD_INDEXES:
        op.drop_table(f"{table}_v2")


def downgrade() -> None:
    """Back to the 0002 tables, rows converted back (full digests become 64-bit ones)."""
    _set_aside(_NEW_INDEXES, "_v3")
    _create_old_tables()
    _downgrade_data()
    for table in _NEW_INDEXES:
        op.drop_table(f"{table}_v3")
