"""The reports' request index starts with the request key.

Revision ID: 0010_reports_request_key_first
Revises: 0009_alert_events_unbatched
Create Date: 2026-12-02

``ix_reports_request`` was (run_id, request_key). The ingest looks up a run's reports by
call id, which the journey index (run_id, tool_call_id, request_key) serves; PostgreSQL,
estimating both as one row per key, chose the smaller request index and filtered every
report of the run for each key (2,400-4,200 reports a key in a run of 10,000 spans, the
largest statement of a long run's ingest). With the request key first, the index serves
only the lookups by request it is for. Mirrors ``ix_reports_request`` of ``ReportRow``
in ``collector/ctxledger_collector/storage/tables.py`` (written out, never imported); on
PostgreSQL the index of the partitioned table is made on every partition.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0010_reports_request_key_first"
down_revision: str | Sequence[str] | None = "0009_alert_events_unbatched"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_reports_request", table_name="reports")
    op.create_index("ix_reports_request", "reports", ["request_key", "run_id"])


def downgrade() -> None:
    op.drop_index("ix_reports_request", table_name="reports")
    op.create_index("ix_reports_request", "reports", ["run_id", "request_key"])
