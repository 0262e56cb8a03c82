"""Alerting: events, groups and the notification outbox.

Revision ID: 0002_alerts
Revises: 0001_initial
Create Date: 2026-11-30

Mirrors the alert tables of ``collector/ctxledger_collector/storage/tables.py`` (written out,
never imported).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_alerts"
down_revision: str | Sequence[str] | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "alert_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rule", sa.String(length=128), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("agent", sa.String(length=256), nullable=False),
        sa.Column("tool", sa.String(length=256), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("tool_call_id", sa.String(length=256), nullable=False),
        sa.Column("request_key", sa.String(length=256), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("lost_items", sa.Integer(), nullable=False),
        sa.Column("lost_tokens", sa.Integer(), nullable=False),
        sa.Column("lost_priority_items", sa.Integer(), nullable=False),
        sa.Column("observed_at", sa.Float(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("batch_id", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_alert_events_journey",
        "alert_events",
        ["rule", "trace_id", "tool_call_id", "request_key"],
        unique=True,
    )
    op.create_index(
        "ix_alert_events_pending", "alert_events", ["rule", "agent", "tool", "batch_id"]
    )

    op.create_table(
        "alert_groups",
        sa.Column("rule", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=256), nullable=False),
        sa.Column("tool", sa.String(length=256), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("first_event_at", sa.Float(), nullable=False),
        sa.Column("last_event_at", sa.Float(), nullable=False),
        sa.Column("last_notified_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("rule", "agent", "tool"),
    )

    op.create_table(
        "alert_notifications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("webhook_id", sa.String(length=64), nullable=False),
        sa.Column("batch_id", sa.String(length=64), nullable=False),
        sa.Column("rule", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=256), nullable=False),
        sa.Column("tool", sa.String(length=256), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("sink", sa.String(length=128), nullable=False),
        sa.Column("sink_type", sa.String(length=16), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("delivery", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.Float(), nullable=False),
        sa.Column("lease_until", sa.Float(), nullable=True),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("last_error", sa.String(length=1000), nullable=True),
        sa.Column("delivered_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("webhook_id"),
    )
    op.create_index(
        "ix_alert_notifications_batch_id", "alert_notifications", ["batch_id"], unique=False
    )
    op.create_index(
        "ix_alert_notifications_created_at", "alert_notifications", ["created_at"], unique=False
    )
    op.create_index(
        "ix_alert_notifications_due", "alert_notifications", ["delivery", "next_attempt_at"]
    )


def downgrade() -> None:
    op.drop_table("alert_notifications")
    op.drop_table("alert_groups")
    op.drop_table("alert_events")
