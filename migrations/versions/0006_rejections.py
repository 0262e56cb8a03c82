"""The spans refused at ingest, with their reasons (``GET /api/v1/rejections``).

Revision ID: 0006_rejections
Revises: 0005_partition_by_run
Create Date: 2026-12-01

Mirrors ``RejectionRow`` in ``collector/ctxledger_collector/storage/tables.py`` (written out,
never imported): one row per rejected (trace id, span id), the newest kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_rejections"
down_revision: str | Sequence[str] | None = "0005_partition_by_run"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rejections",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.String(length=64), nullable=False),
        sa.Column("span_id", sa.String(length=64), nullable=False),
        sa.Column("service_name", sa.String(length=256), nullable=True),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.String(length=500), nullable=False),
        sa.Column("rejected_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_rejections_span", "rejections", ["trace_id", "span_id"], unique=True)


def downgrade() -> None:
    op.drop_table("rejections")
