"""A fresh database per run: a SQLite file, or a PostgreSQL database created and dropped here."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from benchkit.collector_process import child_env, cli

DEFAULT_PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DATABASES = ("sqlite", "postgresql")


def pg_admin_url_from_env() -> str:
    return os.environ.get("CTXLEDGER_BENCH_PG_ADMIN_URL", DEFAULT_PG_ADMIN_URL)


@contextmanager
def fresh_sqlite(workdir: Path, name: str) -> Iterator[str]:
    path = workdir / f"{name}.db"
    try:
        yield f"sqlite:///{path}"
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


@contextmanager
def fresh_postgres_raw(admin_url: str) -> Iterator[str]:
    """An empty database; yields its libpq URL; dropped afterwards."""
    import psycopg

    name = f"ctxledger_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{admin_url.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def fresh_postgres(admin_url: str, settings: Mapping[str, str] | None = None) -> Iterator[str]:
    """A fresh database migrated with ``ctxledger db upgrade`` (run with the collector's
    ``settings``, which name e.g. the partitions' width); yields its SQLAlchemy URL."""
    with fresh_postgres_raw(admin_url) as libpq_url:
        url = libpq_url.replace("postgresql://", "postgresql+psycopg://", 1)
        migrate = subprocess.run(
            cli("db", "upgrade", "--database-url", url),
            env=child_env(url, settings),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if migrate.returncode != 0:
            raise RuntimeError(f"ctxledger db upgrade failed:\n{migrate.stderr[-3000:]}")
        yield url


@contextmanager
def fresh_database(kind: str, workdir: Path, name: str, pg_admin_url: str) -> Iterator[str]:
    """A fresh collector database of ``kind`` (``sqlite`` or ``postgresql``)."""
    if kind == "sqlite":
        with fresh_sqlite(workdir, name) as url:
            yield url
    elif kind == "postgresql":
        with fresh_postgres(pg_admin_url) as url:
            yield url
    else:
        raise ValueError(f"unknown database {kind!r}; known: {', '.join(DATABASES)}")
