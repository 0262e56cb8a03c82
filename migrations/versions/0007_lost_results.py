"""Lost results counted once: the first lost journey of each result, and its counters.

Revision ID: 0007_lost_results
Revises: 0006_rejections
Create Date: 2026-12-01

Mirrors ``collector/ctxledger_collector/storage/tables.py`` as of this revision (written out,
never imported):

* ``reports.first_lost``: the journey of its result (run, tool call) where the result was
  first lost: a losing verdict (silent, dropped, orphaned), before every other losing
  journey of the call by step (journeys without a step last), ties by request id; with a
  partial index by (run, tool call).
* ``journey_counts``: ``lost_results``, ``result_lost_items``, ``result_lost_tokens``;
  ``run_journey_counts``: ``lost_results`` (the first lost journeys among the counted).

Existing reports are flagged and the new counters filled here; from then on ingest keeps
them exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_lost_results"
down_revision: str | Sequence[str] | None = "0006_rejections"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_GRAINS = (60, 3600, 86400)
_LOSING = "('silent', 'dropped', 'orphaned')"
_FIRST_LOST = "first_lost = true"


def _bucket(grain: int) -> str:
    """The start of the bucket holding ``t``, exact for floats (as in 0004)."""
    return f"CASE WHEN b > t THEN b - {grain} WHEN b + {grain} <= t THEN b + {grain} ELSE b END"


def _flag_first_losses() -> None:
    op.execute(
        "UPDATE reports SET first_lost = true WHERE id IN (SELECT id FROM (SELECT id, "
        "row_number() OVER (PARTITION BY run_id, tool_call_id ORDER BY "
        "CASE WHEN step IS NULL THEN 1 ELSE 0 END, coalesce(step, 0), request_key) AS n "
        f"FROM reports WHERE verdict IN {_LOSING}) AS ranked WHERE n = 1)"
    )


def _fill_counters() -> None:
    for grain in _GRAINS:
        op.execute(
            "UPDATE journey_counts SET lost_results = r.results, "
            "result_lost_items = r.items, result_lost_tokens = r.tokens FROM ("
            f"SELECT {_bucket(grain)} AS bucket, agent, tool, verdict, count(*) AS results, "
            "sum(lost_items) AS items, sum(lost_tokens) AS tokens "
            f"FROM (SELECT last_observed_at AS t, CAST(last_observed_at / {grain} AS BIGINT) "
            f"* {grain} AS b, coalesce(agent_name, '') AS agent, "
            "coalesce(tool_name, '') AS tool, verdict, lost_items, lost_tokens "
            f"FROM reports WHERE {_FIRST_LOST}) AS f "
            f"GROUP BY {_bucket(grain)}, agent, tool, verdict) AS r "
            f"WHERE journey_counts.grain = {grain} AND journey_counts.bucket = r.bucket "
            "AND journey_counts.agent_name = r.agent AND journey_counts.tool_name = r.tool "
            "AND journey_counts.verdict = r.verdict"
        )
    op.execute(
        "UPDATE run_journey_counts SET lost_results = r.results FROM ("
        "SELECT run_id, coalesce(agent_name, '') AS agent, verdict, count(*) AS results "
        f"FROM reports WHERE {_FIRST_LOST} GROUP BY run_id, coalesce(agent_name, ''), verdict"
        ") AS r WHERE run_journey_counts.run_id = r.run_id "
        "AND run_journey_counts.agent_name = r.agent AND run_journey_counts.verdict = r.verdict"
    )


def upgrade() -> None:
    op.add_column(
        "reports",
        sa.Column("first_lost", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    for name in ("lost_results", "result_lost_items", "result_lost_tokens"):
        op.add_column(
            "journey_counts",
            sa.Column(name, sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        )
    op.add_column(
        "run_journey_counts",
        sa.Column("lost_results", sa.Integer(), nullable=False, server_default=sa.text("0")),
    )
    _flag_first_losses()
    op.create_index(
        "ix_reports_first_lost",
        "reports",
        ["run_id", "tool_call_id"],
        unique=False,
        sqlite_where=sa.text(_FIRST_LOST),
        postgresql_where=sa.text(_FIRST_LOST),
    )
    _fill_counters()


def downgrade() -> None:
    op.drop_index("ix_reports_first_lost", table_name="reports")
    with op.batch_alter_table("run_journey_counts") as batch:
        batch.drop_column("lost_results")
    with op.batch_alter_table("journey_counts") as batch:
        for name in ("lost_results", "result_lost_items", "result_lost_tokens"):
            batch.drop_column(name)
    with op.batch_alter_table("reports") as batch:
        batch.drop_column("first_lost")
