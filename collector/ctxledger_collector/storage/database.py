"""Engine creation for SQLite (embedded default) and PostgreSQL, and the one rule that
tells an outage from a refusal."""

from __future__ import annotations

import gc
import time
from typing import Any, Literal

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.pool import ConnectionPoolEntry

SqliteSynchronous = Literal["FULL", "NORMAL"]

# SQLite result codes after which a connection must not be used again: it may have been
# opened read-only (the file was not writable then: SQLite falls back silently and stays
# so), or it met a full disk or an I/O error. A fresh connection sees the file as it is.
# (Primary result codes; the sqlite3 module has the names but its stubs do not.)
_SQLITE_POISONING_CODES = frozenset(
    {
        8,  # SQLITE_READONLY
        10,  # SQLITE_IOERR
        11,  # SQLITE_CORRUPT
        13,  # SQLITE_FULL
        14,  # SQLITE_CANTOPEN
        26,  # SQLITE_NOTADB
    }
)


def is_storage_outage(error: BaseException) -> bool:
    """Whether a failed write means the database is out of reach (answer 503 and let the
    exporter retry) rather than that it refused the data (reject the spans it refused).

    A connection SQLAlchemy invalidated counts as an outage whatever the DBAPI error's
    class: SQLite, for one, reports a closed database as a ``ProgrammingError``.
    """
    if isinstance(error, (OperationalError, InterfaceError)):
        return True
    return isinstance(error, DBAPIError) and error.connection_invalidated


def poisons_sqlite_connection(error: BaseException | None) -> bool:
    """Whether a SQLite error leaves its connection unusable for writes for good."""
    primary = getattr(error, "sqlite_errorcode", None)
    return primary is not None and (primary & 0xFF) in _SQLITE_POISONING_CODES


class _ReopenAfterFault:
    """Close every SQLite connection of the engine once one of them met a poisoning
    error, so the next one opens the file and its WAL index afresh.

    Dropping the failed connection is not enough: SQLite shares one WAL index (the
    ``-shm`` mapping) among all connections of a process to a file, and a connection
    opened while the file was read-only maps it read-only for every connection that
    opens while any of them lives. So the idle connections are closed at once
    (``dispose``) and those in use as they come back (the checkin event). A connection
    that failed may still be referenced from a cycle (an exception's traceback holding
    its cursor), which keeps SQLite from closing it: so the first connect after a fault
    collects garbage first."""

    _OPENED_AT = "ctxledger_opened_at"

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._fault_at = -float("inf")
        self._collect_before_connect = False

    def opened(self, record: ConnectionPoolEntry) -> None:
        record.info[self._OPENED_AT] = time.monotonic()

    def fault_seen(self) -> None:
        self._fault_at = time.monotonic()
        self._collect_before_connect = True
        self._engine.dispose()

    def connecting(self, *_args: Any) -> None:
        if self._collect_before_connect:
            self._collect_before_connect = False
            gc.collect()

    def checked_in(self, dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        opened_at = record.info.get(self._OPENED_AT, -float("inf"))
        if dbapi_connection is not None and opened_at <= self._fault_at:
            record.invalidate()


def make_engine(url: str, sqlite_synchronous: SqliteSynchronous = "FULL", **kwargs: Any) -> Engine:
    """An engine tuned for the dialect: SQLite gets WAL, a busy timeout, immediate write
    transactions (so concurrent writers queue instead of failing) and ``synchronous``
    FULL by default (a commit is on disk before it returns, so a 200 survives power
    loss); PostgreSQL a pre-pinged pool. Once a SQLite connection met a read-only file,
    a full disk or an I/O error, every connection of the engine is closed, so the next
    write opens the file afresh (:class:`_ReopenAfterFault`)."""
    if url.startswith("sqlite"):
        if sqlite_synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"sqlite synchronous must be FULL or NORMAL, not {sqlite_synchronous}")
        engine = create_engine(
            url, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs
        )

        reopen = _ReopenAfterFault(engine)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
            reopen.opened(record)
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA synchronous={sqlite_synchronous}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(connection: Any) -> None:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

        @event.listens_for(engine, "handle_error")
        def _on_error(context: ExceptionContext) -> None:
            if poisons_sqlite_connection(context.original_exception):
                context.is_disconnect = True  # the pool drops this connection
                reopen.fault_seen()

        event.listen(engine, "checkin", reopen.checked_in)
        event.listen(engine, "do_connect", reopen.connecting)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10, **kwargs)
