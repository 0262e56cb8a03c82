"""Indexes for the query API at scale and pre-aggregated journey counters.

Revision ID: 0004_query_indexes_and_counters
Revises: 0003_compact_storage
Create Date: 2026-12-08

Mirrors ``collector/ctxledger_collector/storage/tables.py`` as of this revision (written out,
never imported):

* ``reports``: a time index, the verdict, tool and agent time indexes extended by the
  row id (the reports list pages by cursor on each of them), and a partial index of the
  reports that are not intact by tool and time.
* ``runs``: ``(last_seen, id)`` for the runs list and its cursor (replacing the index
  on ``last_seen``), and an index on ``service_name`` (the agent filter matches it).
* ``journey_counts``: journeys, lost items and lost tokens by (grain, bucket, agent,
  tool, verdict) at grains of a minute, an hour and a day; ``run_journey_counts``:
  journeys by (run, agent, verdict). Both are filled here from the stored reports;
  from then on ingest keeps them exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_query_indexes_and_counters"
down_revision: str | Sequence[str] | None = "0003_compact_storage"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_GRAINS = (60, 3600, 86400)
_TIE = ["id"]
_LOSSY = "verdict <> 'intact'"
_TIME_INDEXES = {
    "ix_reports_verdict_time": "verdict",
    "ix_reports_tool_time": "tool_name",
    "ix_reports_agent_time": "agent_name",
}


def _bucket(grain: int) -> str:
    """The start of the bucket holding ``t`` (bucket <= t < bucket + grain), exact for
    floats: the cast rounds (PostgreSQL) or truncates (SQLite), the CASE corrects it."""
    return f"CASE WHEN b > t THEN b - {grain} WHEN b + {grain} <= t THEN b + {grain} ELSE b END"


def _backfill() -> None:
    for grain in _GRAINS:
        op.execute(
            "INSERT INTO journey_counts (grain, bucket, agent_name, tool_name, verdict, "
            "journeys, lost_items, lost_tokens) "
            f"SELECT {grain}, {_bucket(grain)} AS bucket, agent, tool, verdict, "
            "count(*), sum(lost_items), sum(lost_tokens) "
            f"FROM (SELECT last_observed_at AS t, CAST(last_observed_at / {grain} AS BIGINT) "
            f"* {grain} AS b, coalesce(agent_name, '') AS agent, "
            "coalesce(tool_name, '') AS tool, verdict, lost_items, lost_tokens "
            "FROM reports) AS r "
            f"GROUP BY {_bucket(grain)}, agent, tool, verdict"
        )
    op.execute(
        "INSERT INTO run_journey_counts (run_id, agent_name, verdict, journeys) "
        "SELECT run_id, coalesce(agent_name, ''), verdict, count(*) FROM reports "
        "GROUP BY run_id, coalesce(agent_name, ''), verdict"
    )


def upgrade() -> None:
    rowid = {"sqlite_with_rowid": False}
    op.create_table(
        "journey_counts",
        sa.Column("grain", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("agent_name", sa.String(length=256), nullable=False),
        sa.Column("tool_name", sa.String(length=256), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("journeys", sa.BigInteger(), nullable=False),
        sa.Column("lost_items", sa.BigInteger(), nullable=False),
        sa.Column("lost_tokens", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("grain", "bucket", "agent_name", "tool_name", "verdict"),
        **rowid,
    )
    op.create_table(
        "run_journey_counts",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("agent_name", sa.String(length=256), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("journeys", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "agent_name", "verdict"),
        **rowid,
    )
    _backfill()

    op.drop_index("ix_runs_last_seen", table_name="runs")
    op.create_index("ix_runs_recent", "runs", ["last_seen", "id"], unique=False)
    op.create_index("ix_runs_service_name", "runs", ["service_name"], unique=False)

    op.create_index("ix_reports_time", "reports", ["last_observed_at", *_TIE], unique=False)
    for name, column in _TIME_INDEXES.items():
        op.drop_index(name, table_name="reports")
        op.create_index(name, "reports", [column, "last_observed_at", *_TIE], unique=False)
    op.create_index(
        "ix_reports_losses",
        "reports",
        ["tool_name", "last_observed_at"],
        unique=False,
        sqlite_where=sa.text(_LOSSY),
        postgresql_where=sa.text(_LOSSY),
    )


def downgrade() -> None:
    op.drop_index("ix_reports_losses", table_name="reports")
    for name, column in _TIME_INDEXES.items():
        op.drop_index(name, table_name="reports")
        op.create_index(name, "reports", [column, "last_observed_at"], unique=False)
    op.drop_index("ix_reports_time", table_name="reports")

    op.drop_index("ix_runs_service_name", table_name="runs")
    op.drop_index("ix_runs_recent", table_name="runs")
    op.create_index("ix_runs_last_seen", "runs", ["last_seen"], unique=False)

    op.drop_table("run_journey_counts")
    op.drop_table("journey_counts")
