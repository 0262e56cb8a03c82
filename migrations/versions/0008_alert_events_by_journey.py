"""An index on the alert events' journey (trace, call, request key), without the rule.

Revision ID: 0008_alert_events_by_journey
Revises: 0007_lost_results
Create Date: 2026-12-02

Every ingest batch looks up the alert events of the journeys it judged, whatever their
rule. The unique index starts with the rule, so that lookup read the whole table on both
databases, once per batch: ingest slowed as the events of a long-lived collector grew.
Mirrors ``ix_alert_events_result`` of ``AlertEventRow`` in
``collector/ctxledger_collector/storage/alert_tables.py`` (written out, never imported).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008_alert_events_by_journey"
down_revision: str | Sequence[str] | None = "0007_lost_results"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_alert_events_result",
        "alert_events",
        ["trace_id", "tool_call_id", "request_key"],
    )


def downgrade() -> None:
    op.drop_index("ix_alert_events_result", table_name="alert_events")
