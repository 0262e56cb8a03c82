"""Bytes the collector's database holds per span: tables and their indexes together.

SQLite: the file's pages after a checkpoint (``PRAGMA wal_checkpoint(TRUNCATE)``, so the
write-ahead log is folded in), from ``page_count`` × ``page_size``. PostgreSQL: the total
relation size (heap, TOAST and indexes) of every table in the database's public schema.
"""

from __future__ import annotations

import sqlite3

from sqlalchemy import create_engine, make_url, text


def stored_bytes(database_url: str) -> int:
    """Every byte of the collector's tables and indexes."""
    if database_url.startswith("sqlite"):
        path = make_url(database_url).database
        assert path, database_url
        connection = sqlite3.connect(path)
        try:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages = connection.execute("PRAGMA page_count").fetchone()[0]
            size = connection.execute("PRAGMA page_size").fetchone()[0]
            return int(pages) * int(size)
        finally:
            connection.close()
    engine = create_engine(database_url)
    try:
        with engine.connect() as pg_connection:
            total = pg_connection.scalar(
                text(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = 'public' AND c.relkind = 'r'"
                )
            )
    finally:
        engine.dispose()
    return int(total or 0)
