"""PostgreSQL's partitions of measurements and reports (migration 0005): ranges of run
ids, created ahead of the runs by the collector and dropped by retention: whole once
every run in them expired (:mod:`.partition_retention`), or once emptied row by row.

Run ids are handed out in the order runs are first seen, so each partition holds the
runs of one stretch of time. :func:`ensure_ahead` keeps at least ``ahead`` empty
partitions of ``width`` run ids above the highest id handed out, so an insert never
finds no partition; it runs at start-up, after ``ctxledger db upgrade`` and at every
sweep, under a transaction-level advisory lock so replicas never create the same one.
A partition is named ``<table>_r<first run id>``. Runs that outpace the partitions made
ahead (more than ``ahead * width`` new runs between two sweeps) land in the default
partition ``<table>_overflow`` instead of failing; the next ranges start above them, and
retention deletes them row by row.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import OperationalError

PARTITIONED = ("measurements", "reports")
#: Their primary keys on PostgreSQL, which must hold the partition key: the tables'
#: own, with ``run_id`` added where it is missing.
PARTITIONED_PRIMARY_KEYS = {
    "measurements": ("run_id", "tool_call_id", "request_key", "stage"),
    "reports": ("id", "run_id"),
}
_PARTITION_NAME = re.compile(rf"^({'|'.join(PARTITIONED)})_(r\d+|overflow)$")


def is_partition_name(name: str) -> bool:
    """Whether ``name`` is one of the partitions (not a table of the schema itself)."""
    return _PARTITION_NAME.match(name) is not None


#: The advisory lock key partition maintenance takes (ingest locks hash trace ids).
_MAINTENANCE_LOCK = 0x6374786C_70617274  # "ctxlpart"
#: PostgreSQL's SQLSTATE for a lock that NOWAIT or ``lock_timeout`` could not take.
LOCK_NOT_AVAILABLE = "55P03"
#: How long detaching waits for the parents' locks (ingest queues behind the request
#: meanwhile); well under the default ``deadlock_timeout`` of 1 s, so in a lock cycle
#: with ingest retention gives up before the deadlock check could cancel the ingest.
LOCK_WAIT_MS = 200
#: Tries to create partitions ahead while the parents are busy, and the pause between.
_CREATE_TRIES = 3
_CREATE_PAUSE_S = 0.1
_BOUND = re.compile(r"FROM \((MINVALUE|-?\d+)\) TO \((MAXVALUE|-?\d+)\)")


@dataclass(frozen=True)
class Partition:
    table: str
    name: str
    low: int | None  # None: MINVALUE
    high: int


def partitions(connection: Connection, table: str) -> list[Partition]:
    """``table``'s partitions, lowest first."""
    rows = connection.exec_driver_sql(
        "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
        "JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent "
        "WHERE p.relname = %s",
        (table,),
    )
    found = []
    for name, bound in rows:
        match = _BOUND.search(bound)
        if match is None:
            continue
        low = None if match.group(1) == "MINVALUE" else int(match.group(1))
        found.append(Partition(table, name, low, int(match.group(2))))
    return sorted(found, key=lambda p: p.high)


def is_partitioned(connection: Connection) -> bool:
    if connection.dialect.name != "postgresql":
        return False
    kind = connection.exec_driver_sql(
        "SELECT relkind FROM pg_class WHERE relname = 'measurements'"
    ).scalar()
    return bool(kind == "p")


def highest_run_id(connection: Connection) -> int:
    """The highest run id handed out (the sequence, which is ahead of any stored row)."""
    value = connection.exec_driver_sql(
        "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM runs_id_seq"
    ).scalar()
    return int(value or 0)


