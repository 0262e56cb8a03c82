"""Engine creation for SQLite (embedded default) and PostgreSQL, and the one rule that
tells an outage from a refusal."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError


def is_storage_outage(error: BaseException) -> bool:
    """Whether a failed write means the database is out of reach (answer 503 and let the
    exporter retry) rather than that it refused the data (reject the spans it refused).

    A connection SQLAlchemy invalidated counts as an outage whatever the DBAPI error's
    class: SQLite, for one, reports a closed database as a ``ProgrammingError``.
    """
    if isinstance(error, (OperationalError, InterfaceError)):
        return True
    return isinstance(error, DBAPIError) and error.connection_invalidated


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine tuned for the dialect: SQLite gets WAL, a busy timeout and immediate
    write transactions (so concurrent writers queue instead of failing); PostgreSQL a
    pre-pinged pool."""
    if url.startswith("sqlite"):
        engine = create_engine(
            url, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs
        )

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(connection: Any) -> None:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10, **kwargs)
