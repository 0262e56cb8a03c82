"""The SQL the store runs on every export, written once for SQLite and PostgreSQL.

Every statement works on many rows or keys at once, in as few round trips as the
database allows: on SQLite ``executemany`` and ``VALUES`` lists (an in-process call is
cheap); on PostgreSQL one statement per batch whose rows travel as column arrays
(``unnest``), which its planner joins by index whatever the number of keys. Upserts keep
the copy the duplicate rule prefers; the run upsert hands back each trace's integer id.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any

from sqlalchemy import BigInteger, Boolean, Connection, Float, Integer, LargeBinary, Table
from sqlalchemy.exc import DBAPIError

from ctxledger_collector.storage.tables import COPY_KEY

#: PostgreSQL's placeholder for a column array (psycopg's binary parameter).
ARRAY_MARK = "%b"

#: A run's service and agent names: a sighting that names them wins, one that does not
#: keeps the stored ones.
_RUN_NAMES_KEPT = (
    "service_name = coalesce(excluded.service_name, runs.service_name), "
    "agent_name = coalesce(excluded.agent_name, runs.agent_name)"
)

#: Keys per SQLite statement: far below its 32,766 variables.
CHUNK = 500

Row = Sequence[Any]


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _array_type(table: Table, column: str) -> str:
    kind = table.c[column].type
    if isinstance(kind, LargeBinary):
        return "bytea[]"
    if isinstance(kind, Boolean):
        return "bool[]"
    if isinstance(kind, (BigInteger, Integer)):
        return "int8[]"
    if isinstance(kind, Float):
        return "float8[]"
    return "text[]"


def _columns_of(rows: Sequence[Row], width: int) -> list[list[Any]]:
    return [list(column) for column in zip(*rows, strict=True)] if rows else [[]] * width


class Statements:
    """Bulk statements for one connection's dialect."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.postgres = dialect == "postgresql"
        self.mark = "%s" if self.postgres else "?"
        #: A column array's placeholder: psycopg sends it in binary, each element as it
        #: is, instead of writing an array literal and escaping every string in it.
        self.array_mark = ARRAY_MARK
        #: How a query joins its keys to a table: SQLite keeps a CROSS JOIN's left side the
        #: outer loop, so it searches the index once per key instead of scanning the table.
        self.join_keys = "JOIN" if self.postgres else "CROSS JOIN"

    def marks(self, count: int) -> str:
        return ", ".join([self.mark] * count)

    def _unnest(self, table: Table, columns: Sequence[str], alias: str) -> str:
        arrays = ", ".join(f"{self.array_mark}::{_array_type(table, c)}" for c in columns)
        return f"unnest({arrays}) AS {alias}({', '.join(columns)})"

    # --- writing --------------------------------------------------------------------------

    def upsert(
        self,
        connection: Connection,
        table: Table,
        columns: Sequence[str],
        key: Sequence[str],
        rows: Sequence[Row],
        *,
        preferred: bool = False,
    ) -> None:
        """Insert ``rows``; a row whose key is stored replaces it (only when the duplicate
        rule prefers it, with ``preferred``)."""
        if not rows:
            return
        names = ", ".join(columns)
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
        conflict = f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
        if preferred:
            new = ", ".join(f"excluded.{c}" for c in COPY_KEY)
            old = ", ".join(f"{table.name}.{c}" for c in COPY_KEY)
            conflict += f" WHERE ({new}) > ({old})"
        if self.postgres:
            staging = self._copy_to_staging(connection, table, columns, rows)
            sql = f"INSERT INTO {table.name} ({names}) SELECT {names} FROM {staging} {conflict}"
            connection.exec_driver_sql(sql)
        else:  # sqlite3's executemany: one prepared statement, many rows
            sql = f"INSERT INTO {table.name} ({names}) VALUES ({self.marks(len(columns))}) "
            connection.exec_driver_sql(sql + conflict, list(rows))

    def insert_new(
        self,
        connection: Connection,
        table: Table,
        columns: Sequence[str],
        key: Sequence[str],
        rows: Sequence[Row],
    ) -> None:
        """Insert the ``rows`` whose key is not stored yet; stored ones stay as they are."""
        if not rows:
            return
        names = ", ".join(columns)
        conflict = f"ON CONFLICT ({', '.join(key)}) DO NOTHING"
        if self.postgres:
            staging = self._copy_to_staging(connection, table, columns, rows)
            sql = f"INSERT INTO {table.name} ({names}) SELECT {names} FROM {staging} {conflict}"
            connection.exec_driver_sql(sql)
        else:
            sql = f"INSERT INTO {table.name} ({names}) VALUES ({self.marks(len(columns))}) "
            connection.exec_driver_sql(sql + conflict, list(rows))

    def _copy_to_staging(
        self, connection: Connection, table: Table, columns: Sequence[str], rows: Sequence[Row]
    ) -> str:
        """COPY ``rows`` into this transaction's staging table for ``table``: the fastest
        way rows reach PostgreSQL. The table is the session's own and empties at commit."""
        staging = f"staging_{table.name}"
        connection.exec_driver_sql(
            f"CREATE TEMP TABLE IF NOT EXISTS {staging} "
            f"(LIKE {table.name} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
        )
        copy = f"COPY {staging} ({', '.join(columns)}) FROM STDIN"
        driver = connection.connection.driver_connection
        assert driver is not None
        try:
            with driver.cursor() as cursor, cursor.copy(copy) as stream:
                for row in rows:
                    stream.write_row(row)
        except driver.Error as error:  # what SQLAlchemy would raise for a statement
            raise DBAPIError.instance(
                copy, None, error, type(driver).Error, connection_invalidated=driver.closed
            ) from error
        return staging

    def delete_keys(
        self, connection: Connection, table: Table, key: Sequence[str], keys: Sequence[Row]
    ) -> None:
        if not keys:
            return
        if self.postgres:
            matches = " AND ".join(f"{table.name}.{c} = k.{c}" for c in key)
            sql = f"DELETE FROM {table.name} USING {self._unnest(table, key, 'k')} WHERE {matches}"
            connection.exec_driver_sql(sql, tuple(_columns_of(keys, len(key))))
        else:
            where = " AND ".join(f"{c} = ?" for c in key)
            connection.exec_driver_sql(f"DELETE FROM {table.name} WHERE {where}", list(keys))

    def upsert_runs(self, connection: Connection, runs: Sequence[Row]) -> list[Row]:
        """Runs (trace id, service, agent, first and last seen) as ``(id, trace_id)``."""
        if not runs:
            return []
        if self.postgres:
            return self._upsert_runs_postgres(connection, runs)
        update = (
            "ON CONFLICT (trace_id) DO UPDATE SET "
            "first_seen = min(runs.first_seen, excluded.first_seen), "
            "last_seen = max(runs.last_seen, excluded.last_seen), "
            f"{_RUN_NAMES_KEPT} RETURNING id, trace_id"
        )
        found: list[Row] = []
        for chunk in chunks(runs, 1000):
            values = ", ".join(f"({self.marks(5)})" for _ in chunk)
            sql = (
                "INSERT INTO runs (trace_id, service_name, agent_name, first_seen, last_seen) "
                f"VALUES {values} {update}"
            )
            params = tuple(value for run in chunk for value in run)
            found.extend(connection.exec_driver_sql(sql, params).fetchall())
        return found

    def _upsert_runs_postgres(self, connection: Connection, runs: Sequence[Row]) -> list[Row]:
        """Known runs are updated and only new ones inserted, in one statement: an
        ``INSERT ... ON CONFLICT`` takes the next run id for every row it proposes, so a run
        seen in a thousand batches would use up a thousand ids, and the partitions, ranges
        of run ids made ahead of the runs, would fill with burnt ids instead of runs."""
        arrays = ", ".join(
            f"{self.array_mark}::{kind}[]" for kind in ("text", "text", "text", "float8", "float8")
        )
        sql = (
            f"WITH v AS (SELECT * FROM unnest({arrays}) "
            "AS u(trace_id, service_name, agent_name, first_seen, last_seen)), "
            "known AS (UPDATE runs SET first_seen = least(runs.first_seen, v.first_seen), "
            "last_seen = greatest(runs.last_seen, v.last_seen), "
            "service_name = coalesce(v.service_name, runs.service_name), "
            "agent_name = coalesce(v.agent_name, runs.agent_name) "
            "FROM v WHERE runs.trace_id = v.trace_id RETURNING runs.id, runs.trace_id), "
            "new AS (INSERT INTO runs (trace_id, service_name, agent_name, first_seen, last_seen) "
            "SELECT * FROM v WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.trace_id = v.trace_id) "
            "ORDER BY v.trace_id "
            # A run another transaction inserted after this statement's snapshot: ingest
            # holds the trace's advisory lock, but the statement stays right without it.
            "ON CONFLICT (trace_id) DO UPDATE SET "
            "first_seen = least(runs.first_seen, excluded.first_seen), "
            "last_seen = greatest(runs.last_seen, excluded.last_seen), "
            f"{_RUN_NAMES_KEPT} RETURNING id, trace_id) "
            "SELECT id, trace_id FROM known UNION ALL SELECT id, trace_id FROM new"
        )
        columns = tuple(_columns_of(runs, 5))
        return list(connection.exec_driver_sql(sql, columns).fetchall())

    # --- reading --------------------------------------------------------------------------

    def select_keys(
        self,
        connection: Connection,
        table: Table,
        columns: Sequence[str],
        key: Sequence[str],
        keys: Sequence[Row],
        *,
        index: str | None = None,
    ) -> list[Row]:
        """The rows of ``table`` whose ``key`` columns equal one of ``keys``; ``index`` names
        the index that serves them when another one also starts with the first key column
        (SQLite, without statistics, may otherwise walk a whole run's rows)."""
        if not keys:
            return []
        selected = ", ".join(f"t.{c}" for c in columns)
        if self.postgres:
            matches = " AND ".join(f"t.{c} = k.{c}" for c in key)
            sql = (
                f"SELECT {selected} FROM {self._unnest(table, key, 'k')} "
                f"JOIN {table.name} t ON {matches}"
            )
            return list(connection.exec_driver_sql(sql, tuple(_columns_of(keys, len(key)))))
        # A join from the keys searches the index once per key; a row-value IN list would
        # scan the whole table.
        matches = " AND ".join(f"t.{c} = k.{c}" for c in key)
        found: list[Row] = []
        for chunk in chunks(keys):
            values = ", ".join(f"({self.marks(len(key))})" for _ in chunk)
            sql = (
                f"WITH k({', '.join(key)}) AS (VALUES {values}) "
                f"SELECT {selected} FROM k {self.join_keys} {table.name} t "
                + (f"INDEXED BY {index} " if index else "")
                + f"ON {matches}"
            )
            found.extend(connection.exec_driver_sql(sql, tuple(v for k in chunk for v in k)))
        return found

    def per_key(
        self,
        connection: Connection,
        names: Sequence[str],
        keys: Sequence[Row],
        query: str,
        text_columns: Collection[str] = (),
    ) -> list[Row]:
        """``query`` over ``v(<names>)``, a relation holding ``keys`` (integers, but for
        the ``text_columns``)."""
        if not keys:
            return []
        if self.postgres:
            arrays = ", ".join(
                f"{self.array_mark}::{'text' if name in text_columns else 'int8'}[]"
                for name in names
            )
            sql = f"WITH v AS (SELECT * FROM unnest({arrays}) AS u({', '.join(names)})) {query}"
            return list(connection.exec_driver_sql(sql, tuple(_columns_of(keys, len(names)))))
        found: list[Row] = []
        for chunk in chunks(keys):
            values = ", ".join(f"({self.marks(len(names))})" for _ in chunk)
            sql = f"WITH v({', '.join(names)}) AS (VALUES {values}) {query}"
            found.extend(connection.exec_driver_sql(sql, tuple(v for k in chunk for v in k)))
        return found
