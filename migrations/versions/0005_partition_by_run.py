"""PostgreSQL: measurements and reports partitioned by run id (native declarative
range partitioning), so old runs go by dropping partitions rather than by deleting rows.

Revision ID: 0005_partition_by_run
Revises: 0004_query_indexes_and_counters
Create Date: 2026-12-09

Run ids are handed out in the order runs are first seen, so a range of run ids is a
period of time. A time column cannot be the partition key: PostgreSQL requires it in
every primary key and unique constraint, and the upserts conflict on the natural keys
(``(run_id, tool_call_id, request_key, stage)`` and ``(run_id, tool_call_id,
request_key)``), which hold ``run_id`` but no time (a journey's last observation moves
as its stages arrive). The reports' primary key becomes ``(id, run_id)``.

The existing rows go to one partition ``*_r0`` (up to the highest run id + 1); a
default partition ``*_overflow`` takes runs no partition was made for in time. The
partitions of the next runs are created ahead by ``ctxledger db upgrade`` and the
collector (``ctxledger_collector.storage.partitions``), which drops the ones retention empties.
SQLite is not changed. The downgrade copies the rows back into plain tables.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005_partition_by_run"
down_revision: str | Sequence[str] | None = "0004_query_indexes_and_counters"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEYS = {
    "measurements": "run_id, tool_call_id, request_key, stage",
    "reports": "id, run_id",
}
_REPORT_INDEXES = {
    "ix_reports_journey": "UNIQUE INDEX ix_reports_journey ON reports "
    "(run_id, tool_call_id, request_key)",
    "ix_reports_request": "INDEX ix_reports_request ON reports (run_id, request_key)",
    "ix_reports_time": "INDEX ix_reports_time ON reports (last_observed_at, id)",
    "ix_reports_verdict_time": "INDEX ix_reports_verdict_time ON reports "
    "(verdict, last_observed_at, id)",
    "ix_reports_tool_time": "INDEX ix_reports_tool_time ON reports "
    "(tool_name, last_observed_at, id)",
    "ix_reports_agent_time": "INDEX ix_reports_agent_time ON reports "
    "(agent_name, last_observed_at, id)",
    "ix_reports_unsettled": "INDEX ix_reports_unsettled ON reports (last_observed_at) "
    "WHERE NOT settled",
    "ix_reports_losses": "INDEX ix_reports_losses ON reports (tool_name, last_observed_at) "
    "WHERE verdict <> 'intact'",
}


def _is_postgres() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def _move(table: str, partitioned: bool) -> None:
    """Rebuild ``table`` as a partitioned (or plain) table holding the same rows."""
    old = f"{table}_old"
    op.execute(f"ALTER TABLE {table} RENAME TO {old}")
    op.execute(f"ALTER TABLE {old} DROP CONSTRAINT {table}_pkey")
    if table == "reports":
        op.execute("ALTER SEQUENCE reports_id_seq OWNED BY NONE")
        for name in _REPORT_INDEXES:
            op.execute(f"DROP INDEX {name}")
    clause = " PARTITION BY RANGE (run_id)" if partitioned else ""
    op.execute(f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS){clause}")
    key = _KEYS[table] if partitioned else _KEYS[table].replace(", run_id", "")
    op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY ({key})")
    if table == "reports":
        for statement in _REPORT_INDEXES.values():
            op.execute(f"CREATE {statement}")
    if partitioned:
        top = int(
            op.get_bind().exec_driver_sql("SELECT coalesce(max(id), 0) + 1 FROM runs").scalar_one()
        )
        op.execute(
            f"CREATE TABLE {table}_r0 PARTITION OF {table} FOR VALUES FROM (MINVALUE) TO ({top})"
        )
        # Runs beyond the partitions made ahead land here rather than fail.
        op.execute(f"CREATE TABLE {table}_overflow PARTITION OF {table} DEFAULT")
    op.execute(f"INSERT INTO {table} SELECT * FROM {old}")
    op.execute(f"DROP TABLE {old}")
    if table == "reports":
        op.execute("ALTER SEQUENCE reports_id_seq OWNED BY reports.id")


def _partitions(table: str) -> list[str]:
    rows = op.get_bind().exec_driver_sql(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = %s",
        (table,),
    )
    return [row[0] for row in rows]


def upgrade() -> None:
    if not _is_postgres():
        return
    for table in _KEYS:
        _move(table, partitioned=True)


def downgrade() -> None:
    if not _is_postgres():
        return
    for table in _KEYS:
        partitions = _partitions(table)
        _move(table, partitioned=False)
        for partition in partitions:
            op.execute(f"DROP TABLE IF EXISTS {partition}")
