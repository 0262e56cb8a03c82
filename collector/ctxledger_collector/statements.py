"""The SQL the store runs on every export, written once for SQLite and PostgreSQL.

Plain statements for the driver's ``executemany`` (one round trip per table per batch,
no per-row compilation): upserts that keep the copy the duplicate rule prefers, the
run upsert that hands back each trace's integer id, and lookups by many keys at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ctxledger_collector.rows import COPY_KEY

#: Keys per lookup statement: far below SQLite's 32,766 variables and PostgreSQL's 65,535.
CHUNK = 500


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass(frozen=True)
class Statements:
    """SQL text for one dialect (``sqlite`` or ``postgresql``)."""

    dialect: str

    @property
    def mark(self) -> str:
        """The driver's parameter marker: sqlite3 is qmark, psycopg is format."""
        return "?" if self.dialect == "sqlite" else "%s"

    def marks(self, count: int) -> str:
        return ", ".join([self.mark] * count)

    def _insert(self, table: str, columns: Sequence[str]) -> str:
        return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({self.marks(len(columns))})"

    def upsert(
        self, table: str, columns: Sequence[str], key: Sequence[str], *, preferred: bool = False
    ) -> str:
        """Insert rows; a row whose key is stored replaces it (only when the duplicate rule
        prefers it, with ``preferred``)."""
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
        sql = (
            f"{self._insert(table, columns)} ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
        )
        if preferred:
            new = ", ".join(f"excluded.{c}" for c in COPY_KEY)
            old = ", ".join(f"{table}.{c}" for c in COPY_KEY)
            sql += f" WHERE ({new}) > ({old})"
        return sql

    def upsert_runs(self, count: int) -> str:
        """``count`` runs in one statement, answering ``(id, trace_id)`` for each."""
        lowest, highest = ("min", "max") if self.dialect == "sqlite" else ("least", "greatest")
        values = ", ".join(f"({self.marks(5)})" for _ in range(count))
        return (
            "INSERT INTO runs (trace_id, service_name, agent_name, first_seen, last_seen) "
            f"VALUES {values} ON CONFLICT (trace_id) DO UPDATE SET "
            f"first_seen = {lowest}(runs.first_seen, excluded.first_seen), "
            f"last_seen = {highest}(runs.last_seen, excluded.last_seen), "
            "service_name = coalesce(excluded.service_name, runs.service_name), "
            "agent_name = coalesce(excluded.agent_name, runs.agent_name) "
            "RETURNING id, trace_id"
        )

    def select_by_keys(
        self, table: str, columns: Sequence[str], key: Sequence[str], count: int
    ) -> str:
        """The rows of ``count`` keys (tuples of the ``key`` columns)."""
        values = ", ".join(f"({self.marks(len(key))})" for _ in range(count))
        return (
            f"SELECT {', '.join(columns)} FROM {table} "
            f"WHERE ({', '.join(key)}) IN (VALUES {values})"
        )

    def delete_by_key(self, table: str, key: Sequence[str]) -> str:
        where = " AND ".join(f"{c} = {self.mark}" for c in key)
        return f"DELETE FROM {table} WHERE {where}"
