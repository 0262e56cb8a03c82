"""Manifests name the compaction their request follows.

Revision ID: 0017_manifests_compaction
Revises: 0016_log_records
Create Date: 2026-12-06

A runtime that summarizes a conversation (Claude Code's compaction, an instrumentation
setting ``gen_ai.conversation.compacted``) declares it in the first request after it; the
collector judges each result the summary replaced as declared there. Mirrors
``ManifestRow.compaction`` in ``collector/ctxledger_collector/storage/tables.py``
(written out, never imported).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_manifests_compaction"
down_revision: str | Sequence[str] | None = "0016_log_records"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("manifests", sa.Column("compaction", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("manifests") as batch:
        batch.drop_column("compaction")
