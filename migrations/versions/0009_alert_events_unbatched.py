"""The alert events not yet notified get a partial index of their own.

Revision ID: 0009_alert_events_unbatched
Revises: 0008_alert_events_by_journey
Create Date: 2026-12-02

The delivery worker looks for groups with pending events (``batch_id IS NULL``) every
tick. ``ix_alert_events_pending`` held every event ever kept, so each tick read all of
them, and then opened one transaction per group even when every group had been notified
within its window. The partial index holds only the pending events (an event leaves it
when it is notified), ordered by group and creation time. Mirrors
``ix_alert_events_unbatched`` of ``AlertEventRow`` in
``collector/ctxledger_collector/storage/alert_tables.py`` (written out, never imported).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_alert_events_unbatched"
down_revision: str | Sequence[str] | None = "0008_alert_events_by_journey"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PENDING = sa.text("batch_id IS NULL")


def upgrade() -> None:
    op.create_index(
        "ix_alert_events_unbatched",
        "alert_events",
        ["rule", "agent", "tool", "created_at"],
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )
    op.drop_index("ix_alert_events_pending", table_name="alert_events")


def downgrade() -> None:
    op.create_index(
        "ix_alert_events_pending", "alert_events", ["rule", "agent", "tool", "batch_id"]
    )
    op.drop_index("ix_alert_events_unbatched", table_name="alert_events")
