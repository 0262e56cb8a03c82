"""Initial schema: runs, measurements, manifests, reports.

Revision ID: 0001_initial
Revises:
Create Date: 2025-11-30

Mirrors ``collector/ctxledger_collector/storage/tables.py`` as of this revision (written out,
never imported). Defaults such as ``settled=True`` are applied by the application, so
there are no server defaults.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0001_initial"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the four tables and their indexes."""
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
        "ix_reports_unsettled", "reports", ["settled", "last_observed_at"], unique=False
    )


def downgrade() -> None:
    """Drop the four tables (their indexes go with them, dropped explicitly first)."""
    op.drop_index("ix_reports_unsettled", table_name="reports")
    op.drop_index("ix_reports_agent_time", table_name="reports")
    op.drop_index("ix_reports_tool_time", table_name="reports")
    op.drop_index("ix_reports_verdict_time", table_name="reports")
    op.drop_table("reports")

    op.drop_table("manifests")

    op.drop_index("ix_measurements_journey", table_name="measurements")
    op.drop_table("measurements")

    op.drop_index("ix_runs_last_seen", table_name="runs")
    op.drop_index("ix_runs_first_seen", table_name="runs")
    op.drop_index("ix_runs_agent_name", table_name="runs")
    op.drop_table("runs")
