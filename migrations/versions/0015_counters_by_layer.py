"""The journey counters by layer: the Incidents page, the timeline, the breakdowns and the
runs list can select where the losses sit (the model server, the request, ...).

Revision ID: 0015_counters_by_layer
Revises: 0014_alert_events_tokens_unknown
Create Date: 2026-12-06

``journey_counts`` and ``run_journey_counts`` gain ``layer`` in their primary key: the
report's layer sentence as ``reports.layer`` holds it, ``''`` for none. A key column
cannot be added in place on SQLite, so both tables are made again and counted from the
reports (one grouped pass per grain), as 0004 first did; ingest keeps them exact from
then on. Mirrors ``JourneyCountRow`` and ``RunJourneyCountRow`` in
``collector/ctxledger_collector/storage/counter_tables.py`` (written out, never imported).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_counters_by_layer"
down_revision: str | Sequence[str] | None = "0014_alert_events_tokens_unknown"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_GRAINS = (60, 3600, 86400)
_SUMS = (
    "journeys",
    "lost_items",
    "lost_tokens",
    "lost_results",
    "result_lost_items",
    "result_lost_tokens",
    "tokens_unknown",
    "result_tokens_unknown",
)
_FIRST = "first_lost = true"
_UNKNOWN = "lost_tokens_unknown IS NOT NULL"


def _bucket(grain: int) -> str:
    """The start of the bucket holding ``t``, exact for floats (as in 0004)."""
    return f"CASE WHEN b > t THEN b - {grain} WHEN b + {grain} <= t THEN b + {grain} ELSE b END"


def _counted(by_layer: bool) -> tuple[str, ...]:
    return ("agent", "tool", "verdict", "layer") if by_layer else ("agent", "tool", "verdict")


def _layer(by_layer: bool) -> list[sa.Column[str]]:
    return [sa.Column("layer", sa.Text(), nullable=False)] if by_layer else []


def _sum_column(name: str) -> sa.Column[int]:
    """A sum column as its revision made it: the first three with the table (0004), the
    others added later with existing rows at 0 (0007, 0012)."""
    if name in ("journeys", "lost_items", "lost_tokens"):
        return sa.Column(name, sa.BigInteger(), nullable=False)
    return sa.Column(name, sa.BigInteger(), nullable=False, server_default=sa.text("0"))


def _create(by_layer: bool) -> None:
    rowid = {"sqlite_with_rowid": False}
    key = ("layer",) if by_layer else ()
    op.create_table(
        "journey_counts",
        sa.Column("grain", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("agent_name", sa.String(length=256), nullable=False),
        sa.Column("tool_name", sa.String(length=256), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        *_layer(by_layer),
        *(_sum_column(name) for name in _SUMS),
        sa.PrimaryKeyConstraint("grain", "bucket", "agent_name", "tool_name", "verdict", *key),
        **rowid,
    )
    op.create_table(
        "run_journey_counts",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("agent_name", sa.String(length=256), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        *_layer(by_layer),
        sa.Column("journeys", sa.Integer(), nullable=False),
        sa.Column("lost_results", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.PrimaryKeyConstraint("run_id", "agent_name", "verdict", *key),
        **rowid,
    )


def _fill(by_layer: bool) -> None:
    names = _counted(by_layer)
    sums = (
        "count(*)",
        "sum(lost_items)",
        "sum(lost_tokens)",
        f"sum(CASE WHEN {_FIRST} THEN 1 ELSE 0 END)",
        f"sum(CASE WHEN {_FIRST} THEN lost_items ELSE 0 END)",
        f"sum(CASE WHEN {_FIRST} THEN lost_tokens ELSE 0 END)",
        f"sum(CASE WHEN {_UNKNOWN} THEN 1 ELSE 0 END)",
        f"sum(CASE WHEN {_FIRST} AND {_UNKNOWN} THEN 1 ELSE 0 END)",
    )
    columns = ["agent_name", "tool_name", "verdict", *(["layer"] if by_layer else []), *_SUMS]
    for grain in _GRAINS:
        op.execute(
            f"INSERT INTO journey_counts (grain, bucket, {', '.join(columns)}) "
            f"SELECT {grain}, {_bucket(grain)} AS bucket, {', '.join(names)}, "
            f"{', '.join(sums)} "
            f"FROM (SELECT last_observed_at AS t, CAST(last_observed_at / {grain} AS BIGINT) "
            f"* {grain} AS b, coalesce(agent_name, '') AS agent, "
            "coalesce(tool_name, '') AS tool, verdict, coalesce(layer, '') AS layer, "
            "lost_items, lost_tokens, first_lost, lost_tokens_unknown FROM reports) AS r "
            f"GROUP BY {_bucket(grain)}, {', '.join(names)}"
        )
    run_names = ("agent", "verdict", "layer") if by_layer else ("agent", "verdict")
    run_columns = ["agent_name", "verdict", *(["layer"] if by_layer else [])]
    op.execute(
        f"INSERT INTO run_journey_counts (run_id, {', '.join(run_columns)}, journeys, "
        f"lost_results) SELECT run_id, {', '.join(run_names)}, count(*), "
        f"sum(CASE WHEN {_FIRST} THEN 1 ELSE 0 END) "
        "FROM (SELECT run_id, coalesce(agent_name, '') AS agent, verdict, "
        "coalesce(layer, '') AS layer, first_lost FROM reports) AS r "
        f"GROUP BY run_id, {', '.join(run_names)}"
    )


def _remake(by_layer: bool) -> None:
    op.drop_table("run_journey_counts")
    op.drop_table("journey_counts")
    _create(by_layer)
    _fill(by_layer)


def upgrade() -> None:
    _remake(by_layer=True)


def downgrade() -> None:
    _remake(by_layer=False)
