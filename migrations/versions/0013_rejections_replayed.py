"""Rejections say whether the span was refused while a spooled export was replayed.

Revision ID: 0013_rejections_replayed
Revises: 0012_lost_tokens_unknown
Create Date: 2026-12-03

An export acknowledged during an outage is kept in the ingest spool and stored once the
database is back; a span the database refuses then was never reported to the client.
``rejections.replayed`` marks such rows (existing rows: refused at live ingest, false).
Mirrors ``RejectionRow`` in ``collector/ctxledger_collector/storage/rejection_table.py``
(written out, never imported).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_rejections_replayed"
down_revision: str | Sequence[str] | None = "0012_lost_tokens_unknown"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "rejections",
        sa.Column("replayed", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    with op.batch_alter_table("rejections") as batch:
        batch.drop_column("replayed")
