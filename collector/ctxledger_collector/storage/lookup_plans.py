"""How PostgreSQL plans a writer's key lookups.

Ingest and the sweep look rows up by key sets (``unnest`` of a batch's keys joined to a
table on its primary key or another index). PostgreSQL's cost model, tuned for pages
read from disk, prefers reading a small or medium table whole to probing its index once
per key: a fresh ``measurements`` partition of 19,000 rows was hash-joined against a
batch's 160 keys (5.7 ms against 0.5 ms by index; the reports lookup merge-joined, 24 ms
against 0.8 ms), and each batch's cost grew with the partition, with or without
statistics, until it was large enough for the planner to change its mind. The writers'
tables are in memory and their batches small, so their transactions join by nested loop
over an index, as SQLite's lookups name their index (``INDEXED BY``). Only the
writer's transaction is affected (``SET LOCAL``); the dashboard's queries are planned as
usual.
"""

from __future__ import annotations

from sqlalchemy import Connection

_NESTED_LOOPS_ONLY = (
    "SELECT set_config('enable_hashjoin', 'off', true), "
    "set_config('enable_mergejoin', 'off', true), "
    "set_config('enable_seqscan', 'off', true), "
    "set_config('jit', 'off', true)"
)


def plan_lookups_by_index(connection: Connection) -> None:
    """For the rest of this transaction, join by nested loop (over an index where one
    serves the join). PostgreSQL only; nothing on SQLite."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(_NESTED_LOOPS_ONLY)
