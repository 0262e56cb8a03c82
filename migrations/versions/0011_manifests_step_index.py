"""The manifests' step index starts with the conversation.

Revision ID: 0011_manifests_step_index
Revises: 0010_reports_request_key_first
Create Date: 2026-12-02

``ix_manifests_step`` was (run_id, conversation, position). PostgreSQL, estimating it and
the request index (run_id, request_id) alike at one row per key, took the step index for
the ingest's manifest lookups by request and filtered every manifest of the run for each
key (588 a key in a run of 10,000 spans), as it had done with the reports (migration
0010). With the conversation first, the step index still serves the lookups it is for
(equal run and conversation, then position order) and no longer matches a lookup by
request; lookups by run alone take the request index. Mirrors ``ix_manifests_step`` of
``ManifestRow`` in ``collector/ctxledger_collector/storage/tables.py`` (written out, never
imported).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011_manifests_step_index"
down_revision: str | Sequence[str] | None = "0010_reports_request_key_first"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_manifests_step", table_name="manifests")
    op.create_index("ix_manifests_step", "manifests", ["conversation", "run_id", "position"])


def downgrade() -> None:
    op.drop_index("ix_manifests_step", table_name="manifests")
    op.create_index("ix_manifests_step", "manifests", ["run_id", "conversation", "position"])