def ensure_ahead(engine: Engine, width: int, ahead: int = 2) -> list[str]:
    """Create partitions until ``ahead`` whole ones lie above the highest run id;
    returns the names created. While other transactions hold the parents for longer
    than :data:`LOCK_WAIT_MS` on every try, nothing: the default partition takes the
    new runs meanwhile, and the next sweep tries again."""
    if engine.dialect.name != "postgresql":
        return []
    with engine.connect() as connection:
        if not is_partitioned(connection) or not _missing(connection, width, ahead):
            return []
    for attempt in range(_CREATE_TRIES):
        try:
            with engine.begin() as connection:
                return _create_ahead(connection, width, ahead)
        except OperationalError as error:
            if getattr(error.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                raise
            if attempt < _CREATE_TRIES - 1:
                time.sleep(_CREATE_PAUSE_S)
    return []


def _tops(connection: Connection, width: int, ahead: int) -> tuple[int, dict[str, int]]:
    """The run id partitions must reach, and where each table's partitions end now."""
    target = highest_run_id(connection) + 1 + ahead * width
    overflowed = max(
        int(
            connection.exec_driver_sql(
                f"SELECT coalesce(max(run_id), 0) + 1 FROM {table}_overflow"
            ).scalar_one()
        )
        for table in PARTITIONED
    )
    tops = {}
    for table in PARTITIONED:
        existing = partitions(connection, table)
        tops[table] = max(existing[-1].high if existing else 0, overflowed)
    return target, tops


def _missing(connection: Connection, width: int, ahead: int) -> bool:
    target, tops = _tops(connection, width, ahead)
    return any(top < target for top in tops.values())


def _create_ahead(connection: Connection, width: int, ahead: int) -> list[str]:
    # CREATE TABLE ... PARTITION OF takes ACCESS EXCLUSIVE on the parent: the parents
    # are locked first, in the one order, with a bounded wait, so that in a lock cycle
    # with ingest or retention this is the transaction that gives up (not a deadlock).
    lock_parents(connection)
    target, tops = _tops(connection, width, ahead)
    created: list[str] = []
    for table in PARTITIONED:
        top = tops[table]
        while top < target:
            name = f"{table}_r{top}"
            connection.exec_driver_sql(
                f"CREATE TABLE {name} PARTITION OF {table} "
                f"FOR VALUES FROM ({top}) TO ({top + width})"
            )
            created.append(name)
            top += width
    return created


def lock_parents(connection: Connection) -> None:
    """Take what detaching a partition needs, for the transaction, in the order every
    partition change takes it: the maintenance advisory lock, then ``ACCESS EXCLUSIVE``
    on the parents, measurements first, each wait bounded by :data:`LOCK_WAIT_MS`.
    Raises OperationalError (:data:`LOCK_NOT_AVAILABLE`) past the wait."""
    connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_WAIT_MS}ms'")
    connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MAINTENANCE_LOCK})
    parents = ", ".join(f"ONLY {table}" for table in PARTITIONED)
    connection.exec_driver_sql(f"LOCK TABLE {parents} IN ACCESS EXCLUSIVE MODE")


def drop_empty_partitions(engine: Engine) -> list[str]:
    """Drop the partitions wholly below every stored run (retention emptied them row by
    row) and below the highest run id handed out; returns their names. While others
    hold the parents' locks, nothing (the next sweep tries again)."""
    if engine.dialect.name != "postgresql":
        return []
    try:
        with engine.begin() as connection:
            return _drop_empty(connection)
    except OperationalError as error:
        if getattr(error.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
            raise
        return []


def _drop_empty(connection: Connection) -> list[str]:
    dropped: list[str] = []
    if not is_partitioned(connection):
        return dropped
    lock_parents(connection)
    lowest = connection.exec_driver_sql("SELECT min(id) FROM runs").scalar()
    floor = highest_run_id(connection) + 1 if lowest is None else int(lowest)
    for table in PARTITIONED:
        for partition in partitions(connection, table):
            if partition.high <= floor:
                connection.exec_driver_sql(f"ALTER TABLE {table} DETACH PARTITION {partition.name}")
                connection.exec_driver_sql(f"DROP TABLE {partition.name}")
                dropped.append(partition.name)
    return dropped
