"""Reports say when their lost tokens are unknown; the counters count such journeys.

Revision ID: 0012_lost_tokens_unknown
Revises: 0011_manifests_step_index
Create Date: 2026-12-03

A journey whose stages counted tokens with different encodings (a tool span counted with
``cl100k_base``, the request that carried its result with ``o200k_base``) cannot say how
many tokens it lost: ``reports.lost_tokens_unknown`` holds why (NULL: known), and
``journey_counts.tokens_unknown`` / ``result_tokens_unknown`` count such journeys and lost
results, so the totals say how much of them is unknown instead of adding 0. Existing
reports are known (NULL) and counted 0. Mirrors ``ReportRow`` and ``JourneyCountRow`` in
``collector/ctxledger_collector/storage/tables.py`` (written out, never imported).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_lost_tokens_unknown"
down_revision: str | Sequence[str] | None = "0011_manifests_step_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COUNTERS = ("tokens_unknown", "result_tokens_unknown")


def upgrade() -> None:
    op.add_column("reports", sa.Column("lost_tokens_unknown", sa.Text(), nullable=True))
    for name in _COUNTERS:
        op.add_column(
            "journey_counts",
            sa.Column(name, sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        )


def downgrade() -> None:
    with op.batch_alter_table("journey_counts") as batch:
        for name in _COUNTERS:
            batch.drop_column(name)
    with op.batch_alter_table("reports") as batch:
        batch.drop_column("lost_tokens_unknown")
