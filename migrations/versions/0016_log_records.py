"""OTLP log records the audit reads (``POST /v1/logs``, contract section 8).

Revision ID: 0016_log_records
Revises: 0015_counters_by_layer
Create Date: 2026-12-06

Mirrors ``LogRecordRow`` in ``collector/ctxledger_collector/storage/log_table.py``
(written out, never imported): one row per distinct record, keyed by a digest of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_log_records"
down_revision: str | Sequence[str] | None = "0015_counters_by_layer"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "log_records",
        sa.Column("record_key", sa.LargeBinary(length=16), nullable=False),
        sa.Column("received_at", sa.Float(), nullable=False),
        sa.Column("time_us", sa.BigInteger(), nullable=False),
        sa.Column("service_name", sa.Text(), nullable=True),
        sa.Column("scope_name", sa.Text(), nullable=True),
        sa.Column("event_name", sa.Text(), nullable=False),
        sa.Column("trace_id", sa.Text(), nullable=True),
        sa.Column("span_id", sa.Text(), nullable=True),
        sa.Column("session_id", sa.Text(), nullable=True),
        sa.Column("call_id", sa.Text(), nullable=True),
        sa.Column("body_chars", sa.BigInteger(), nullable=True),
        sa.Column("body_bytes", sa.BigInteger(), nullable=True),
        sa.Column("body_sha256", sa.Text(), nullable=True),
        sa.Column("body", sa.Text(), nullable=True),
        sa.Column("body_ref", sa.Text(), nullable=True),
        sa.Column("truncated", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("numbers", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("record_key"),
    )
    op.create_index("ix_log_records_session", "log_records", ["session_id", "time_us"])
    op.create_index("ix_log_records_call", "log_records", ["call_id"])
    op.create_index("ix_log_records_trace", "log_records", ["trace_id"])
    op.create_index("ix_log_records_received", "log_records", ["received_at"])


def downgrade() -> None:
    op.drop_table("log_records")
