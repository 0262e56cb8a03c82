"""The reads a piece of collector code executes, and the plans the database makes for
them (SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from sqlalchemy import Connection, Engine, event


def reads_of(
    engine: Engine, run: Callable[[], object], tables: Collection[str]
) -> list[tuple[str, Any]]:
    """The SELECTs (and WITH queries) naming one of ``tables`` that ``run()`` executes on
    ``engine``, with their parameters."""
    seen: list[tuple[str, Any]] = []

    def note(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")) and any(
            table in statement for table in tables
        ):
            seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", note)
    try:
        run()
    finally:
        event.remove(engine, "before_cursor_execute", note)
    return seen


def plan_in(connection: Connection, statement: str, parameters: Any) -> str:
    """The plan of ``statement`` on ``connection`` (its settings apply), as text."""
    if connection.dialect.name == "sqlite":
        rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
        return "\n".join(str(row[-1]) for row in rows)
    rows = connection.exec_driver_sql(f"EXPLAIN {statement}", parameters)
    return "\n".join(str(row[0]) for row in rows)


def plan_of(engine: Engine, statement: str, parameters: Any) -> str:
    """The plan of ``statement`` on a connection of ``engine``."""
    with engine.connect() as connection:
        return plan_in(connection, statement, parameters)
