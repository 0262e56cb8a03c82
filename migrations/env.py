"""Alembic environment for the ctxledger collector database (SQLite and PostgreSQL).

Never imports project code: revisions describe the schema themselves, so an old
revision keeps working however ``tables.py`` changes later.

The URL comes from ``sqlalchemy.url`` in the Alembic config, which
``ctxledger_collector.storage.migrate`` sets programmatically (no ``alembic.ini`` needed).
A caller may instead hand over an open connection as ``config.attributes["connection"]``
(``migrate`` does, so SQLite gets the collector's engine settings).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, engine_from_config, pool

config = context.config

# No project metadata on purpose (see the docstring); autogenerate callers pass their own.
target_metadata = None


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError(
            "set sqlalchemy.url in the Alembic config (ctxledger_collector.storage.migrate)"
        )
    return url


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things; batch mode recreates the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_offline() -> None:
    """Emit the SQL to stdout instead of running it (``alembic upgrade --sql``)."""
    url = _url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=url.startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations on a given connection, or on a fresh engine from the URL."""
    given = config.attributes.get("connection")
    if given is not None:
        _configure(given)
        with context.begin_transaction():
            context.run_migrations()
        return

    connectable = engine_from_config(
        {"sqlalchemy.url": _url()}, prefix="sqlalchemy.", poolclass=pool.NullPool
    )
    try:
        with connectable.connect() as connection:
            _configure(connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        connectable.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
