"""Alert events say when their journey's lost tokens are unknown.

Revision ID: 0014_alert_events_tokens_unknown
Revises: 0013_rejections_replayed
Create Date: 2026-12-06

A journey whose stages counted tokens with different encodings cannot say how many tokens
it lost (``reports.lost_tokens_unknown``); its alert event then holds ``lost_tokens`` 0,
which a notification must not sum as if known. ``alert_events.tokens_unknown`` marks such
events (existing rows: known). Mirrors ``AlertEventRow`` in
``collector/ctxledger_collector/storage/alert_tables.py`` (written out, never imported).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_alert_events_tokens_unknown"
down_revision: str | Sequence[str] | None = "0013_rejections_replayed"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "alert_events",
        sa.Column("tokens_unknown", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    with op.batch_alter_table("alert_events") as batch:
        batch.drop_column("tokens_unknown")
